"""A reusable SavedModel object: the callable root (or sub-object) that
`hub.load` returns and `hub.KerasLayer(..., trainable=True)` fine-tunes."""

import tensorflow as tf


def tf_variables(variables):
    """The `tf.Variable`s behind Keras variables: those are what the traced
    functions capture, so they are what the SavedModel must track."""
    values = [variable.value for variable in variables]
    for variable, value in zip(variables, values):
        if not isinstance(value, tf.Variable):
            raise TypeError(f"{variable.path} is not backed by a tf.Variable "
                            "(is a dtype policy autocasting it?)")
    return values


def reusable_object(call, input_spec, variables):
    """A trackable callable with the attributes `hub.KerasLayer` fine-tunes:
    `obj(inputs, training=False)`, `obj.variables`,
    `obj.trainable_variables`, `obj.regularization_losses` (empty).

    `call(inputs, training)` is traced for both `training` values on
    `input_spec` (a `tf.TensorSpec` or a nest of them). Every variable it
    reads must be in `variables` (dropout seed states included): a
    SavedModel function may only capture tracked variables.
    """
    reusable = tf.train.Checkpoint()
    values = tf_variables(variables)
    reusable.variables = values
    reusable.trainable_variables = [v for v in values if v.trainable]
    reusable.regularization_losses = []

    @tf.function(autograph=False)
    def call_function(inputs, training=False):
        return call(inputs, training)

    for training in (False, True):
        call_function.get_concrete_function(input_spec, training=training)
    reusable.__call__ = call_function
    return reusable
