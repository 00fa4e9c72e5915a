"""The feature-based recipe on SST-2: frozen encoder features + a logistic
regression (scikit-learn), as in the DistilBERT-features tutorial.

    python -m benchmarks.feature_based --num_train=2000

Features come from `tfbert.FeatureExtractor` on the first `--num_train`
sentences of SST-2 train.tsv (the frozen encoder is never trained); a
`LogisticRegression` is fit on them and scored on all of dev.tsv. Each
configuration in `--configs` (`pooling:layer_combination:layers`, layers
joined by `/`) is one run; prints one JSON line per configuration.
"""

import json
import os
import time

from absl import app, flags

FLAGS = flags.FLAGS

flags.DEFINE_string("data_dir", os.path.join(
    os.path.dirname(__file__), "..", "..", "shared", "data"),
    "Directory holding glue/SST-2/{train,dev}.tsv.")
flags.DEFINE_string("init_checkpoint", "minilm-l6-h384-uncased",
                    "Preset or checkpoint directory of any family.")
flags.DEFINE_integer("num_train", 2000, "Training sentences (the first N).")
flags.DEFINE_integer("max_seq_length", 128, "Longest packed input.")
flags.DEFINE_integer("batch_size", 64, "Sentences per encoder call.")
flags.DEFINE_float("C", 1.0, "Inverse regularization of the regression.")
flags.DEFINE_list("configs", ["cls:concat:-1", "mean:concat:-1",
                              "mean:concat:-1/-2/-3/-4"],
                  "pooling:layer_combination:layers per run.")


def main(argv):
    del argv
    import numpy as np
    from sklearn.linear_model import LogisticRegression

    from tfbert.data import glue
    from tfbert.feature_extractor import FeatureExtractor

    task = glue.get_task("sst2")
    train = glue.read_examples(glue.split_path(
        os.path.join(FLAGS.data_dir, "glue"), task, "train"), task)
    dev = glue.read_examples(glue.split_path(
        os.path.join(FLAGS.data_dir, "glue"), task, "dev"), task)
    train = train[:FLAGS.num_train]
    labels = {name: np.array([int(e.label) for e in examples])
              for name, examples in (("train", train), ("dev", dev))}
    base = FeatureExtractor.from_pretrained(FLAGS.init_checkpoint,
                                            seq_length=FLAGS.max_seq_length)
    for config in FLAGS.configs:
        pooling, combination, layers = config.split(":")
        extractor = FeatureExtractor(
            base.encoder, base.preprocessor,
            layers=[int(i) for i in layers.split("/")], pooling=pooling,
            layer_combination=combination)
        start = time.time()
        features = {name: extractor.pooled_features(
            [e.text_a for e in examples], batch_size=FLAGS.batch_size,
            verbose=0) for name, examples in (("train", train), ("dev", dev))}
        extract_s = time.time() - start
        start = time.time()
        regression = LogisticRegression(C=FLAGS.C, max_iter=2000).fit(
            features["train"], labels["train"])
        print(json.dumps({
            "config": config, "num_train": len(train), "num_dev": len(dev),
            "feature_size": extractor.feature_size,
            "dev_accuracy": round(float(regression.score(
                features["dev"], labels["dev"])), 4),
            "train_accuracy": round(float(regression.score(
                features["train"], labels["train"])), 4),
            "extract_s": round(extract_s, 1),
            "fit_s": round(time.time() - start, 1)}), flush=True)


if __name__ == "__main__":
    app.run(main)
