"""`FeatureExtractor`: the feature-based use of BERT, for every family.

The encoder stays frozen; chosen hidden layers (e.g. the last four, the BERT
paper's CoNLL-2003 features) are read per token, or pooled to one vector per
text for another model (a logistic regression, a small tagger).
"""

import keras
import numpy as np
import tensorflow as tf

from tfbert.inference import EncoderInference
from tfbert.models import Encoder
from tfbert.layers.sentence_pooling import POOLINGS, SentencePooling
from tfbert.text import Preprocessor

LAYER_COMBINATIONS = ("concat", "sum", "mean")
DEFAULT_LAYERS = (-1, -2, -3, -4)


def check_layers(layers, num_layers):
    """`layers` as a tuple of int; ValueError unless each is a distinct
    index into `num_layers` blocks (`-num_layers <= index < num_layers`)."""
    layers = tuple(layers)
    if not layers:
        raise ValueError("layers is empty; give at least one layer index")
    for index in layers:
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)):
            raise ValueError(f"layer index {index!r} is not an integer")
        if not -num_layers <= index < num_layers:
            raise ValueError(
                f"layer index {index} is outside [{-num_layers}, "
                f"{num_layers - 1}] for a {num_layers}-layer encoder")
    normalized = [index % num_layers for index in layers]
    if len(set(normalized)) != len(normalized):
        raise ValueError(f"layers {list(layers)} name a layer twice")
    return tuple(int(index) for index in layers)


