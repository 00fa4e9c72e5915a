"""The BERT paper's feature-based CoNLL-2003 comparison, small: a linear
tagger (scikit-learn logistic regression) on frozen encoder features of each
word's first piece, last layer vs the last four layers concatenated, beside
fine-tuning the encoder on the same sentences.

    python -m benchmarks.feature_based_ner --num_train=2000

Features come from `tfbert.FeatureExtractor` (layers -1..-4 read once) on
the first `--num_train` sentences of conll2003/train.txt; the tagger is
scored with seqeval's entity F1 on valid.txt (all of it by default). Words
cut off by `--max_seq_length`, or with no pieces, are tagged O. The
fine-tuning row (`--finetune_epochs` > 0) runs `tfbert-ner` on the same
train and valid sentences (softmax head, batch 32, 10% warmup) and scores
its predictions.txt with seqeval too. Prints one JSON line per row.
"""

import argparse
import json
import os
import tempfile
import time

from absl import app, flags

FLAGS = flags.FLAGS

flags.DEFINE_string("data_dir", os.path.join(
    os.path.dirname(__file__), "..", "..", "shared", "data"),
    "Directory holding conll2003/{train,valid}.txt.")
flags.DEFINE_string("init_checkpoint", "minilm-l6-h384-uncased",
                    "Preset or checkpoint directory (WordPiece family).")
flags.DEFINE_integer("num_train", 2000, "Training sentences (the first N).")
flags.DEFINE_integer("num_valid", 0, "Valid sentences (0: all).")
flags.DEFINE_integer("max_seq_length", 128, "Longest packed input.")
flags.DEFINE_integer("batch_size", 64, "Sentences per encoder call.")
flags.DEFINE_float("C", 1.0, "Inverse regularization of the tagger.")
flags.DEFINE_float("finetune_epochs", 2.0,
                   "Epochs of the fine-tuning row (0: no such row).")
flags.DEFINE_float("learning_rate", 5e-5, "Fine-tuning's peak rate.")
flags.DEFINE_integer("seed", 42, "Fine-tuning's seed.")


def first_piece_features(extractor, sentences, batch_size):
    """`(features [words, 4, H], kept [words] bool)` over all words of
    `sentences` in order: the chosen layers at each word's first piece."""
    import numpy as np
    import tensorflow as tf

    tokenizer = extractor.preprocessor.tokenizer
    spec = tf.TensorSpec([None, None], tf.int32)
    layer_features = tf.function(extractor.layer_features, input_signature=[
        {"input_word_ids": spec, "input_mask": spec, "input_type_ids": spec}])
    features, kept = [], []
    for start in range(0, len(sentences), batch_size):
        words = tf.ragged.constant([s.words for s in
                                    sentences[start:start + batch_size]])
        pieces = tokenizer.tokenize_words(words)
        inputs = extractor.preprocessor.pack([pieces.merge_dims(1, 2)])
        layers = layer_features(inputs).numpy()
        counts = pieces.row_lengths(axis=2).to_list()
        for row, row_counts in enumerate(counts):
            firsts = 1 + np.cumsum([0] + row_counts[:-1])
            limit = int(inputs["input_mask"][row].numpy().sum()) - 1
            for first, count in zip(firsts, row_counts):
                ok = count > 0 and first < limit
                kept.append(ok)
                features.append(layers[row, first] if ok
                                else np.zeros(layers.shape[2:], np.float32))
    return np.stack(features), np.array(kept)


def read_predictions(path):
    """The predicted tags of `tfbert-ner`'s predictions.txt (`token gold
    predicted` lines, a blank line between sentences), per sentence."""
    sentences, current = [], []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                current.append(line.split()[-1])
            elif current:
                sentences.append(current)
                current = []
    return sentences + ([current] if current else [])


def fine_tuned_f1(train, valid, workdir):
    """`(seqeval F1, wall seconds)` of `tfbert-ner` trained on `train` and
    evaluated on `valid` (tfbert.data.conll sentences)."""
    from seqeval.metrics import f1_score

    from benchmarks.ner import run_tfbert, write_conll

    paths = {name: os.path.join(workdir, f"{name}.txt")
             for name in ("train", "valid")}
    write_conll(train, paths["train"])
    write_conll(valid, paths["valid"])
    model_dir = os.path.join(workdir, "model")
    wall, _ = run_tfbert(
        paths["train"], argparse.Namespace(
            learning_rate=FLAGS.learning_rate, epochs=FLAGS.finetune_epochs,
            seed=FLAGS.seed), use_crf=False, eval_file=paths["valid"],
        model_dir=model_dir)
    predicted = read_predictions(os.path.join(model_dir, "predictions.txt"))
    return f1_score([s.tags for s in valid], predicted), wall


def main(argv):
    del argv
    import numpy as np
    from seqeval.metrics import f1_score
    from sklearn.linear_model import LogisticRegression

    from tfbert.data.conll import read_conll
    from tfbert.feature_extractor import FeatureExtractor

    folder = os.path.join(FLAGS.data_dir, "conll2003")
    train = read_conll(os.path.join(folder, "train.txt"))[:FLAGS.num_train]
    valid = read_conll(os.path.join(folder, "valid.txt"))
    valid = valid[:FLAGS.num_valid or None]
    extractor = FeatureExtractor.from_pretrained(
        FLAGS.init_checkpoint, seq_length=FLAGS.max_seq_length,
        layers=(-1, -2, -3, -4))
    start = time.time()
    data = {name: first_piece_features(extractor, sentences, FLAGS.batch_size)
            for name, sentences in (("train", train), ("valid", valid))}
    extract_s = time.time() - start
    train_tags = np.array([t for s in train for t in s.tags])
    for name, select in (("last layer", slice(0, 1)),
                         ("last four concatenated", slice(0, 4))):
        def matrix(split):
            values, _ = data[split]
            return values[:, select].reshape(len(values), -1)
        start = time.time()
        _, kept = data["train"]
        tagger = LogisticRegression(C=FLAGS.C, max_iter=1000).fit(
            matrix("train")[kept], train_tags[kept])
        _, kept = data["valid"]
        predicted = np.where(kept, tagger.predict(matrix("valid")), "O")
        rows, position = [], 0
        for sentence in valid:
            end = position + len(sentence.words)
            rows.append(list(predicted[position:end]))
            position = end
        print(json.dumps({
            "features": name, "num_train": len(train),
            "num_valid": len(valid),
            "valid_f1": round(float(f1_score([s.tags for s in valid], rows)),
                              4),
            "extract_s": round(extract_s, 1),
            "fit_s": round(time.time() - start, 1)}), flush=True)
    if FLAGS.finetune_epochs:
        del extractor, data
        f1, wall = fine_tuned_f1(train, valid, tempfile.mkdtemp(
            prefix="feature-based-ner-"))
        print(json.dumps({
            "features": "fine-tuning (tfbert-ner)", "num_train": len(train),
            "num_valid": len(valid), "epochs": FLAGS.finetune_epochs,
            "learning_rate": FLAGS.learning_rate,
            "valid_f1": round(float(f1), 4), "wall_s": round(wall, 1)}),
            flush=True)


if __name__ == "__main__":
    app.run(main)
