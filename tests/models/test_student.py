"""A student from K teacher layers starts with exactly those weights."""

import dataclasses

import keras
import numpy as np
import pytest

from tfbert.config import BertConfig
from tfbert.models import (
    BertClassifier, BertEncoder, BertSpanLabeler, BertTokenClassifier)
from tfbert.models.student import kept_layers, student_from_teacher

CONFIG = BertConfig(vocab_size=40, hidden_size=16, num_layers=6, num_heads=2,
                    intermediate_size=32, max_position_embeddings=16)


def test_kept_layers_are_evenly_spaced():
    assert kept_layers(6, 3) == [0, 2, 4]
    assert kept_layers(12, 6) == [0, 2, 4, 6, 8, 10]
    assert kept_layers(6, 2) == [0, 3]
    assert kept_layers(4, 4) == [0, 1, 2, 3]
    assert kept_layers(6, 1) == [0]
    for k in (0, 7):
        with pytest.raises(ValueError, match="1 to 6 layers"):
            kept_layers(6, k)


def _by_path(model):
    return {v.path: v.numpy() for v in model.weights}


@pytest.mark.parametrize("make", [
    lambda encoder: BertClassifier(encoder, 3),
    lambda encoder: BertSpanLabeler(encoder),
    lambda encoder: BertTokenClassifier(encoder, 3, use_crf=True),
])
def test_student_starts_with_the_kept_teacher_weights(make):
    keras.utils.set_random_seed(1)
    teacher = make(BertEncoder(CONFIG))
    student = student_from_teacher(teacher, 3)
    assert student.encoder.config == dataclasses.replace(CONFIG, num_layers=3)
    teacher_weights, student_weights = _by_path(teacher), _by_path(student)
    # Each student variable's path names the teacher variable it must equal:
    # student block i <- teacher block 2i, everything else by its own path.
    for path, value in student_weights.items():
        source = path
        for i in range(3):
            source = source.replace(f"transformer_block_{i}/",
                                    f"TEACHER_BLOCK_{2 * i}/")
        source = source.replace("TEACHER_BLOCK_", "transformer_block_")
        np.testing.assert_array_equal(value, teacher_weights[source], path)
    assert len(student_weights) == len(teacher_weights) - 3 * len(
        teacher.encoder.get_layer("transformer_block_0").weights)


def test_shared_blocks_have_no_layers_to_keep():
    encoder = BertEncoder(dataclasses.replace(CONFIG, share_layers=True))
    with pytest.raises(ValueError, match="shared"):
        student_from_teacher(BertClassifier(encoder, 2), 2)


def test_student_takes_its_own_task_config():
    teacher = BertClassifier(BertEncoder(CONFIG), 2, dropout=0.1)
    student = student_from_teacher(teacher, 2, dropout=0.3)
    assert (student.dropout, student.num_classes) == (0.3, 2)
