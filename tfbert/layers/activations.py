"""Activation functions by the names `BertConfig.hidden_act` uses."""

import keras


def gelu(x):
    """GELU in its exact erf form, as Google's and HF's BERT compute it."""
    return keras.activations.gelu(x, approximate=False)


def gelu_approximate(x):
    """GELU in its tanh approximation (TF Hub, Model Garden, keras-hub)."""
    return keras.activations.gelu(x, approximate=True)


_ACTIVATIONS = {
    "gelu": gelu,
    "gelu_approximate": gelu_approximate,
    "relu": keras.activations.relu,
}


def get_activation(name):
    """Returns the activation function called `name`."""
    try:
        return _ACTIVATIONS[name]
    except KeyError:
        raise ValueError(
            f"unknown activation {name!r}; expected one of {sorted(_ACTIVATIONS)}"
        ) from None
