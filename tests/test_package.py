"""`import tfbert`: what it registers with Keras and what it leaves out."""

import pytest

CHECK_IMPORT = r"""
import importlib, inspect, json, pkgutil, sys
import keras
import tfbert

registered = {k for k in keras.saving.get_custom_objects() if k.startswith("tfbert>")}
optional = [m for m in ("keras_hub", "safetensors", "torch", "transformers",
                        "sentence_transformers") if m in sys.modules]
kinds = (keras.layers.Layer, keras.optimizers.Optimizer, keras.metrics.Metric,
         keras.losses.Loss, keras.optimizers.schedules.LearningRateSchedule)
keras_classes = set()
for info in pkgutil.walk_packages(tfbert.__path__, "tfbert."):
    module = importlib.import_module(info.name)
    for name, obj in vars(module).items():
        if (inspect.isclass(obj) and obj.__module__ == info.name
                and issubclass(obj, kinds) and not name.startswith("_")):
            keras_classes.add(f"tfbert>{name}")
print(json.dumps({"optional": optional,
                  "unregistered": sorted(keras_classes - registered),
                  "classes": len(keras_classes)}))
"""


@pytest.mark.slow
def test_import_registers_every_keras_class_and_no_optional_package(
        run_fresh_python):
    result = run_fresh_python(CHECK_IMPORT)
    assert result["optional"] == []
    assert result["unregistered"] == []
    assert result["classes"] >= 20
