"""`EncoderTaskModel`: the Keras config of a model built on other Keras
objects (a `BertEncoder`, usually)."""

import keras


class EncoderTaskModel:
    """Mixin for `keras.Model`s whose constructor takes Keras objects, kept
    as attributes of the same names: `nested_objects` (by default
    `("encoder",)`, a `BertEncoder` at `self.encoder`). `get_config` stores
    them serialized beside `task_config()`, and `from_config` rebuilds them.

    Subclasses define `task_config()`: their other constructor arguments as
    a dict of plain values.
    """

    nested_objects = ("encoder",)

    def task_config(self):
        return {}

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
