"""best.weights.h5 / best_metrics.json: written whole or not at all, and
read back with errors that name the file."""

import errno
import json
import os

import keras
import numpy as np
import pytest

from tfbert import BertConfig, BertEncoder
from tfbert.models import BertClassifier
from tfbert.training import best_model


def _model(seed):
    keras.utils.set_random_seed(seed)
    model = BertClassifier(BertEncoder(BertConfig(
        vocab_size=32, hidden_size=8, num_layers=1, num_heads=2,
        intermediate_size=16)), 2)
    ids = np.ones((1, 4), "int32")
    model({"input_word_ids": ids, "input_mask": ids,
           "input_type_ids": np.zeros_like(ids)})
    return model


def test_a_full_disk_keeps_the_previous_best(tmp_path, monkeypatch):
    best_model.save_best(_model(1), tmp_path, {"accuracy": 0.5})
    weights = (tmp_path / "best.weights.h5").read_bytes()

    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError, match="best.weights.h5: the disk is full"):
        best_model.save_best(_model(2), tmp_path, {"accuracy": 0.9})
    monkeypatch.undo()
    assert (tmp_path / "best.weights.h5").read_bytes() == weights
    assert best_model.read_best_metrics(tmp_path) == {"accuracy": 0.5}
    assert sorted(os.listdir(tmp_path)) == ["best.weights.h5",
                                            "best_metrics.json"]


def test_saved_weights_load_back_exactly(tmp_path):
    source, target = _model(1), _model(2)
    best_model.save_best(source, tmp_path, {"f1": 1.0})
    assert best_model.restore_best_weights(target, tmp_path)
    for a, b in zip(source.weights, target.weights):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


@pytest.mark.parametrize("text, error", [
    ('{"accuracy": 0.7', r"best_metrics.json:1: not valid JSON"),
    ("", r"best_metrics.json:1: not valid JSON"),
    ("[0.7]", r"best_metrics.json: expected a JSON object")])
def test_a_damaged_metrics_file_is_named(tmp_path, text, error):
    (tmp_path / "best_metrics.json").write_text(text)
    with pytest.raises(ValueError, match=error):
        best_model.read_best_metrics(tmp_path)


def test_no_metrics_file_means_no_best_yet(tmp_path):
    assert best_model.read_best_metrics(tmp_path) is None
    (tmp_path / "best_metrics.json").write_text(json.dumps({"f1": 0.25}))
    assert best_model.read_best_metrics(tmp_path) == {"f1": 0.25}
