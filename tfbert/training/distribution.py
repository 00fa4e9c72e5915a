"""tf.distribute strategies by `--distribution_strategy` name."""

import tensorflow as tf

STRATEGIES = ("one_device", "mirrored", "multi_worker_mirrored", "tpu")


def split_cpu(num_devices):
    """Splits the host CPU into `num_devices` logical devices, so a
    `MirroredStrategy` can be exercised without GPUs. Must run before
    TensorFlow initialises its devices."""
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * num_devices)


def get_strategy(name="one_device", num_gpus=None, tpu=None):
    """Returns a `tf.distribute.Strategy`.

    Args:
      name: "one_device" (the first GPU; with none, TensorFlow's default
        strategy: the CPU, without distribution), "mirrored" (all local GPUs,
        or `num_gpus` of them; all logical CPUs when there is no GPU),
        "multi_worker_mirrored" (reads `TF_CONFIG` from the environment) or
        "tpu".
      num_gpus: GPUs to mirror over; None for all.
      tpu: TPU address or name for "tpu" ("" or "local" for a TPU VM).
    """
    if name not in STRATEGIES:
        raise ValueError(f"distribution_strategy must be one of {STRATEGIES}, "
                         f"got {name!r}")
    if name == "multi_worker_mirrored":
        # Before anything lists devices: that would start the runtime, and
        # collective ops must be configured before it starts.
        return tf.distribute.MultiWorkerMirroredStrategy()
    if name == "tpu":
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(
            tpu="" if tpu in (None, "local") else tpu)
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
        return tf.distribute.TPUStrategy(resolver)
    gpus = tf.config.list_logical_devices("GPU")
    if num_gpus is not None:
        if num_gpus > len(gpus):
            raise ValueError(f"num_gpus={num_gpus} but only {len(gpus)} GPUs "
                             "are visible")
        gpus = gpus[:num_gpus]
    if name == "one_device":
        # On the CPU a OneDeviceStrategy only adds a per-device copy of each
        # batch (a MultiDeviceIterator), whose iterators run tf.data's
        # autotuning thread whatever the dataset's options say (see
        # `tfbert.data.batching.prefetch_for_keras`).
        return (tf.distribute.OneDeviceStrategy(gpus[0].name) if gpus
                else tf.distribute.get_strategy())
    devices = [d.name for d in gpus or tf.config.list_logical_devices("CPU")]
    return tf.distribute.MirroredStrategy(devices)
