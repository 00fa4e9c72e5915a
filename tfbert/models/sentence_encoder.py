"""`SentenceEncoder`: raw strings in, one embedding per string out, for
every encoder family."""

from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

from tfbert.data.batching import prefetch_for_keras
from tfbert.data.sentence_batching import no_duplicate_dataset
from tfbert.inference import task_outputs
from tfbert.layers.sentence_pooling import L2Normalization, SentencePooling
from tfbert.losses import MultipleNegativesRankingLoss
from tfbert.models.checkpoint_entry import checkpoints
from tfbert.models.encoder import Encoder
from tfbert.models.encoder_task_model import EncoderTaskModel
from tfbert.models.raw_text_model import RawTextModel, texts_tensor
from tfbert.presets import get_preset
from tfbert.text.preprocessor import Preprocessor

DEFAULT_BATCH_SIZE = 32


@keras.saving.register_keras_serializable(package="tfbert")
class SentenceEncoder(RawTextModel, EncoderTaskModel, keras.Model):
    """A bi-encoder: the family's in-graph preprocessor -> encoder ->
    pooling (mean / cls / max over real tokens, `SentencePooling`) ->
    optional dense projection -> optional L2 normalisation.

    Inputs: tf.string [batch] -> float32 embeddings [batch, D] (D the
    projection's size, else the encoder's H). A tuple (or list) of k
    tf.string [batch] columns (e.g. anchor, positive, negative) is embedded
    column by column -> float32 [batch, k, D]: that is what the
    `tfbert.losses` sentence losses take as `y_pred`, so `compile(loss=...)`
    and `fit((anchors, positives))` train the encoder with them.

    `encode()` is the fast inference path (`tfbert.inference.task_outputs`
    on the preprocessed texts: trailing padding cut, blocks on real tokens
    only), equal to the Keras forward up to float rounding.

    Args:
      preprocessor: the family's `BertPreprocessor` / `Preprocessor` for
        single texts (`pad_to_seq_length=False` pads each batch only to its
        longest text).
      encoder: a `BertEncoder` of any family.
      pooling: "mean", "cls" or "max".
      normalize: L2-normalise each embedding.
      projection: None or a `keras.layers.Dense` on the pooled vector
        (sentence-transformers' Dense module).

    Example:
    ```python
    model = tfbert.SentenceEncoder.from_pretrained("minilm-l6-h384-uncased")
    embeddings = model.encode(["A man is eating.", "Someone eats."])
    embeddings.shape  # (2, 384); rows have unit norm
    float(embeddings[0] @ embeddings[1])  # cosine similarity
    ```
    """

    nested_objects = ("preprocessor", "encoder", "projection")

    def __init__(self, preprocessor, encoder, pooling="mean", normalize=False,
                 projection=None, **kwargs):
        super().__init__(**kwargs)
        self.preprocessor = preprocessor
        self.encoder = encoder
        self.pooler = SentencePooling(pooling, name="pooling")
        self.normalize = bool(normalize)
        self.normalization = (L2Normalization(name="normalization")
                              if self.normalize else None)
        self.projection = projection
        if projection is not None and not projection.built:
            projection.build((None, encoder.config.hidden_size))
        self._auto_optimizer = None
        self._encode_batch = None
        self.built = True

    @property
    def pooling(self):
        return self.pooler.mode

    @property
    def embedding_size(self):
        return (self.projection.units if self.projection is not None
                else self.encoder.config.hidden_size)

    @classmethod
    def from_pretrained(cls, name_or_path, pooling=None, normalize=None,
                        seq_length=None, projection_size=None,
                        projection_activation="tanh", preprocessor=None,
                        **config_overrides):
        """Encoder and tokenizer of a preset, HF or sentence-transformers
        directory, of any family.

        Settings not given are read from a sentence-transformers directory
        (`modules.json`): pooling from `1_Pooling/config.json`, a Dense
        module's weights, normalisation from a Normalize module, the
        sequence length from `sentence_bert_config.json` or the tokenizer's
        `model_max_length`. Otherwise: mean pooling, no projection, no
        normalisation, the encoder's position table length. Longer texts are
        truncated.

        Args:
          name_or_path: a preset name or a checkpoint directory.
          pooling: "mean", "cls" or "max".
          normalize: L2-normalise the embeddings.
          seq_length: tokens per text, special tokens included.
          projection_size: add a newly initialised dense projection to this
            size (a directory's own Dense module is read instead).
          projection_activation: its activation (sentence-transformers'
            default: tanh); None for a linear projection.
          preprocessor: the preprocessor to use instead of the checkpoint's
            (`seq_length` then is its own).
          **config_overrides: encoder config fields to replace (e.g.
            `hidden_dropout`).
        """
        source = name_or_path
        pipeline = None
        if get_preset(str(name_or_path)) is not None:
            directory = get_preset(str(name_or_path)).directory()
            if directory is not None:
                pipeline = checkpoints().read_pipeline(directory)
        elif Path(name_or_path).is_dir():
            pipeline = checkpoints().read_pipeline(name_or_path)
            if pipeline is not None:
                source = pipeline.transformer_dir
        projection = None
        if pipeline is not None:
            pooling = pooling or pipeline.pooling
            normalize = pipeline.normalize if normalize is None else normalize
            seq_length = seq_length or pipeline.max_seq_length
            if len(pipeline.dense) > 1:
                raise ValueError(f"{name_or_path}: more than one Dense module "
                                 "is not supported")
            if pipeline.dense:
                projection = _dense_from_module(pipeline.dense[0])
        encoder = Encoder.from_pretrained(source, **config_overrides)
        config = encoder.config
        positions = config.max_position_embeddings - config.position_offset
        seq_length = min(seq_length or positions, positions)
        if projection is None and projection_size is not None:
            projection = keras.layers.Dense(
                projection_size, activation=projection_activation,
                name="projection")
        if preprocessor is None:
            preprocessor = Preprocessor.from_pretrained(
                source, seq_length=seq_length, pad_to_seq_length=False,
                name="preprocessor")
        return cls(preprocessor, encoder, pooling=pooling or "mean",
                   normalize=bool(normalize), projection=projection)

    def head_outputs(self, encoder_outputs, inputs, training=None):
        """Pooling over `inputs["input_mask"]` (the preprocessed texts),
        projection, normalisation of the encoder's `sequence_output`:
        float32 [batch, D]."""
        pooled = self.pooler(encoder_outputs["sequence_output"],
                             inputs["input_mask"])
        if self.projection is not None:
            pooled = keras.ops.cast(self.projection(pooled), "float32")
        if self.normalization is not None:
            pooled = self.normalization(pooled)
        return pooled

    def call(self, inputs, training=None):
        """tf.string [batch] -> float32 [batch, D]; a tuple of k columns
        tf.string [batch] -> float32 [batch, k, D]."""
        if not isinstance(inputs, (tuple, list)):
            return self._embed(inputs, training)
        # One encoder pass per column, each padded to its own longest text:
        # in one pass over all columns, short queries beside long passages
        # would be padded to the passages' length.
        return tf.stack([self._embed(column, training) for column in inputs],
                        axis=1)

    def _embed(self, texts, training):
        features = self.preprocessor(texts)
        return self.head_outputs(
            self.encoder(features, training=training), features, training)

    def _inference_embeddings(self, texts):
        return task_outputs(self, self.preprocessor(texts))

    def encode(self, sentences, batch_size=32, show_progress_bar=None):
        """Embeds sentences (inference).

        Args:
          sentences: a str, or a list of str.
          batch_size: sentences per encoder call. Batches are made of
            texts of similar lengths (longest first); the rows come back in
            the order of `sentences`.
          show_progress_bar: a progress bar over the sentences; None shows
            it when there is more than one batch.

        Returns:
          float32 np.ndarray [len(sentences), D]; for a single str, [D]
          (as sentence-transformers' `encode`).
        """
        single = isinstance(sentences, (str, bytes))
        sentences = [sentences] if single else list(sentences)
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if self._encode_batch is None:
            self._encode_batch = tf.function(
                self._inference_embeddings,
                input_signature=[tf.TensorSpec([None], tf.string)])
        if show_progress_bar is None:
            show_progress_bar = len(sentences) > batch_size
        progress = keras.utils.Progbar(
            len(sentences), verbose=int(bool(show_progress_bar)),
            unit_name="sentence")
        # Longest first, so that each batch holds texts of similar lengths
        # (less padding), and the first batch shows the memory it needs.
        order = sorted(range(len(sentences)),
                       key=lambda i: -len(sentences[i]))
        batches = []
        for start in range(0, len(sentences), batch_size):
            batch = tf.constant([sentences[i] for i in
                                 order[start:start + batch_size]], tf.string)
            batches.append(self._encode_batch(batch).numpy())
            progress.update(start + len(batches[-1]))
        if not batches:
            return np.zeros((0, self.embedding_size), np.float32)
        embeddings = np.empty((len(sentences), self.embedding_size),
                              np.float32)
        embeddings[order] = np.concatenate(batches)
        return embeddings[0] if single else embeddings

    def _default_loss_and_metrics(self, loss, metrics):
        """"auto" loss: multiple-negatives ranking (`tfbert.losses`) over
        (anchor, positive[, negative]) columns; "auto" metrics: none."""
        if loss == "auto":
            loss = MultipleNegativesRankingLoss()
        return loss, ([] if metrics == "auto" else metrics)

    def _dataset(self, x, y, batch_size, shuffle=False):
        """Batches `(x, y)`: `x` a list of str or a tuple of such columns
        (equal lengths), `y` per-example labels (scores, 0/1) or None (zeros
        stand in: the in-batch-negative losses take no labels). A dataset
        passes through."""
        if isinstance(x, tf.data.Dataset):
            return x
        if isinstance(x, (tuple, list)) and x and not isinstance(
                x[0], (str, bytes)):
            x = tuple(texts_tensor(column) for column in x)
            counts = {int(column.shape[0]) for column in x}
            if len(counts) != 1:
                raise ValueError(f"the columns of x have different lengths "
                                 f"{sorted(counts)}")
            count = counts.pop()
        else:
            x = texts_tensor(x)
            count = int(x.shape[0])
        labels = (np.zeros(count, np.float32) if y is None
                  else np.asarray(y, np.float32))
        if len(labels) != count:
            raise ValueError(f"{count} texts but {len(labels)} labels")
        dataset = tf.data.Dataset.from_tensor_slices((x, labels))
        if shuffle:
            dataset = dataset.shuffle(count, reshuffle_each_iteration=True)
        return prefetch_for_keras(
            dataset.batch(batch_size or DEFAULT_BATCH_SIZE))

    def _training_batches(self, x, y, batch_size, shuffle):
        """With a loss that uses in-batch negatives, a shuffled epoch holds
        no text twice in a batch (`no_duplicate_dataset`)."""
        loss = getattr(self, "loss", None)
        if (not shuffle or isinstance(x, tf.data.Dataset)
                or not getattr(loss, "uses_in_batch_negatives", False)):
            return super()._training_batches(x, y, batch_size, shuffle)
        columns = x if isinstance(x, (tuple, list)) and x and not isinstance(
            x[0], (str, bytes)) else (x,)
        count = len(columns[0])
        labels = np.zeros(count, np.float32) if y is None else y
        dataset, num_batches = no_duplicate_dataset(
            columns, labels, batch_size or DEFAULT_BATCH_SIZE,
            seed=np.random.randint(2 ** 31))
        return prefetch_for_keras(dataset), num_batches

    def task_config(self):
        return {"pooling": self.pooling, "normalize": self.normalize}


def _dense_from_module(module):
    """A built `keras.layers.Dense` holding a sentence-transformers Dense
    module's weights."""
    units = module.kernel.shape[1]
    dense = keras.layers.Dense(units, activation=module.activation,
                               use_bias=module.bias is not None,
                               name="projection")
    dense.build((None, module.kernel.shape[0]))
    dense.set_weights([module.kernel] + ([module.bias]
                                         if module.bias is not None else []))
    return dense
