import os

import numpy as np
import pytest
import tensorflow as tf

from tfbert.data.batching import prefetch_for_keras


def test_prefetch_for_keras_keeps_the_elements_and_turns_autotuning_off():
    dataset = tf.data.Dataset.range(10).map(
        lambda x: {"ids": tf.fill([x + 1], x)},
        num_parallel_calls=tf.data.AUTOTUNE).padded_batch(3)
    prefetched = prefetch_for_keras(dataset)

    assert dataset.options().autotune.enabled is None  # TensorFlow's default
    assert prefetched.options().autotune.enabled is False
    # Options set downstream still reach the whole pipeline.
    assert prefetched.repeat().skip(2).options().autotune.enabled is False
    for a, b in zip(dataset, prefetched, strict=True):
        np.testing.assert_array_equal(a["ids"], b["ids"])


KERAS_LOOPS = """
import sys
import keras
import numpy as np
import tensorflow as tf
from tfbert.data.batching import prefetch_for_keras
from tfbert.training.distribution import get_strategy

x = np.random.rand(64, 4).astype("float32")
y = np.random.randint(0, 2, 64)
dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(8)
if sys.argv[1] == "prefetch_for_keras":
    dataset = prefetch_for_keras(dataset)
with get_strategy("one_device").scope():
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    model.compile("adam", "sparse_categorical_crossentropy")
    model.fit(dataset, epochs=2, verbose=0)
    model.evaluate(dataset, verbose=0)
    model.predict(dataset.map(lambda x, y: x), verbose=0)
"""


def test_keras_loops_run_no_autotuning_model_on_one_device():
    """Keras `fit`/`evaluate`/`predict` under the runner's default strategy
    on this CPU-only machine, with tf.data's model logging its passes
    (`TF_CPP_VMODULE=model=2`): none with `prefetch_for_keras`; a plain
    dataset shows what the log looks like when a model runs."""
    import subprocess
    import sys

    from tests.conftest import REPO_ROOT

    def model_log_lines(kind):
        result = subprocess.run(
            [sys.executable, "-c", KERAS_LOOPS, kind], cwd=REPO_ROOT,
            capture_output=True, text=True, timeout=300,
            env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="0",
                     TF_CPP_VMODULE="model=2"))
        assert result.returncode == 0, result.stderr[-3000:]
        return [line for line in result.stderr.splitlines()
                if "model.cc" in line]

    assert model_log_lines("plain")
    assert model_log_lines("prefetch_for_keras") == []


@pytest.mark.slow
def test_count_truncated_matches_hf_tokenizer(minilm_dir, shared_data_dir):
    from transformers import AutoTokenizer

    from tfbert.data import glue
    from tfbert.data.batching import count_truncated
    from tfbert.text import BertPreprocessor, BertTokenizer

    pairs = glue.read_examples(glue.split_path(shared_data_dir / "glue",
                                               "mrpc", "dev"), "mrpc")[:200]
    reference = AutoTokenizer.from_pretrained(str(minilm_dir))
    preprocessor = BertPreprocessor(BertTokenizer(str(minilm_dir /
                                                      "vocab.txt")),
                                    seq_length=40)
    singles = ([e.text_a for e in pairs],)
    both = singles + ([e.text_b for e in pairs],)
    # HF's encoding with special tokens, untruncated.
    expected_single = sum(len(reference(a)["input_ids"]) > 40
                          for a in singles[0])
    expected_pair = sum(len(reference(a, b)["input_ids"]) > 40
                        for a, b in zip(*both))
    assert 0 < expected_single < expected_pair < 200
    assert count_truncated(singles, preprocessor, chunk_size=64) == (
        expected_single)
    assert count_truncated(both, preprocessor) == expected_pair
