"""The CPU serving path of tfbert's models, for TensorFlow.

`tfbert.layers` and `tfbert.models` are the plain Keras forward (training,
every backend). This package computes the same outputs from the same
layers' weights in the forms TensorFlow runs fastest at inference: padding
columns cut off and position-wise work on real tokens only
(`TokenPacking`), matmul + bias + activation + residual as kernels oneDNN
fuses (`fused_dense`), TensorFlow's own kernels for small attention
problems, the feed-forward layer from column shards, and the last block for
the first token only under a sequence classifier. Every task model states
its head once (`head_outputs`); `task_outputs` runs it on
`EncoderInference`. The TF Serving and TF Hub exports, `SentenceEncoder.encode`,
`FeatureExtractor` and `FillMask` compute with it. `CompiledEncoder` runs
the encoder as one XLA-compiled function on bucketed shapes (exports made
with --export_xla).
"""

from tfbert.inference.compiled import CompiledEncoder
from tfbert.inference.encoder import EncoderInference, task_outputs
from tfbert.inference.token_packing import (TokenPacking, padded_to,
                                            trailing_padding_removed)
from tfbert.inference.transformer_block import (feed_forward_shards,
                                                transformer_block)
