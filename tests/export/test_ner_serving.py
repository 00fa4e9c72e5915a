"""The NER export against the `tasks.ner` Python pipeline (words, windows,
decoding, stitching) on the same text."""

import json

import numpy as np
import pytest
import tensorflow as tf

from tfbert.data.ner_alignment import (convert_to_features, pad_batch,
                                       stitch_predictions)
from tfbert.export import (RequestLimits, export_saved_model,
                           unservable_ops)
from tfbert.export.ner_serving import NerServingModule
from tfbert.metrics.ner import get_entities
from tfbert.models import BertTokenClassifier

from tests.conftest import SHOW_ALL

from .conftest import NER_LABELS as LABELS
from .conftest import tiny_encoder

TEXTS = ["John Smith lives in Paris, France.",
         "Ångström   met  Zoë at the U.N. yesterday!",
         "x",
         "",
         "New York's mayor spoke to Angela Merkel and Emmanuel Macron today."]

# Answers `TEXTS` with each export, and shows each with saved_model_cli.
LOAD_AND_CALL = SHOW_ALL + """
import json, sys
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the tokenizer ops)
texts = tf.constant(json.loads(sys.argv[1]))
outs = {}
for path in sys.argv[2:]:
    model = tf.saved_model.load(path)
    out = model.signatures["serving_default"](text=texts)
    outs[path] = {"outputs": {k: v.numpy().tolist() for k, v in out.items()},
                  "saved_model_cli": show_all(path)}
print(json.dumps(outs, default=lambda b: b.decode("utf-8")))
"""


def _model(tokenizer, use_crf, labels=LABELS):
    model = BertTokenClassifier(tiny_encoder(tokenizer), len(labels),
                                use_crf=use_crf, labels=labels)
    rng = np.random.default_rng(0)
    kernel = model.head.dense.kernel
    kernel.assign(rng.normal(scale=2.0, size=kernel.shape).astype("float32"))
    if use_crf:
        model.crf.transitions.assign(
            rng.normal(size=(len(labels),) * 2).astype("float32"))
    return model


def _python_pipeline(model, tokenizer, text, max_seq_length, labels=LABELS):
    """What `tasks.ner` does for one text: words with their character spans,
    windowed features, decoding, stitching; plus each word's softmax
    probability of its tag in the window it was taken from."""
    words, starts, ends = (
        t[0].numpy() for t in tokenizer.split_words_with_offsets([text]))
    encoded = text.encode("utf-8")
    spans = [(len(encoded[:a].decode("utf-8")),
              len(encoded[:b].decode("utf-8"))) for a, b in zip(starts, ends)]
    words = [w.decode("utf-8") for w in words]
    if not words:
        return [], [], [], []
    features = convert_to_features([words], None, tokenizer, max_seq_length)
    ids = pad_batch(features.input_word_ids, 0)
    logits = model({"input_word_ids": ids,
                    "input_mask": (ids > 0).astype(np.int32),
                    "input_type_ids": np.zeros_like(ids)})
    tags = model.decode(logits, pad_batch(features.word_index, -1) >= 0)
    probabilities = tf.nn.softmax(logits, axis=-1).numpy()
    chosen = np.take_along_axis(probabilities,
                                np.maximum(tags.numpy(), 0)[..., None], -1)
    word_tags = [labels[t]
                 for t in stitch_predictions(features, tags.numpy())[0]]
    word_scores = stitch_predictions(features, chosen[..., 0])[0]
    return words, spans, word_tags, word_scores


BIOES_LABELS = ["O", "B-LOC", "I-LOC", "E-LOC", "S-LOC", "B-PER", "I-PER",
                "E-PER", "S-PER"]
POS_LABELS = ["DT", "IN", "NN", "NNP", "VBZ", "."]


@pytest.fixture(scope="module")
def fresh_exports(tokenizer, tmp_path_factory, run_fresh_python):
    """name -> (model, export path, the export's `serving_default` answer to
    `TEXTS` in a fresh process, what `saved_model_cli show --all` printed of
    it there): the softmax and CRF exports with BIO labels and the BIOES and
    plain-tag exports. One fresh process (importing only tensorflow and
    tensorflow_text) loads, calls and shows all four exports."""
    base = tmp_path_factory.mktemp("ner")
    built = {}
    for name, use_crf, labels, scheme in (
            ("crf", True, LABELS, None), ("softmax", False, LABELS, None),
            ("bioes", False, BIOES_LABELS, "bioes"),
            ("plain", False, POS_LABELS, "plain")):
        model = _model(tokenizer, use_crf, labels)
        options = {} if scheme is None else {"scheme": scheme}
        module = NerServingModule(model, tokenizer, labels, max_seq_length=64,
                                  **options)
        built[name] = model, export_saved_model(module, str(base / name))
    outs = run_fresh_python(LOAD_AND_CALL, json.dumps(TEXTS),
                            *(path for _, path in built.values()))
    return {name: (model, path, outs[path]["outputs"],
                   outs[path]["saved_model_cli"])
            for name, (model, path) in built.items()}


