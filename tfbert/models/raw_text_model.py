"""`RawTextModel`: what the Keras models whose inputs are raw strings share
(`BertTextClassifier`, `SentenceEncoder`): `compile()` with BERT's
fine-tuning optimizer sized by the next `fit`, and `fit` / `evaluate` /
`predict` on python lists of str."""

import keras
import tensorflow as tf

from tfbert.training.optimization import create_optimizer


class RawTextModel:
    """Mixin for a `keras.Model` over raw strings.

    A subclass defines `_dataset(x, y, batch_size, shuffle=False)` (lists
    of str, or a `tf.data.Dataset` passed through, to a batched dataset) and
    `_default_loss_and_metrics(loss, metrics)` (the "auto" choices); it may
    override `_training_batches` (the training data of `fit`).
    """

    # `predict` runs the Keras forward, tokenizer included
    # (`EncoderTaskModel`).
    predicts_on_inference_path = False

    def compile(self, optimizer="auto", loss="auto", metrics="auto",
                learning_rate=2e-5, warmup_fraction=0.1, weight_decay=0.01,
                **kwargs):
        """`keras.Model.compile` with defaults for fine-tuning.

        Args:
          optimizer: "auto" for `tfbert.training.create_optimizer` AdamW
            whose warmup (`warmup_fraction` of the steps) and linear decay
            span the next `fit` call; or any Keras optimizer.
          loss, metrics: "auto" for the model's own (see its class
            docstring), or any Keras loss / metrics.
          learning_rate, warmup_fraction, weight_decay: of the "auto"
            optimizer.
          **kwargs: passed on (`jit_compile` defaults to False: string ops
            cannot be XLA-compiled).
        """
        loss, metrics = self._default_loss_and_metrics(loss, metrics)
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
        of str as `x` (see the model's `_dataset`)."""
        dataset, num_batches = self._training_batches(x, y, batch_size,
                                                      shuffle)
        if (steps_per_epoch is None and int(dataset.cardinality())
                == tf.data.INFINITE_CARDINALITY):
            steps_per_epoch = num_batches
        if validation_data is not None and not isinstance(
                validation_data, tf.data.Dataset):
            validation_data = self._dataset(*validation_data,
                                            batch_size=batch_size)
        if getattr(self, "_auto_optimizer", None) is not None:
            num_batches = steps_per_epoch or num_batches
            if num_batches < 0:
                raise ValueError(
                    "the dataset's length is unknown: pass "
                    "steps_per_epoch, or compile with an optimizer")
            super().compile(
                optimizer=self._create_optimizer(
                    max(1, num_batches * epochs)),
                **self._auto_optimizer["compile_kwargs"])
            self._auto_optimizer = None
        return super().fit(dataset, epochs=epochs, shuffle=False,
                           validation_data=validation_data,
                           steps_per_epoch=steps_per_epoch, **kwargs)

    def _training_batches(self, x, y, batch_size, shuffle):
        """`(dataset, batches per epoch)` for `fit` (-1: unknown); an
        endless dataset is read for that many batches an epoch."""
        dataset = self._dataset(x, y, batch_size, shuffle=shuffle)
        return dataset, int(dataset.cardinality())

    def evaluate(self, x=None, y=None, batch_size=None, **kwargs):
        """`keras.Model.evaluate` that also takes lists of str (see `fit`)."""
        return super().evaluate(self._dataset(x, y, batch_size), **kwargs)

    def predict(self, x, batch_size=None, **kwargs):
        """`keras.Model.predict` that also takes lists of str."""
        return super().predict(self._dataset(x, None, batch_size), **kwargs)

    def compile_from_config(self, config):
        # Keras' own version refuses models that override `compile`; the
        # stored arguments are exactly what `compile` takes.
        config = keras.saving.deserialize_keras_object(config)
        self.compile(**config)
        if self.built:
            self.optimizer.build(self.trainable_variables)


def texts_tensor(values):
    """A list / numpy array of str (or bytes) -> tf.string [n]."""
    if isinstance(values, (str, bytes)):
        raise ValueError("texts must be a list of str, not one str")
    texts = tf.constant(list(values), tf.string)
    if texts.shape.rank != 1:
        raise ValueError(f"texts must be a flat list of str, got shape "
                         f"{texts.shape}")
    return texts
