"""`SentenceEncoder`: fixed-size sentence embeddings from a BERT encoder."""

from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

from tfbert.models import Encoder
from tfbert.presets import get_preset
from tfbert.text import Preprocessor
from tfbert.utils.json_file import read_json

POOLINGS = ("mean", "cls")

# sentence-transformers' module types we reproduce; anything else (Dense,
# CNN, ...) would change the embedding, so it is an error.
_TRANSFORMER = "sentence_transformers.models.Transformer"
_POOLING = "sentence_transformers.models.Pooling"
_NORMALIZE = "sentence_transformers.models.Normalize"


def _read_pooling(directory):
    """The pooling mode of `1_Pooling/config.json`, or None without one."""
    path = directory / "1_Pooling" / "config.json"
    if not path.exists():
        return None
    config = read_json(path)
    modes = sorted(key[len("pooling_mode_"):] for key, value in config.items()
                   if key.startswith("pooling_mode_") and value is True)
    names = {"mean_tokens": "mean", "cls_token": "cls"}
    if len(modes) != 1 or modes[0] not in names:
        raise ValueError(
            f"{path}: pooling modes {modes} are not supported; exactly one of "
            "pooling_mode_mean_tokens or pooling_mode_cls_token must be true")
    return names[modes[0]]


def _reads_normalize(directory):
    """Whether `modules.json` ends the pipeline with a Normalize module (None
    without the file)."""
    path = directory / "modules.json"
    if not path.exists():
        return None
    modules = read_json(path)
    types = [module.get("type") for module in modules]
    unsupported = [t for t in types if t not in (_TRANSFORMER, _POOLING,
                                                 _NORMALIZE)]
    if unsupported:
        raise ValueError(f"{path}: modules {unsupported} are not supported "
                         "(only Transformer, Pooling and Normalize)")
    return _NORMALIZE in types


def _read_max_seq_length(directory):
    path = directory / "sentence_bert_config.json"
    if not path.exists():
        return None
    value = read_json(path).get("max_seq_length")
    if value is not None and (not isinstance(value, int) or value < 2):
        raise ValueError(f"{path}: max_seq_length must be an int >= 2, got "
                         f"{value!r}")
    return value


class SentenceEncoder:
    """Embeds sentences: tokenize → encoder → pool → (L2-normalise).

    Mean pooling averages `sequence_output` over real tokens (`input_mask`
    1, [CLS] and [SEP] included), as sentence-transformers does; "cls" takes
    the [CLS] position of `sequence_output` (not the tanh pooler).

    Args:
      encoder: a `BertEncoder` of any family.
      preprocessor: the family's preprocessor (`BertPreprocessor` or
        `Preprocessor`) packing single sentences.
      pooling: "mean" or "cls".
      normalize: L2-normalise each embedding.

    Example:
    ```python
    model = tfbert.SentenceEncoder.from_pretrained("minilm-l6-h384-uncased")
    embeddings = model.encode(["A man is eating.", "Someone eats."])
    embeddings.shape  # (2, 384); rows have unit norm
    float(embeddings[0] @ embeddings[1])  # cosine similarity
    ```
    """

    def __init__(self, encoder, preprocessor, pooling="mean", normalize=False):
        if pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}, got "
                             f"{pooling!r}")
        self.encoder = encoder
        self.preprocessor = preprocessor
        self.pooling = pooling
        self.normalize = bool(normalize)
        spec = tf.TensorSpec([None, None], tf.int32)
        self._embed = tf.function(self._embed_features, input_signature=[
            {"input_word_ids": spec, "input_mask": spec,
             "input_type_ids": spec}])

    @classmethod
    def from_pretrained(cls, name_or_path, pooling=None, normalize=None,
                        seq_length=None):
        """Loads encoder and tokenizer from a preset or checkpoint directory.

        Settings not given are read from sentence-transformers' files when
        the directory has them: pooling from `1_Pooling/config.json`,
        normalisation from a Normalize module in `modules.json`, the
        sequence length from `sentence_bert_config.json` (`max_seq_length`).
        Otherwise: mean pooling, no normalisation, and the encoder's
        `max_position_embeddings`. Longer texts are truncated.
        """
        preset = (get_preset(name_or_path) if isinstance(name_or_path, str)
                  else None)
        directory = preset.directory() if preset is not None else Path(
            name_or_path)
        encoder = Encoder.from_pretrained(name_or_path)
        if directory is not None and Path(directory).is_dir():
            directory = Path(directory)
            pooling = pooling or _read_pooling(directory)
            if normalize is None:
                normalize = _reads_normalize(directory)
            seq_length = seq_length or _read_max_seq_length(directory)
        seq_length = seq_length or (encoder.config.max_position_embeddings
                                    - encoder.config.position_offset)
        preprocessor = Preprocessor.from_pretrained(
            name_or_path, seq_length=seq_length, pad_to_seq_length=False)
        return cls(encoder, preprocessor, pooling=pooling or "mean",
                   normalize=bool(normalize))

    from_preset = from_pretrained  # keras-hub's name

    def _embed_features(self, inputs):
        # Batches are padded to their longest sentence; the encoder skips
        # the padding (`TokenPacking`).
        sequence = self.encoder.inference_sequence_output(inputs)
        if self.pooling == "cls":
            pooled = sequence[:, 0]
        else:
            mask = tf.cast(inputs["input_mask"], sequence.dtype)[..., None]
            pooled = (tf.reduce_sum(sequence * mask, axis=1)
                      / tf.maximum(tf.reduce_sum(mask, axis=1), 1e-9))
        if self.normalize:
            pooled = pooled / tf.maximum(
                tf.norm(pooled, axis=-1, keepdims=True), 1e-12)
        return pooled

    def encode(self, sentences, batch_size=32, verbose="auto"):
        """Embeds `sentences`.

        Args:
          sentences: a list of str.
          batch_size: sentences per encoder call.
          verbose: 0 silent, 1 a progress bar over the sentences; "auto"
            shows it when there is more than one batch.

        Returns:
          float32 np.ndarray [len(sentences), H].
        """
        if isinstance(sentences, (str, bytes)):
            raise TypeError("encode() takes a list of sentences, got a single "
                            "string; wrap it in a list")
        sentences = list(sentences)
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        hidden = self.encoder.config.hidden_size
        if verbose == "auto":
            verbose = int(len(sentences) > batch_size)
        progress = keras.utils.Progbar(len(sentences), verbose=verbose,
                                       unit_name="sentence")
        batches = []
        for start in range(0, len(sentences), batch_size):
            inputs = self.preprocessor(sentences[start:start + batch_size])
            batches.append(self._embed(inputs).numpy())
            progress.update(start + len(batches[-1]))
        if not batches:
            return np.zeros((0, hidden), np.float32)
        return np.concatenate(batches).astype(np.float32, copy=False)
