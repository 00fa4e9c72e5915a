"""`EncoderTaskModel`: the Keras config of a model built on other Keras
objects (a `BertEncoder`, usually), and saving it without optimizer state."""

import keras


class EncoderTaskModel:
    """Mixin for `keras.Model`s whose constructor takes Keras objects, kept
    as attributes of the same names: `nested_objects` (by default
    `("encoder",)`, a `BertEncoder` at `self.encoder`). `get_config` stores
    them serialized beside `task_config()`, and `from_config` rebuilds them.

    Subclasses define `task_config()`: their other constructor arguments as
    a dict of plain values. (Their TF Serving export is
    `tfbert.export.export_for_serving(model, ...)`.)

    A model with a head states it once, for its Keras forward and for
    `tfbert.inference.task_outputs` alike:
      `head_outputs(encoder_outputs, inputs, training=None)`: the model's
        outputs from its encoder's outputs dict (`sequence_output`, with a
        pooler `pooled_output`) and its token-id inputs;
      `first_token_head`: True when the head reads position 0 of
        `sequence_output` only (inference then computes the last block
        for that position only);
      `encoder_inputs(inputs)`: the encoder's input dict for the model's
        token-id inputs (the inputs themselves by default).

    Such a model's `predict` (and `predict_on_batch`) runs on the
    TensorFlow backend in float32 without XLA through
    `tfbert.inference.task_outputs`, the exports' fused forms of the same
    weights (equal to the Keras forward within 1e-5, faster on CPUs); on
    other backends, dtype policies and with `jit_compile`, and for models
    over raw strings, it runs the Keras forward.
    """

    nested_objects = ("encoder",)
    first_token_head = False
    # Whether `predict` may run `tfbert.inference` (models whose inputs are
    # token ids; raw-text models set False).
    predicts_on_inference_path = True

    def encoder_inputs(self, inputs):
        return inputs

    def predict_step(self, data):
        if not (self.predicts_on_inference_path
                and hasattr(self, "head_outputs")
                and keras.backend.backend() == "tensorflow"
                and not getattr(self, "jit_compile", False)
                and self.compute_dtype == "float32"
                and self.encoder.compute_dtype == "float32"):
            return super().predict_step(data)
        # Deferred: tfbert.inference is TensorFlow code, and these models
        # also run on the JAX backend without TensorFlow.
        from tfbert.inference import task_outputs

        x, _, _ = keras.utils.unpack_x_y_sample_weight(data)
        return task_outputs(self, x)

    def task_config(self):
        return {}

    def save(self, filepath, overwrite=True, include_optimizer=True,
             **kwargs):
        """`keras.Model.save`; with `include_optimizer=False` the file holds
        the model and its weights without optimizer state or compile
        settings (a fine-tuned model's file shrinks to the size of its
        weights). That saves an uncompiled copy, which needs the memory of
        a second set of weights while it is written."""
        if include_optimizer or getattr(self, "optimizer", None) is None:
            return super().save(filepath, overwrite=overwrite, **kwargs)
        copy = type(self).from_config(self.get_config())
        copy.set_weights(self.get_weights())
        return copy.save(filepath, overwrite=overwrite, **kwargs)

    def get_config(self):
        return {**{name: keras.saving.serialize_keras_object(
                    getattr(self, name)) for name in self.nested_objects},
                **self.task_config(),
                "name": self.name, "trainable": self.trainable}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        for name in cls.nested_objects:
            config[name] = keras.saving.deserialize_keras_object(config[name])
        return cls(**config)


def loadable_as(cls, old_name):
    """Returns `cls`, and makes `.keras` files that name it by `old_name`
    (its name before the task models were named by role, e.g.
    "BertClassifier") load.

    They load as instances of a subclass of `cls` called `old_name`: Keras
    keys the weights of a model nested in another (a `TextClassifier`'s
    classifier) by its class name, which must be the file's.
    """
    saved_as = type(old_name, (cls,), {
        "__module__": cls.__module__,
        "__doc__": f"A `{cls.__name__}` read from a file that names it "
                   f"`{old_name}`."})
    keras.saving.register_keras_serializable(package="tfbert",
                                             name=old_name)(saved_as)
    return cls
