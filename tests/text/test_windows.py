"""In-graph strided windows against SQuAD's Python window plan, and the
special-token count against HF's tokenizer."""

import numpy as np
import pytest
import tensorflow as tf

from tfbert.data.squad import doc_windows
from tfbert.text.windows import (document_windows, special_token_count,
                                 window_counts)


@pytest.mark.parametrize("max_tokens, stride", [(5, 2), (5, 5), (4, 9),
                                                (1, 1)])
def test_windows_match_the_python_plan(max_tokens, stride):
    rng = np.random.default_rng(max_tokens * 10 + stride)
    lengths = [0, 1, max_tokens, max_tokens + 1, *rng.integers(0, 40, 12)]
    rows = [list(range(100 * i, 100 * i + n)) for i, n in enumerate(lengths)]
    windows, document = document_windows(tf.ragged.constant(rows, tf.int32),
                                         max_tokens, stride)
    expected, owners = [], []
    for i, row in enumerate(rows):
        for start, length in doc_windows(len(row), max_tokens, stride):
            expected.append(row[start:start + length])
            owners.append(i)
    assert windows.to_list() == expected
    assert document.numpy().tolist() == owners
    assert window_counts(lengths, max_tokens, stride).numpy().tolist() == [
        owners.count(i) for i in range(len(rows))]


def test_special_token_count_matches_hf(minilm_dir):
    from transformers import AutoTokenizer

    from tfbert.text import BertPreprocessor, BertTokenizer

    reference = AutoTokenizer.from_pretrained(str(minilm_dir))
    preprocessor = BertPreprocessor(BertTokenizer(str(minilm_dir /
                                                      "vocab.txt")), 16)
    for pair in (False, True):
        assert special_token_count(preprocessor, 1 + pair) == (
            reference.num_special_tokens_to_add(pair=pair))
