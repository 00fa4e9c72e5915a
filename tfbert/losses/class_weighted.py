"""A class-weighted cross-entropy, for classifiers of skewed data."""

import keras
import tensorflow as tf


@keras.saving.register_keras_serializable(package="tfbert")
class WeightedSparseCategoricalCrossentropy(keras.losses.Loss):
    """Cross-entropy on logits, each example's loss times its class's weight.

    Args:
      class_weights: float [classes].
    """

    def __init__(self, class_weights, name="weighted_crossentropy", **kwargs):
        super().__init__(name=name, **kwargs)
        self.class_weights = [float(w) for w in class_weights]

    def call(self, y_true, y_pred):
        """y_true: int [batch] class ids; y_pred: logits [batch, classes].
        Returns float32 [batch]."""
        y_true = tf.cast(tf.reshape(y_true, [-1]), tf.int32)
        loss = keras.losses.sparse_categorical_crossentropy(
            y_true, tf.cast(y_pred, tf.float32), from_logits=True)
        return loss * tf.gather(tf.constant(self.class_weights), y_true)

    def get_config(self):
        return {**super().get_config(), "class_weights": self.class_weights}
