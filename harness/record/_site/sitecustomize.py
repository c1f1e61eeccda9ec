"""Started by `python -m harness record DIR -- CMD`: records this Python process
(harness.record.hook), then runs the sitecustomize this one stands in front of, if there is one.

Only this folder is on PYTHONPATH: the harness is found through $HARNESS_RECORD_PATH, appended
to sys.path where the process's own packages do not already hold it, so the command's own
packages always come first."""

import importlib.machinery
import importlib.util
import os
import sys

try:
    if importlib.util.find_spec("harness") is None and os.environ.get("HARNESS_RECORD_PATH"):
        sys.path.append(os.environ["HARNESS_RECORD_PATH"])
    from harness.record import hook

    hook.start()
except Exception as e:  # noqa: BLE001 - the user's command runs whatever happens here
    sys.stderr.write(f"harness record: warning: not recording ({type(e).__name__}: {e})\n")

_here = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.machinery.PathFinder.find_spec(
    "sitecustomize", [p for p in sys.path if os.path.abspath(p or ".") != _here])
if _spec is not None and _spec.loader is not None:
    _module = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_module)
