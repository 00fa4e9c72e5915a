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
