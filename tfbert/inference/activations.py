"""Activations for inference graphs, by `BertConfig.hidden_act` name."""

from tfbert.layers.activations import gelu_erf, get_activation


def inference_activation(name):
    """The activation `name` (see `get_activation`) with the same values and
    no custom gradient: right after a matmul and bias add, TensorFlow's
    oneDNN graph rewrite fuses the three into one kernel, which a custom
    gradient's IdentityN prevents."""
    return gelu_erf if name == "gelu" else get_activation(name)
