"""`python -m harness ARGS` run in this process: its exit status, stdout and stderr, without
starting an interpreter that imports NumPy and absl again (about half a second each on two cores).

It takes the path harness/__main__.py takes, less the worker started ahead
(harness.process.head_start, whose tests start real processes): the harness's own flag parser (help,
and absl's errors as usage errors), then harness.cli.main, whose return value or SystemExit is the
exit status. The flags are restored afterwards (absl's flagsaver), and the command runs in `cwd`. In
the fast tier an import of TensorFlow here fails as it would in a subprocess
(tests/unit/conftest.py).
"""

import contextlib
import io
import os
import subprocess

from absl.testing import flagsaver

from tests.helpers import REPO


@contextlib.contextmanager
def _inside(folder):
    before = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(before)


def harness(*args, cwd=None) -> subprocess.CompletedProcess:
    """What `python -m harness ARGS` run in `cwd` (default: the checkout) exits with and prints."""
    from harness import cli
    from harness.cli import help as cli_help

    out, err = io.StringIO(), io.StringIO()
    with flagsaver.flagsaver(), _inside(cwd or REPO), contextlib.redirect_stdout(out), \
            contextlib.redirect_stderr(err):
        try:
            code = cli.main(cli_help.parse_flags(["harness", *args]))
        except SystemExit as e:
            code = e.code
    if code is None:
        code = 0
    elif not isinstance(code, int):  # sys.exit("message"): printed, status 1, as by the interpreter
        err.write(f"{code}\n")
        code = 1
    return subprocess.CompletedProcess(["python", "-m", "harness", *args], code, out.getvalue(),
                                       err.getvalue())
