"""benchmarks/encoder_inference.py: `--matmuls` accounts for every dense
layer of the encoder it times."""

import pytest

from benchmarks.encoder_inference import _dense_milliseconds
from tfbert import BertConfig, BertEncoder
from tfbert.layers import TransformerBlock


@pytest.mark.parametrize("num_layers, intermediate_size", [(2, 32), (3, 24)])
def test_dense_time_counts_the_encoders_dense_kernels(num_layers,
                                                      intermediate_size):
    config = BertConfig(vocab_size=50, hidden_size=16, num_layers=num_layers,
                        num_heads=2, intermediate_size=intermediate_size,
                        max_position_embeddings=20)
    encoder = BertEncoder(config)
    kernels = [dense.kernel for layer in encoder._flatten_layers()
               if isinstance(layer, TransformerBlock)
               for dense in (layer.attention.query, layer.attention.key,
                             layer.attention.value, layer.attention.output_dense,
                             layer.intermediate_dense, layer.output_dense)]
    rows = 96
    flops = sum(2 * rows * k.shape[0] * k.shape[1] for k in kernels)
    rates = {f"{k.shape[0]}x{k.shape[1]}": 1.0 for k in kernels}  # GFLOP/s
    # At 1 GFLOP/s a millisecond is 1e6 FLOPs.
    assert _dense_milliseconds(config, rows, rates) * 1e6 == pytest.approx(
        flops)
