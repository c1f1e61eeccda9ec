"""Recording the custom gradients a test suite runs, and replaying them as cases.

- `store`: the recorded folder's format (schema harness.recorded/1): recorded.json with
  the functions, their points and what was dropped, and one .npy file per recorded value.
- `recorder`: the hook around `tf.custom_gradient` that sees every decorated function and
  keeps a few of its calls; installed only when recording is asked for.
- `plugin`: the pytest plugin (`--harness-record=DIR`), inert without that flag.
- `hook`: the same recorder for any Python process, started through the environment
  (`python -m harness record DIR -- CMD ...`).
- `serial`: copies of functions that cannot be imported by name (closures, a test's own).
- `replay`: the recorded functions as harness Cases, built in a worker.
- `check`: `pytest --harness-check`, the recording replayed at the session's end and its points
  reported to pytest as tests of their own.
- `expectations`: the reviewed file of a project's known deviations, and writing it from a run.

Importing this package, `store` or `plugin` imports no TensorFlow.
"""
