"""`import tfbert`: what it registers with Keras and what it leaves out."""

import os
import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT

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


@pytest.mark.skipif(os.path.exists("/dev/nvidia0"),
                    reason="the promise is for machines without a GPU")
def test_import_writes_nothing_to_stderr():
    # TensorFlow's own default verbosity, and its first op after the import.
    env = {name: value for name, value in os.environ.items()
           if name != "TF_CPP_MIN_LOG_LEVEL"}
    env["PYTHONPATH"] = str(REPO_ROOT)
    result = subprocess.run(
        [sys.executable, "-c",
         "import tfbert, tensorflow as tf; print(int(tf.constant(1) + 1))"],
        env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout == "2\n"
    assert result.stderr == ""
