"""The raw-text NER signature against Python decoding, in a fresh process."""

import json
import re

import numpy as np
import pytest

from tfbert.config import BertConfig
from tfbert.data.ner_alignment import convert_to_features, pad_batch
from tfbert.export import export_saved_model, unservable_ops
from tfbert.export.ner_serving import NerServingModule
from tfbert.metrics.ner import get_entities
from tfbert.models import BertEncoder, BertTokenClassifier
from tfbert.text import BertTokenizer

LABELS = ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]
TEXTS = ["John Smith lives in Paris, France.",
         "Ångström   met  Zoë at the U.N. yesterday!",
         "x",
         "New York's mayor spoke to Angela Merkel and Emmanuel Macron today."]

LOAD_AND_CALL = """
import json, sys
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the tokenizer ops)
model = tf.saved_model.load(sys.argv[1])
out = model.signatures["serving_default"](text=tf.constant(json.loads(sys.argv[2])))
print(json.dumps({k: v.numpy().tolist() for k, v in out.items()},
                 default=lambda b: b.decode("utf-8")))
"""


def _python_decoding(model, tokenizer, text):
    """Words by the pre-tokenizer rule (ASCII-safe regex), Python windows
    and decoding, entities by tfbert.metrics.ner."""
    matches = list(re.finditer(r"[^\W_]+|[^\w\s]|_", text))
    words = [m.group() for m in matches]
    features = convert_to_features([words], None, tokenizer, 64)
    assert len(features) == 1
    ids = pad_batch(features.input_word_ids, 0)
    logits = model({"input_word_ids": ids, "input_mask": np.ones_like(ids),
                    "input_type_ids": np.zeros_like(ids)})
    tags = model.decode(logits, features.word_index[0][None] >= 0).numpy()[0]
    tags = [LABELS[t] for t in tags[features.word_index[0] >= 0]]
    entities = [(t, matches[a].start(), matches[b].end())
                for t, a, b in get_entities(tags)]
    return words, tags, entities


@pytest.mark.parametrize("use_crf", [False, True])
def test_raw_text_signature_matches_python(tmp_path, minilm_dir, use_crf,
                                           run_fresh_python):
    tokenizer = BertTokenizer.from_pretrained(minilm_dir)
    encoder = BertEncoder(BertConfig(
        vocab_size=tokenizer.vocab_size, hidden_size=32, num_layers=2,
        num_heads=2, intermediate_size=64))
    model = BertTokenClassifier(encoder, len(LABELS), use_crf=use_crf,
                                labels=LABELS)
    rng = np.random.default_rng(0)
    kernel = model.head.dense.kernel
    kernel.assign(rng.normal(scale=2.0, size=kernel.shape).astype("float32"))
    if use_crf:
        model.crf.transitions.assign(
            rng.normal(size=(5, 5)).astype("float32"))
    module = NerServingModule(model, tokenizer, LABELS, max_seq_length=64)
    path = export_saved_model(module, str(tmp_path / "ner"),
                              module.signatures())
    assert unservable_ops(path) == []

    out = run_fresh_python(LOAD_AND_CALL, path, json.dumps(TEXTS))

    found_entities = 0
    for i, text in enumerate(TEXTS):
        words, tags, entities = _python_decoding(model, tokenizer, text)
        n = out["num_words"][i]
        assert out["word_texts"][i][:n] == words
        assert out["word_labels"][i][:n] == tags
        for start, end, word in zip(out["word_starts"][i][:n],
                                    out["word_ends"][i][:n], words):
            assert text[start:end] == word
        k = out["num_entities"][i]
        served = list(zip(out["entity_types"][i][:k],
                          out["entity_starts"][i][:k],
                          out["entity_ends"][i][:k]))
        assert served == entities
        for (_, start, end), entity_text, score in zip(
                served, out["entity_texts"][i][:k],
                out["entity_scores"][i][:k]):
            assert text[start:end] == entity_text
            assert 0.0 < score <= 1.0
        assert all(t == "" for t in out["entity_types"][i][k:])
        found_entities += k
    assert found_entities >= 3  # the check above was not vacuous


def test_long_text_is_truncated_to_the_window(tmp_path, minilm_dir):
    tokenizer = BertTokenizer.from_pretrained(minilm_dir)
    encoder = BertEncoder(BertConfig(
        vocab_size=tokenizer.vocab_size, hidden_size=16, num_layers=1,
        num_heads=2, intermediate_size=32))
    model = BertTokenClassifier(encoder, len(LABELS), labels=LABELS)
    module = NerServingModule(model, tokenizer, LABELS, max_seq_length=8)
    out = module.tag_text(np.array(["a b c d e f g h i j", "a"]))
    assert list(out["num_words"].numpy()) == [6, 1]
    assert out["word_labels"].shape == (2, 6)
