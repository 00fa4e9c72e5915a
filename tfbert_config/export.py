"""How a task model is exported, and what one request may ask of the
export (plain Python)."""

import dataclasses

from tfbert_config.files import holds_files

# Column shards of each feed-forward layer in an export, by default. The
# best count depends on the serving machine (about one per core that the
# server gives a request); an export cannot know that machine, so this is
# a fixed default for small servers, and --export_feed_forward_shards sets
# it for a server with more cores.
FEED_FORWARD_SHARDS = 2


@dataclasses.dataclass(frozen=True)
class RequestLimits:
    """What one request may ask of an export's signatures.

    Characters are Unicode code points (Python's `len`), counted before
    tokenization; a window is one row the encoder runs on (of
    `max_seq_length` tokens at most).

    Attributes:
      max_text_chars: characters in any one text of any input.
      max_batch_chars: characters in all texts of a request together.
      max_windows: encoder windows per request: a classifier runs one per
        example, SQuAD one per `doc_stride` window of each context, NER
        one per window of each text, `serve_token_ids` one per row; every
        example counts as one at least. Under TF Serving's server-side
        batching the bounds per request hold for each merged batch.
    """

    max_text_chars: int = 10_000
    max_batch_chars: int = 100_000
    max_windows: int = 64

    def __post_init__(self):
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(
                    f"RequestLimits.{field.name} must be an integer >= 1, "
                    f"got {value!r}")


@dataclasses.dataclass(frozen=True)
class ExportConfig:
    """How a trained task model is exported for TF Serving
    (`tfbert.export.export_task_model`).

    Attributes:
      precision: "float32", or "bfloat16" (matmuls and stored weights in
        bfloat16; LayerNorm, softmax and logits stay float32).
      token_ids_only: export only the token-id signature.
      constant_kernels: with bfloat16, the Dense kernels as graph constants.
      feed_forward_shards: column shards each feed-forward layer is stored
        as, or None (whole); always None with `constant_kernels`.
      limits: the `RequestLimits` the export enforces.
      xla: the encoder as one XLA-compiled function (bucketed shapes,
        compiled by the warmup requests); not with `constant_kernels`.

    The export checks the values (`tfbert.export.export_saved_model`).
    """

    precision: str = "float32"
    token_ids_only: bool = False
    constant_kernels: bool = False
    feed_forward_shards: int | None = None
    limits: RequestLimits = RequestLimits()
    xla: bool = False


def check_tfhub_export(encoder_export_dir=None, preprocessor_export_dir=None,
                       text_embedding_export_dir=None, seq_length=128):
    """The checks of `tfbert.tasks.export_tfhub.export_tfhub`'s arguments
    that need no checkpoint: at least one output directory, each of them
    missing or empty, and `seq_length` >= 2.

    Raises:
      ValueError: naming the parameter in backticks.
    """
    directories = {"encoder_export_dir": encoder_export_dir,
                   "preprocessor_export_dir": preprocessor_export_dir,
                   "text_embedding_export_dir": text_embedding_export_dir}
    if not any(directories.values()):
        raise ValueError("give `encoder_export_dir`, "
                         "`preprocessor_export_dir` or "
                         "`text_embedding_export_dir`")
    if seq_length < 2:
        raise ValueError(f"`seq_length`={seq_length}: must be >= 2")
    for name, directory in directories.items():
        if directory and holds_files(directory):
            raise ValueError(f"`{name}`: {directory} exists and is not empty")
