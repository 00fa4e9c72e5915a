"""Put this folder first on PYTHONPATH to run a benchmark as on a machine
without the test extras jax and scikit-learn: installed, TensorFlow imports
jax (`tensorflow.lite.python.util`) and Keras imports sklearn and scipy (its
scikit-learn wrapper), which adds to a process's memory. TensorFlow, Keras
and tfbert import without them. torch cannot run under it (its dynamo
probes sklearn with `importlib.util.find_spec`, which this refuses)."""

import importlib.abc
import sys

_HIDDEN = ("jax", "jaxlib", "sklearn")


class _HideTestExtras(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in _HIDDEN:
            raise ModuleNotFoundError(f"{name} is hidden by "
                                      "benchmarks/hide_test_extras")
        return None


sys.meta_path.insert(0, _HideTestExtras())
