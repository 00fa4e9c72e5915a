"""Fixtures for the TF Hub tests: tfbert's own exports, TF Model Garden's
exports of a small BERT, and a runner for tf_keras (Keras 2) code.

tensorflow-hub's `KerasLayer` and Model Garden are Keras 2 code, so they run
in a subprocess with TF_USE_LEGACY_KERAS=1; this process stays Keras 3.
"""

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parents[1]


def _run(args, timeout):
    env = dict(os.environ, TF_USE_LEGACY_KERAS="1", TF_CPP_MIN_LOG_LEVEL="2",
               PYTHONPATH=os.pathsep.join(
                   [str(REPO_ROOT), os.environ.get("PYTHONPATH", "")]))
    result = subprocess.run([sys.executable, *map(str, args)],
                            capture_output=True, text=True, timeout=timeout,
                            env=env, cwd=REPO_ROOT)
    assert result.returncode == 0, result.stderr[-4000:]
    return result.stdout


@pytest.fixture(scope="session")
def run_tf_keras():
    """Runs `python -c code *args` under tf_keras and returns the JSON value
    printed on its last stdout line."""
    def run(code, *args, timeout=400):
        stdout = _run(["-c", code, *args], timeout)
        return json.loads(stdout.strip().splitlines()[-1])
    return run


@pytest.fixture(scope="session")
def tfbert_hub(tmp_path_factory, tiny_checkpoint):
    """tfbert's TF Hub exports of the tiny encoder (with a random masked-LM
    head as `mlm`) and its preprocessor (seq_length 32), plus the models.

    Returns a dict: `encoder_dir`, `preprocessor_dir`, `encoder`,
    `pretrainer`, `tokenizer`.
    """
    import keras

    from tfbert import BertEncoder, BertTokenizer
    from tfbert.hub import export_encoder, export_preprocessor
    from tfbert.models import BertPretrainer

    keras.utils.set_random_seed(1)
    encoder = BertEncoder.from_pretrained(tiny_checkpoint)
    pretrainer = BertPretrainer(encoder)
    tokenizer = BertTokenizer.from_pretrained(tiny_checkpoint)
    root = tmp_path_factory.mktemp("tfbert_hub")
    export_encoder(encoder, tokenizer, root / "encoder", pretrainer=pretrainer)
    export_preprocessor(tokenizer, root / "preprocess", seq_length=32)
    return {"encoder_dir": root / "encoder",
            "preprocessor_dir": root / "preprocess", "encoder": encoder,
            "pretrainer": pretrainer, "tokenizer": tokenizer}


@pytest.fixture(scope="session")
def model_garden_hub(tmp_path_factory, minilm_dir):
    """TF Model Garden's exports of a small random BERT (real uncased
    vocabulary): `encoder`, `encoder_mlm` and `preprocess` (seq_length 64)
    SavedModel directories, by name."""
    root = tmp_path_factory.mktemp("model_garden_hub")
    _run([HERE / "model_garden_producer.py", minilm_dir / "vocab.txt", root],
         timeout=600)
    return {name: root / name
            for name in ("encoder", "encoder_mlm", "preprocess")}


def _tsv_columns(path, *columns):
    with open(path, encoding="utf-8-sig", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    return [[row[column] for row in rows] for column in columns]


@pytest.fixture(scope="session")
def sst2_sentences(shared_data_dir):
    """The 872 real sentences of SST-2 dev."""
    return _tsv_columns(shared_data_dir / "glue" / "SST-2" / "dev.tsv",
                        "sentence")[0]


@pytest.fixture(scope="session")
def mrpc_pairs(shared_data_dir):
    """The 408 real sentence pairs of MRPC dev, as two lists."""
    return _tsv_columns(shared_data_dir / "glue" / "MRPC" / "dev.tsv",
                        "#1 String", "#2 String")