class FeatureExtractor:
    """Hidden layers of a frozen encoder as features.

    Layer indices count the transformer blocks as Google BERT's
    `extract_features.py` does: -1 is the last block's output, 0 the first
    block's (HF's `hidden_states[i + 1]`; the embeddings are not a layer).

    Args:
      encoder: a `BertEncoder` of any family.
      preprocessor: the family's preprocessor (`Preprocessor.from_pretrained`),
        packing one text or a pair.
      layers: the layer indices to read, in output order.
      pooling: "mean" (over real tokens, special tokens included), "cls"
        (the first token) or "max" (over real tokens), for
        `pooled_features`.
      layer_combination: how `pooled_features` joins the chosen layers:
        "concat" ([len(layers) * H]), "sum" or "mean" ([H]).

    Example:
    ```python
    extractor = tfbert.FeatureExtractor.from_pretrained(
        "minilm-l6-h384-uncased", layers=(-1, -2, -3, -4))
    extractor.pooled_features(["A man is eating."]).shape  # (1, 1536)
    tokens, values = extractor.token_features(["A man is eating."])[0]
    values.shape  # (len(tokens), 4, 384)
    ```
    """

    def __init__(self, encoder, preprocessor, layers=DEFAULT_LAYERS,
                 pooling="mean", layer_combination="concat"):
        if pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}, got "
                             f"{pooling!r}")
        if layer_combination not in LAYER_COMBINATIONS:
            raise ValueError(
                f"layer_combination must be one of {LAYER_COMBINATIONS}, "
                f"got {layer_combination!r}")
        self.encoder = encoder
        self.preprocessor = preprocessor
        self.layers = check_layers(layers, encoder.config.num_layers)
        self.pooling = pooling
        self._pool = SentencePooling(pooling)
        self.layer_combination = layer_combination
        spec = tf.TensorSpec([None, None], tf.int32)
        signature = [{"input_word_ids": spec, "input_mask": spec,
                      "input_type_ids": spec}]
        self._layer_features = tf.function(self.layer_features,
                                           input_signature=signature)
        self._pooled = tf.function(self.pooled, input_signature=signature)

    @classmethod
    def from_pretrained(cls, name_or_path, seq_length=128, **kwargs):
        """The extractor of a preset or checkpoint directory of any family;
        texts longer than `seq_length` tokens are truncated. `kwargs`:
        `layers`, `pooling`, `layer_combination`."""
        encoder = Encoder.from_pretrained(name_or_path)
        preprocessor = Preprocessor.from_pretrained(
            name_or_path, seq_length=seq_length, pad_to_seq_length=False)
        return cls(encoder, preprocessor, **kwargs)

    @property
    def feature_size(self):
        """The width of a `pooled_features` row."""
        hidden = self.encoder.config.hidden_size
        return hidden * (len(self.layers) if self.layer_combination == "concat"
                         else 1)

    def layer_features(self, inputs, feed_forward_shards=None):
        """The chosen layers of encoder inputs.

        Args:
          inputs: dict of int32 [batch, seq] `input_word_ids`, `input_mask`,
            `input_type_ids`.
          feed_forward_shards: see `tfbert.inference.EncoderInference`.

        Returns:
          float32 [batch, seq, len(layers), H]; zeros at padding.
        """
        blocks = EncoderInference(self.encoder, feed_forward_shards)(
            inputs, all_blocks=True)["encoder_outputs"]
        return tf.stack([tf.cast(blocks[i], tf.float32) for i in self.layers],
                        axis=2)

    def combine(self, features):
        """float32 [..., len(layers), H] -> [..., feature_size] by
        `layer_combination`."""
        if self.layer_combination == "sum":
            return tf.reduce_sum(features, axis=-2)
        if self.layer_combination == "mean":
            return tf.reduce_mean(features, axis=-2)
        shape = tf.shape(features)
        return tf.reshape(features, tf.concat(
            [shape[:-2], [shape[-2] * shape[-1]]], 0))

    def pooled(self, inputs, feed_forward_shards=None):
        """One vector per text of encoder inputs (dict of int32
        [batch, seq]): the chosen layers pooled by `pooling`, joined by
        `layer_combination`. float32 [batch, feature_size].
        `feed_forward_shards`: as `layer_features`."""
        return self.combine(self._pool(
            self.layer_features(inputs, feed_forward_shards),
            inputs["input_mask"]))

    def token_features(self, texts, batch_size=32, verbose="auto"):
        """Every wordpiece's chosen layers, special tokens included.

        Args:
          texts: a list of str, or of (str, str) pairs.
          batch_size: texts per encoder call.
          verbose: 0 silent, 1 a progress bar; "auto": a bar when there is
            more than one batch.

        Returns:
          A list with one `(tokens, values)` per text: `tokens` the list of
          token strings as packed, `values` float32 np.ndarray
          [len(tokens), len(layers), H].
        """
        results = []
        for inputs, features in self._batches(texts, batch_size, verbose,
                                              self._layer_features):
            ids, mask = inputs["input_word_ids"], inputs["input_mask"]
            for row in range(len(ids)):
                length = int(mask[row].sum())
                tokens = [self.preprocessor.tokenizer.id_to_token(i)
                          for i in ids[row, :length]]
                results.append((tokens, features[row, :length]))
        return results

    def pooled_features(self, texts, batch_size=32, verbose="auto", out=None):
        """One vector per text: the chosen layers pooled by `pooling`, then
        joined by `layer_combination`.

        Args:
          texts, batch_size, verbose: as in `token_features`.
          out: an optional float32 array [len(texts), feature_size] (e.g. a
            `np.lib.format.open_memmap`) to write into, so the whole result
            need not be held in memory.

        Returns:
          float32 [len(texts), feature_size] (`out` when given).
        """
        texts = self._checked(texts)
        if out is None:
            out = np.zeros((len(texts), self.feature_size), np.float32)
        elif tuple(out.shape) != (len(texts), self.feature_size):
            raise ValueError(f"out has shape {tuple(out.shape)}, expected "
                             f"{(len(texts), self.feature_size)}")
        start = 0
        for _, features in self._batches(texts, batch_size, verbose,
                                         self._pooled):
            out[start:start + len(features)] = features
            start += len(features)
        return out

    @staticmethod
    def _checked(texts):
        if isinstance(texts, (str, bytes)):
            raise TypeError("texts must be a list of texts, got a single "
                            "string; wrap it in a list")
        return list(texts)

    def _batches(self, texts, batch_size, verbose, compute):
        """Yields `(inputs, outputs)` as numpy, `batch_size` texts at a time
        in order; a batch holds single texts or pairs only (a mixed chunk
        is split where the kind changes)."""
        texts = self._checked(texts)
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if verbose == "auto":
            verbose = int(len(texts) > batch_size)
        progress = keras.utils.Progbar(len(texts), verbose=verbose,
                                       unit_name="text")
        done = 0
        for start in range(0, len(texts), batch_size):
            chunk = texts[start:start + batch_size]
            for run in _runs_of_one_kind(chunk):
                segments = (tuple(tf.constant(list(s)) for s in zip(*run))
                            if isinstance(run[0], tuple)
                            else tf.constant(run))
                inputs = self.preprocessor(segments)
                outputs = compute(inputs).numpy()
                yield {k: v.numpy() for k, v in inputs.items()}, outputs
                done += len(run)
                progress.update(done)


def _runs_of_one_kind(texts):
    """`texts` cut into consecutive runs of single texts or of pairs."""
    runs = []
    for text in texts:
        if runs and isinstance(runs[-1][0], tuple) == isinstance(text, tuple):
            runs[-1].append(text)
        else:
            runs.append([text])
    return runs
