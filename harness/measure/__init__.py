"""What a worker does: measure one case in every mode, consult the oracles, probe
whether the custom gradient ran. TensorFlow is imported here and nowhere above."""
