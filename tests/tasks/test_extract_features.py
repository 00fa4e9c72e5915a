"""`tfbert-extract-features` (`python -m tasks.extract_features`): Google
BERT's JSONL layout and the pooled `.npy`, valued as HF computes the real
all-MiniLM-L6-v2's hidden states."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch
import transformers

from tests.conftest import REPO_ROOT
from tfbert.tasks.extract_features import ExtractionConfig, extract


@pytest.fixture(scope="module")
def input_file(tmp_path_factory, shared_data_dir):
    """Real SST-2 dev sentences, the third line a `A ||| B` pair."""
    with open(shared_data_dir / "glue" / "SST-2" / "dev.tsv",
              encoding="utf-8") as f:
        sentences = [line.split("\t")[0] for line in f.read().splitlines()[1:]]
    lines = sentences[:2] + [f"{sentences[2]} ||| {sentences[3]}"] + [
        sentences[4]]
    path = tmp_path_factory.mktemp("texts") / "input.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path, [sentences[0], sentences[1], (sentences[2], sentences[3]),
                  sentences[4]]


@pytest.fixture(scope="module")
def hf_reference(minilm_dir, input_file):
    """HF's tokens and `hidden_states` (embeddings dropped), per text."""
    tokenizer = transformers.AutoTokenizer.from_pretrained(minilm_dir)
    model = transformers.AutoModel.from_pretrained(minilm_dir).eval()
    results = []
    for text in input_file[1]:
        pair = text if isinstance(text, tuple) else (text,)
        encoding = tokenizer(*pair, return_tensors="pt")
        with torch.no_grad():
            hidden = model(**encoding, output_hidden_states=True).hidden_states
        results.append((tokenizer.convert_ids_to_tokens(
            encoding["input_ids"][0]),
            np.stack([h[0].numpy() for h in hidden[1:]])))
    return results


def test_jsonl_is_google_berts_layout_with_hf_values(input_file, hf_reference,
                                                     tmp_path):
    output = tmp_path / "features.jsonl"
    count = extract(ExtractionConfig(
        input_file=str(input_file[0]), output_file=str(output),
        layers=(-1, -2, -3, -4), batch_size=3), verbose=0)
    lines = output.read_text(encoding="utf-8").splitlines()
    assert count == len(lines) == 4
    for i, (line, (hf_tokens, blocks)) in enumerate(zip(lines, hf_reference)):
        record = json.loads(line)
        assert sorted(record) == ["features", "linex_index"]
        assert record["linex_index"] == i
        assert [f["token"] for f in record["features"]] == hf_tokens
        for position, feature in enumerate(record["features"]):
            assert sorted(feature) == ["layers", "token"]
            assert [layer["index"] for layer in feature["layers"]] == [
                -1, -2, -3, -4]
            for layer in feature["layers"]:
                assert sorted(layer) == ["index", "values"]
                assert len(layer["values"]) == 384
                np.testing.assert_allclose(
                    layer["values"], blocks[layer["index"]][position],
                    atol=1e-4)
    assert hf_reference[2][0].count("[SEP]") == 2  # the pair line
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".")]


def test_npy_holds_pooled_combined_layers(input_file, hf_reference, tmp_path):
    output = tmp_path / "features.npy"
    extract(ExtractionConfig(
        input_file=str(input_file[0]), output_file=str(output),
        layers=(-1, -2), pooling="mean", layer_combination="concat",
        batch_size=2), verbose=0)
    got = np.load(output)
    expected = np.stack([np.concatenate([blocks[-1].mean(0),
                                         blocks[-2].mean(0)])
                         for _, blocks in hf_reference])
    assert got.dtype == np.float32 and got.shape == (4, 768)
    np.testing.assert_allclose(got, expected, atol=1e-4)
    assert sorted(os.listdir(tmp_path)) == ["features.npy"]


@pytest.mark.slow
def test_command_line_reads_a_jsonl_column(tmp_path):
    rows = [{"sentence": "A man is eating.", "id": 1},
            {"sentence": "Someone eats food.", "id": 2}]
    source = tmp_path / "input.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = subprocess.run(
        [sys.executable, "-m", "tasks.extract_features",
         f"--input_file={source}", f"--output_file={tmp_path / 'out.npy'}",
         "--text_column=sentence", "--pooling=cls", "--layers=-1",
         "--layer_combination=sum"],
        cwd=REPO_ROOT, env=dict(os.environ, PYTHONPATH=str(REPO_ROOT)),
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert np.load(tmp_path / "out.npy").shape == (2, 384)
