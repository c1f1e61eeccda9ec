"""Two logical CPU devices for the keras_mirrored mode, made before TensorFlow initialises its
devices.

`tf.distribute.MirroredStrategy` needs two devices to split a batch; on a machine with one CPU and
no accelerator TensorFlow has one. TensorFlow fixes its logical devices once its runtime starts
(`set_logical_device_configuration` raises RuntimeError after that), so a worker calls `split_cpu`
as it starts, before any case runs. A process that imported TensorFlow and ran ops already (a
caller of harness.check, `--inprocess`) keeps the devices it has, and keras_mirrored says why it
skips. Every other mode places its ops on CPU:0 as before.
"""

from __future__ import annotations

__all__ = ["split_cpu", "logical_cpus", "cpu_names", "unsplit_reason"]

def split_cpu() -> bool:
    """Splits the first physical CPU into two logical devices; False (and why, kept) when TensorFlow
    has already initialised its devices."""
    import tensorflow as tf  # noqa: PLC0415

    cpus = tf.config.list_physical_devices("CPU")
    try:
        if len(tf.config.get_logical_device_configuration(cpus[0]) or ()) >= 2:
            return True
        tf.config.set_logical_device_configuration(
            cpus[0], [tf.config.LogicalDeviceConfiguration()] * 2
        )
    except RuntimeError:  # the runtime has started: its devices are fixed
        return False
    return True


def logical_cpus() -> int:
    import tensorflow as tf  # noqa: PLC0415

    return len(tf.config.list_logical_devices("CPU"))


def cpu_names() -> list[str]:
    import tensorflow as tf  # noqa: PLC0415

    return [d.name for d in tf.config.list_logical_devices("CPU")]


def unsplit_reason(count: int) -> str:
    """Why keras_mirrored does not run in this process, which has `count` logical CPU devices."""
    return (f"needs two logical CPU devices for MirroredStrategy, and this process has {count}: "
            "TensorFlow had initialised its devices before the harness could split the CPU (a "
            "worker splits it as it starts; in-process runs, --inprocess and harness.check keep "
            "the process's devices)")
