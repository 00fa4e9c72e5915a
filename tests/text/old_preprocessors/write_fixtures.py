"""Writes the fixtures of tests/text/test_old_preprocessors.py: tiny
`TextClassifier` `.keras` files whose preprocessors the code before the one
packing implementation saved (a `BertPreprocessor` and a RoBERTa-layout
`Preprocessor`), and what that code computed on fixed text pairs.

Run against a checkout of that code (commit 819ed0c), e.g.
`git archive 819ed0c | tar -x -C /tmp/old` and
`PYTHONPATH=/tmp/old python tests/text/old_preprocessors/write_fixtures.py
DIR`. The archives' members are kept as Keras wrote them; the archives are
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
from tfbert.text import ByteBpeTokenizer
from tfbert.text.packing_layout import ROBERTA_LAYOUT

# This checkout's tests/ (for the helper) goes after the older checkout on
# the path: that checkout's tfbert is the one to run.
sys.path.append(str(Path(__file__).resolve().parents[2]))
from keras_fixture_files import save_deflated  # noqa: E402

out = sys.argv[1]
keras.utils.set_random_seed(0)
config = tfbert.BertConfig(vocab_size=16, hidden_size=8, num_layers=1,
                           num_heads=2, intermediate_size=8,
                           max_position_embeddings=16)
wordpiece = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "fine",
             "dull", "film", "plot", "great", "awful", "work", "truly",
             "acting", "the"]
# Byte-level BPE: "Ġ" is the byte-level form of a space.
bpe = ["<s>", "<pad>", "</s>", "<unk>", "<mask>", "a", "f", "i", "l", "m",
       "n", "e", "Ġ", "Ġf", "fi", "Ġfi"]
merges = ["Ġ f", "f i", "Ġf i"]
texts_a = ["a fine film", "truly awful plot and dull acting", "", "a"]
texts_b = ["the film", "a", "great work truly", "fine fine fine fine fine"]

classifiers = {
    "wordpiece": tfbert.TextClassifier(
        tfbert.BertPreprocessor(tfbert.BertTokenizer(wordpiece), seq_length=8,
                                name="preprocessor"),
        tfbert.SequenceClassifier(tfbert.BertEncoder(config), 2,
                                  name="classifier"), is_pair=True),
    "roberta": tfbert.TextClassifier(
        tfbert.Preprocessor(
            ByteBpeTokenizer({t: i for i, t in enumerate(bpe)}, merges),
            ROBERTA_LAYOUT, seq_length=10, name="preprocessor"),
        tfbert.SequenceClassifier(tfbert.RobertaEncoder(dataclasses.replace(
            config, type_vocab_size=1, position_offset=2)), 2,
            name="classifier"), is_pair=True),
}


expected = {}
pairs = (tf.constant(texts_a), tf.constant(texts_b))
for name, model in classifiers.items():
    save_deflated(model, out, name)
    packed = model.preprocessor(pairs)
    single = model.preprocessor(pairs[0])
    expected[name] = {
        "registered_name": keras.saving.get_registered_name(
            type(model.preprocessor)),
        "pairs": {k: v.numpy().tolist() for k, v in packed.items()},
        "single": {k: v.numpy().tolist() for k, v in single.items()},
        "logits": np.asarray(model({"text_a": pairs[0],
                                    "text_b": pairs[1]})).tolist()}
json.dump({"texts_a": texts_a, "texts_b": texts_b, "outputs": expected},
          open(os.path.join(out, "outputs.json"), "w"), indent=1)
