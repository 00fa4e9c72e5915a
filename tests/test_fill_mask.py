"""`MaskFiller` against HF's fill-mask pipeline on every family's masked-LM
pretraining model (random weights, the zoo's tokenizers), and its export."""

import json
import shutil

import numpy as np
import pytest
import tensorflow as tf
import transformers

from tests.models.test_encoder_families import _randomize
from tfbert.export import export_for_serving
from tfbert.fill_mask import MaskFiller

# Each family's HF pretraining model, as `tfbert-pretrain` saves it.
PRETRAINING_CLASSES = {
    "bert": transformers.BertForPreTraining,
    "distilbert": transformers.DistilBertForMaskedLM,
    "electra": transformers.ElectraForMaskedLM,
    "roberta": transformers.RobertaForMaskedLM,
    "albert": transformers.AlbertForPreTraining,
}
TEXTS = ["The capital of France is {mask}.",
         "{mask} was born in a small town near the river.",
         "He plays the {mask} in a {mask} band.",
         "No mask in this one."]
TOP_K = 4


def pretraining_checkpoint(zoo_dir, family, directory):
    """The zoo checkpoint's tokenizer and config with a randomized HF
    pretraining model of the family (LayerNorms and biases too)."""
    directory.mkdir()
    for path in zoo_dir.iterdir():
        if "token" in path.name or path.suffix in (".txt", ".model",
                                                    ".json"):
            if path.name not in ("config.json", "model.safetensors"):
                shutil.copy(path, directory / path.name)
    config = transformers.AutoConfig.from_pretrained(zoo_dir)
    model = _randomize(PRETRAINING_CLASSES[family](config), seed=1)
    model.save_pretrained(directory, safe_serialization=True)
    return directory


def _hf_fill_mask(directory, texts):
    """HF's pipeline: per text, per mask, [(token id, probability)]."""
    pipe = transformers.pipeline(
        "fill-mask", model=transformers.AutoModelForMaskedLM.from_pretrained(
            directory), tokenizer=transformers.AutoTokenizer.from_pretrained(
            directory), top_k=TOP_K, device="cpu")
    results = []
    for text in texts:
        if pipe.tokenizer.mask_token not in text:
            results.append([])
            continue
        out = pipe(text)
        per_mask = out if isinstance(out[0], list) else [out]
        results.append([[(r["token"], r["score"]) for r in mask]
                        for mask in per_mask])
    return results


# The three mask styles run by default; DistilBERT's and ELECTRA's
# WordPiece [MASK] is BERT's.
@pytest.mark.parametrize("family", [
    "albert", "bert", "roberta", pytest.param("distilbert",
                                              marks=pytest.mark.slow),
    pytest.param("electra", marks=pytest.mark.slow)])
def test_fill_mask_equals_hf_pipeline(family, zoo_checkpoints, tmp_path):
    directory = pretraining_checkpoint(zoo_checkpoints[family], family,
                                       tmp_path / family)
    filler = MaskFiller.from_pretrained(directory)
    assert filler.mask_token == ("<mask>" if family == "roberta"
                                 else "[MASK]")
    texts = [t.format(mask=filler.mask_token) for t in TEXTS]
    got = filler.fill_mask(texts, top_k=TOP_K, batch_size=3)
    expected = _hf_fill_mask(directory, texts)
    assert [len(masks) for masks in got] == [1, 1, 2, 0]
    for ours, theirs in zip(got, expected, strict=True):
        for mask, hf_mask in zip(ours, theirs, strict=True):
            assert [r["token_id"] for r in mask] == [i for i, _ in hf_mask]
            np.testing.assert_allclose([r["probability"] for r in mask],
                                       [p for _, p in hf_mask], atol=1e-5)
    # Probabilities that the test can tell apart from uniform ones.
    vocab_size = filler.preprocessor.tokenizer.vocab_size
    assert got[0][0][0]["probability"] > 5 / vocab_size


SERVE_FILL_MASK = """
import json, sys
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the tokenizer ops)
loaded = tf.saved_model.load(sys.argv[1])
out = loaded.signatures["serving_default"](text=tf.constant(json.loads(
    sys.argv[2])))
print(json.dumps({k: v.numpy().tolist() for k, v in out.items()},
                 default=lambda b: b.decode("utf-8")))
"""


@pytest.mark.slow
def test_export_serves_what_fill_mask_predicts(zoo_checkpoints, tmp_path,
                                               run_fresh_python):
    """RoBERTa's export (byte-level BPE, `<mask>`), loaded in a process
    with only tensorflow and tensorflow_text: what `fill_mask` says, its
    ops servable, its warmup requests answered."""
    from tests.export.conftest import replay_warmup
    from tfbert.export import check_serving_ops

    directory = pretraining_checkpoint(zoo_checkpoints["roberta"], "roberta",
                                       tmp_path / "roberta")
    filler = MaskFiller.from_pretrained(directory, seq_length=32)
    texts = [t.format(mask=filler.mask_token) for t in TEXTS]
    path = export_for_serving(filler, str(tmp_path / "export"), top_k=TOP_K)
    served = run_fresh_python(SERVE_FILL_MASK, path, json.dumps(texts))
    expected = filler.fill_mask(texts, top_k=TOP_K)
    assert served["num_masks"] == [1, 1, 2, 0]
    assert np.shape(served["probabilities"]) == (4, 2, TOP_K)
    for row, masks in enumerate(expected):
        for m in range(2):
            if m < len(masks):
                assert served["tokens"][row][m] == [r["token"]
                                                    for r in masks[m]]
                np.testing.assert_allclose(
                    served["probabilities"][row][m],
                    [r["probability"] for r in masks[m]], atol=1e-5)
            else:
                assert served["tokens"][row][m] == [""] * TOP_K
                assert served["probabilities"][row][m] == [0] * TOP_K
    check_serving_ops(path)
    assert sorted(replay_warmup(path, tf.saved_model.load(path).signatures)
                  ) == ["serve_token_ids", "serving_default"]
