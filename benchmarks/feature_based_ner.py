"""The BERT paper's feature-based CoNLL-2003 comparison, small: a linear
tagger (scikit-learn logistic regression) on frozen encoder features of each
word's first piece, last layer vs the last four layers concatenated.

    python -m benchmarks.feature_based_ner --num_train=2000

Features come from `tfbert.FeatureExtractor` (layers -1..-4 read once) on
the first `--num_train` sentences of conll2003/train.txt; the tagger is
scored with seqeval's entity F1 on valid.txt (all of it by default). Words
cut off by `--max_seq_length`, or with no pieces, are tagged O. Prints one
JSON line per feature set.
"""

import json
import os
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


if __name__ == "__main__":
    app.run(main)
