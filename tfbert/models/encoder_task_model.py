"""`EncoderTaskModel`: the Keras config of a model built on a `BertEncoder`."""

import keras


class EncoderTaskModel:
    """Mixin for `keras.Model`s whose first constructor argument is a
    `BertEncoder` (`self.encoder`): `get_config` stores the encoder
    serialized beside `task_config()`, and `from_config` rebuilds it.

    Subclasses define `task_config()`: their other constructor arguments as
    a dict of plain values.
    """

    def task_config(self):
        return {}

    def get_config(self):
        return {"encoder": keras.saving.serialize_keras_object(self.encoder),
                **self.task_config(),
                "name": self.name, "trainable": self.trainable}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["encoder"] = keras.saving.deserialize_keras_object(
            config["encoder"])
        return cls(**config)