@pytest.mark.slow
@pytest.mark.parametrize("use_crf", [False, True])
def test_exported_model_tags_like_python_in_a_fresh_process(
        tokenizer, use_crf, fresh_exports):
    model, path, out, cli = fresh_exports["crf" if use_crf else "softmax"]
    assert unservable_ops(path) == []

    found_entities = 0
    for i, text in enumerate(TEXTS):
        words, spans, tags, scores = _python_pipeline(model, tokenizer, text,
                                                      64)
        n = out["num_words"][i]
        assert out["word_texts"][i][:n] == words
        assert out["word_labels"][i][:n] == tags
        assert list(zip(out["word_starts"][i][:n],
                        out["word_ends"][i][:n])) == spans
        entities = [(t, spans[a][0], spans[b][1], np.mean(scores[a:b + 1]))
                    for t, a, b in get_entities(tags)]
        k = out["num_entities"][i]
        assert len(entities) == k
        for j, (entity_type, start, end, score) in enumerate(entities):
            assert out["entity_types"][i][j] == entity_type
            assert (out["entity_starts"][i][j], out["entity_ends"][i][j]) == (
                start, end)
            assert out["entity_texts"][i][j] == text[start:end]
            assert out["entity_scores"][i][j] == pytest.approx(score,
                                                               abs=1e-5)
        assert all(t == "" for t in out["entity_types"][i][k:])
        found_entities += k
    assert found_entities >= 3  # the checks above were not vacuous

    assert cli["returncode"] == 0, cli["stderr"][-2000:]
    for name in ("serving_default", "serve_token_ids", "text", "word_labels",
                 "entity_scores", "logits", "input_word_ids"):
        assert name in cli["stdout"]


@pytest.mark.slow
@pytest.mark.parametrize("scheme, labels", [("bioes", BIOES_LABELS),
                                            ("plain", POS_LABELS)])
def test_bioes_and_plain_exports_in_a_fresh_process(
        tokenizer, fresh_exports, scheme, labels):
    """BIOES: entities are the strictly well-formed ones, as `tasks.ner`
    scores them; plain tags: a tag and its probability per word, no
    entity outputs."""
    model, _, out, _ = fresh_exports[scheme]
    if scheme == "plain":
        assert not any(name.startswith("entity_") for name in out)
    found, dropped = 0, 0
    for i, text in enumerate(TEXTS):
        words, spans, tags, scores = _python_pipeline(model, tokenizer, text,
                                                      64, labels)
        n = out["num_words"][i]
        assert out["word_texts"][i][:n] == words
        assert out["word_labels"][i][:n] == tags
        np.testing.assert_allclose(out["word_scores"][i][:n], scores,
                                   atol=1e-5)
        if scheme == "plain":
            continue
        entities = [(t, spans[a][0], spans[b][1])
                    for t, a, b in get_entities(tags, strict_bioes=True)]
        k = out["num_entities"][i]
        assert list(zip(out["entity_types"][i][:k], out["entity_starts"][i][:k],
                        out["entity_ends"][i][:k])) == entities
        found += k
        dropped += len(get_entities(tags)) - k
    if scheme == "bioes":
        assert found >= 1 and dropped >= 1  # both kinds of chunks were seen


@pytest.mark.parametrize("use_crf", [False, True])
@pytest.mark.slow
def test_every_word_of_a_long_text_is_tagged_as_tasks_ner_evaluates(
        tokenizer, shared_data_dir, use_crf):
    words = []
    with open(shared_data_dir / "conll2003" / "valid.txt",
              encoding="utf-8") as f:
        for line in f:
            if line.strip() and not line.startswith("-DOCSTART-"):
                words.append(line.split()[0])
            if len(words) == 2000:
                break
    text = " ".join(words)
    model = _model(tokenizer, use_crf)
    module = NerServingModule(model, tokenizer, LABELS, max_seq_length=24)
    out = module.signatures(limits=RequestLimits(
        max_text_chars=10**6, max_batch_chars=10**6, max_windows=10**6))[
            "serving_default"](text=tf.constant([text, "Short one."]))

    expected_words, _, tags, _ = _python_pipeline(model, tokenizer, text, 24)
    assert len(expected_words) >= 2000
    n = int(out["num_words"][0])
    assert n == len(expected_words)
    assert [t.decode() for t in out["word_labels"][0][:n].numpy()] == tags
    assert len(set(tags)) > 1


def test_words_come_from_the_tokenizers_pre_tokenizer(serving_modules):
    serve = serving_modules["ner"].signatures()["serving_default"]
    # CJK ideographs are words of their own; a form feed is a control
    # character BERT deletes (joining its neighbours), not a space.
    out = serve(text=tf.constant(["東京 is big", "a\x0cb c"]))
    words = [[w.decode() for w in row[:n]] for row, n in zip(
        out["word_texts"].numpy(), out["num_words"].numpy())]
    assert words == [["東", "京", "is", "big"], ["a\x0cb", "c"]]
    assert out["word_starts"].numpy().tolist() == [[0, 1, 3, 6], [0, 4, 0, 0]]
