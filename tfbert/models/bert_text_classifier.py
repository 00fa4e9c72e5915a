"""`TextClassifier` (formerly `BertTextClassifier`): raw strings in, class
logits (or a score) out, for every family."""

import keras
import numpy as np
import tensorflow as tf

from tfbert.data.batching import prefetch_for_keras
from tfbert import families
from tfbert.models.bert_classifier import SequenceClassifier
from tfbert.models.encoder_task_model import EncoderTaskModel, loadable_as
from tfbert.text.packing_layout import LAYOUTS
from tfbert.text.preprocessor import Preprocessor
from tfbert.training.optimization import create_optimizer

DEFAULT_BATCH_SIZE = 32
PAIR_INPUTS = ("text_a", "text_b")


@keras.saving.register_keras_serializable(package="tfbert")
class TextClassifier(EncoderTaskModel, keras.Model):
    """A family's preprocessor and a `SequenceClassifier` in one Keras model
    whose inputs are raw strings: `fit`, `evaluate` and `predict` take lists of
    str, and `save("x.keras")` stores the vocabulary with the weights.

    Inputs: tf.string [batch] (one text per example) or, with `is_pair`, a
    dict `text_a`, `text_b` of tf.string [batch] (`fit`, `evaluate` and
    `predict` also take a tuple of two lists). Output: float32 logits
    [batch, num_classes]; with `num_classes=1` a regression score
    [batch, 1].

    Tokenization runs in the model graph (string ops cannot be XLA-compiled,
    so `compile` defaults to `jit_compile=False`). `compile()` without
    arguments picks BERT's fine-tuning recipe: `tfbert.training` AdamW
    (learning rate 2e-5, weight decay 0.01, global-norm clip 1.0) with 10%
    warmup and linear decay over the first `fit` call, and the loss and
    metric that suit `num_classes`.

    Args:
      preprocessor: the encoder family's preprocessor (a `BertPreprocessor`
        or a `Preprocessor`: tokenizer, layout and `seq_length`).
      classifier: a `SequenceClassifier`.
      is_pair: examples are text pairs.

    Example:
    ```python
    model = tfbert.TextClassifier.from_pretrained(
        "minilm-l6-h384-uncased", num_classes=2, seq_length=64)
    model.compile()
    model.fit(["a fine film", "a dull film"], [1, 0], epochs=3)
    model.predict(["fine"])  # float32 logits [1, 2]
    ```
    """

    nested_objects = ("preprocessor", "classifier")

    def __init__(self, preprocessor, classifier, is_pair=False, **kwargs):
        self.preprocessor = preprocessor
        self.classifier = classifier
        self.is_pair = bool(is_pair)
        if self.is_pair:
            inputs = {name: keras.Input(shape=(), dtype="string", name=name)
                      for name in PAIR_INPUTS}
            segments = tuple(inputs[name] for name in PAIR_INPUTS)
        else:
            inputs = keras.Input(shape=(), dtype="string", name="text")
            segments = (inputs,)
        logits = classifier(preprocessor(segments))
        super().__init__(inputs=inputs, outputs=logits, **kwargs)
        self._auto_optimizer = None

    @property
    def num_classes(self):
        return self.classifier.num_classes

    @classmethod
    def from_pretrained(cls, name_or_path, num_classes, seq_length=128,
                        is_pair=False, dropout=0.1,
                        truncation="longest_first", **config_overrides):
        """A classifier on a pretrained encoder of any family and that
        family's tokenizer and packing.

        Args:
          name_or_path: a preset name (see `tfbert.presets`) or a checkpoint
            directory with its tokenizer files (any layout
            `tfbert.Encoder.from_pretrained` reads).
          num_classes: number of classes, or 1 for regression.
          seq_length: tokens per example, special tokens included; at most
            the checkpoint's `max_position_embeddings`.
          is_pair: examples are text pairs.
          dropout: dropout rate before the output layer.
          truncation: how pairs are cut (see `Preprocessor`).
          **config_overrides: encoder config fields to replace.
        """
        classifier = SequenceClassifier.from_pretrained(
            name_or_path, num_classes, dropout=dropout, name="classifier",
            **config_overrides)
        encoder = classifier.encoder
        limit = (encoder.config.max_position_embeddings
                 - encoder.config.position_offset)
        layout = LAYOUTS[families.of_encoder_class(type(encoder)).layout]
        # Room for one token of each segment besides the special tokens.
        segments = 2 if is_pair else 1
        minimum = layout.num_special_tokens(segments) + segments
        if not minimum <= seq_length <= limit:
            raise ValueError(
                f"seq_length must be in [{minimum}, {limit}] for "
                f"{name_or_path} (max_position_embeddings={limit}), got "
                f"{seq_length}")
        preprocessor = Preprocessor.from_pretrained(
            name_or_path, seq_length=seq_length, truncation=truncation,
            name="preprocessor")
        return cls(preprocessor, classifier, is_pair=is_pair)

    from_preset = from_pretrained  # keras-hub's name

    def compile(self, optimizer="auto", loss="auto", metrics="auto",
                learning_rate=2e-5, warmup_fraction=0.1, weight_decay=0.01,
                **kwargs):
        """`keras.Model.compile` with defaults for fine-tuning.

        Args:
          optimizer: "auto" for `tfbert.training.create_optimizer` AdamW
            whose warmup (`warmup_fraction` of the steps) and linear decay
            span the next `fit` call; or any Keras optimizer.
          loss: "auto" for sparse softmax cross-entropy on the logits
            (labels int class ids), or mean squared error for regression.
          metrics: "auto" for accuracy (classification), none (regression).
          learning_rate, warmup_fraction, weight_decay: of the "auto"
            optimizer.
          **kwargs: passed on (`jit_compile` defaults to False).
        """
        regression = self.num_classes == 1
        if loss == "auto":
            loss = (keras.losses.MeanSquaredError() if regression else
                    keras.losses.SparseCategoricalCrossentropy(
                        from_logits=True))
        if metrics == "auto":
            metrics = [] if regression else [
                keras.metrics.SparseCategoricalAccuracy(name="accuracy")]
        kwargs.setdefault("jit_compile", False)
        kwargs.update(loss=loss, metrics=metrics)
        self._auto_optimizer = None
        if optimizer == "auto":
            # The schedule's length is known only in `fit`, which compiles
            # again with it; until then a one-step schedule stands in.
            self._auto_optimizer = dict(
                learning_rate=learning_rate, warmup_fraction=warmup_fraction,
                weight_decay=weight_decay, compile_kwargs=kwargs)
            optimizer = self._create_optimizer(total_steps=1)
        super().compile(optimizer=optimizer, **kwargs)

    def _create_optimizer(self, total_steps):
        settings = self._auto_optimizer
        return create_optimizer(
            settings["learning_rate"], total_steps=total_steps,
            warmup_steps=int(settings["warmup_fraction"] * total_steps),
            weight_decay=settings["weight_decay"])

    def fit(self, x=None, y=None, batch_size=None, epochs=1, shuffle=True,
            validation_data=None, steps_per_epoch=None, **kwargs):
        """`keras.Model.fit` that also takes python lists (or numpy arrays)
        of str as `x` (a tuple of two for pairs); labels `y` are int class
        ids (float scores for regression)."""
        dataset = self._dataset(x, y, batch_size, shuffle=shuffle)
        if validation_data is not None and not isinstance(
                validation_data, tf.data.Dataset):
            validation_data = self._dataset(*validation_data,
                                            batch_size=batch_size)
        if self._auto_optimizer is not None:
            if steps_per_epoch is None:
                steps_per_epoch = int(dataset.cardinality())
                if steps_per_epoch < 0:
                    raise ValueError(
                        "the dataset's length is unknown: pass "
                        "steps_per_epoch, or compile with an optimizer")
            super().compile(
                optimizer=self._create_optimizer(
                    max(1, steps_per_epoch * epochs)),
                **self._auto_optimizer["compile_kwargs"])
            self._auto_optimizer = None
        return super().fit(dataset, epochs=epochs, shuffle=False,
                           validation_data=validation_data,
                           steps_per_epoch=steps_per_epoch, **kwargs)

    def evaluate(self, x=None, y=None, batch_size=None, **kwargs):
        """`keras.Model.evaluate` that also takes lists of str (see `fit`)."""
        return super().evaluate(self._dataset(x, y, batch_size), **kwargs)

    def predict(self, x, batch_size=None, **kwargs):
        """Logits float32 [n, num_classes] for a list (or tuple of two
        lists) of str."""
        return super().predict(self._dataset(x, None, batch_size), **kwargs)

    def _dataset(self, x, y, batch_size, shuffle=False):
        """Batches `(x, y)` into a `tf.data.Dataset` (Keras' own array
        handling does not take strings); a dataset passes through."""
        if isinstance(x, tf.data.Dataset):
            return x
        if self.is_pair:
            if not (isinstance(x, (tuple, list)) and len(x) == 2):
                raise ValueError("a pair classifier takes x=(texts_a, texts_b)")
            x = dict(zip(PAIR_INPUTS, map(_texts, x)))
            count = int(x["text_a"].shape[0])
            if int(x["text_b"].shape[0]) != count:
                raise ValueError(f"x has {count} first and "
                                 f"{x['text_b'].shape[0]} second texts")
        else:
            x = _texts(x)
            count = int(x.shape[0])
        if y is not None:
            y = np.asarray(y)
            if len(y) != count:
                raise ValueError(f"{count} texts but {len(y)} labels")
            y = y.astype("float32" if self.num_classes == 1 else "int32")
        dataset = tf.data.Dataset.from_tensor_slices(
            x if y is None else (x, y))
        if shuffle:
            dataset = dataset.shuffle(count, reshuffle_each_iteration=True)
        return prefetch_for_keras(
            dataset.batch(batch_size or DEFAULT_BATCH_SIZE))

    def compile_from_config(self, config):
        # Keras' own version refuses models that override `compile`; the
        # stored arguments are exactly what `compile` takes.
        config = keras.saving.deserialize_keras_object(config)
        self.compile(**config)
        if self.built:
            self.optimizer.build(self.trainable_variables)

    def task_config(self):
        return {"is_pair": self.is_pair}


def _texts(values):
    """A list / numpy array of str (or bytes) -> tf.string [n]."""
    if isinstance(values, (str, bytes)):
        raise ValueError("texts must be a list of str, not one str")
    texts = tf.constant(list(values), tf.string)
    if texts.shape.rank != 1:
        raise ValueError(f"texts must be a flat list of str, got shape "
                         f"{texts.shape}")
    return texts


BertTextClassifier = loadable_as(TextClassifier, "BertTextClassifier")
