"""Writes the fixtures of tests/models/test_old_names.py: tiny `.keras`
files of every task model saved by the code before the rename, and the
outputs that code computes on fixed inputs.

Run against a checkout of that code (commit 8e7d1dd), e.g.
`git archive 8e7d1dd | tar -x -C /tmp/old` and
`PYTHONPATH=/tmp/old python tests/models/old_keras/write_fixtures.py DIR`.
The archives' members are kept as Keras wrote them; the archives are
re-written deflated to keep the fixtures small.
"""
import dataclasses
import json
import os
import sys
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

import tfbert
from tfbert.config import BertConfig

# This checkout's tests/ (for the helper) goes after the older checkout on
# the path: that checkout's tfbert is the one to run.
sys.path.append(str(Path(__file__).resolve().parents[2]))
from keras_fixture_files import save_deflated  # noqa: E402

out = sys.argv[1]
keras.utils.set_random_seed(0)
config = BertConfig(vocab_size=16, hidden_size=8, num_layers=1, num_heads=2,
                    intermediate_size=8, max_position_embeddings=8)
vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "fine", "dull",
         "film", "plot", "great", "awful", "work", "truly", "acting", "the"]
ids = np.array([[2, 5, 6, 8, 3, 0], [2, 13, 11, 9, 3, 0]], np.int32)
inputs = {"input_word_ids": ids, "input_mask": (ids > 0).astype(np.int32),
          "input_type_ids": np.zeros_like(ids)}
texts = ["a fine film", "truly awful plot"]


def encoder(**kw):
    return tfbert.BertEncoder(dataclasses.replace(config, **kw))


models = {
    "BertClassifier": tfbert.BertClassifier(encoder(), 3),
    "BertSpanLabeler": tfbert.BertSpanLabeler(encoder(use_pooler=False)),
    "BertTokenClassifier": tfbert.BertTokenClassifier(
        encoder(use_pooler=False), 4),
    "BertPretrainer": tfbert.BertPretrainer(encoder()),
}


expected = {}
for name, model in models.items():
    save_deflated(model, out, name)
    feed = dict(inputs)
    if name == "BertPretrainer":
        feed["masked_lm_positions"] = np.array([[1, 2], [2, 3]], np.int32)
    result = model(feed, training=False)
    if not isinstance(result, dict):
        result = {"output": result}
    expected[name] = {k: np.asarray(v).tolist() for k, v in result.items()}
text = tfbert.BertTextClassifier(
    tfbert.BertPreprocessor(tfbert.BertTokenizer(vocab, lowercase=True),
                            seq_length=8, name="preprocessor"),
    tfbert.BertClassifier(encoder(), 2, name="classifier"))
save_deflated(text, out, "BertTextClassifier")
expected["BertTextClassifier"] = {
    "output": np.asarray(text(tf.constant(texts))).tolist()}
json.dump({"inputs": {k: v.tolist() for k, v in inputs.items()},
           "masked_lm_positions": [[1, 2], [2, 3]], "texts": texts,
           "outputs": expected}, open(os.path.join(out, "outputs.json"), "w"),
          indent=1)
