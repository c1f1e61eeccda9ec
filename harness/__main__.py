"""Runs TensorFlow custom-gradient cases in eager mode, in tf.function and in
tf.compat.v1 Session/tf.gradients mode, to the case's derivative order, and
judges whether the modes agree.

Usage:
  python -m harness --mode all                 # every built-in case, three modes
  python -m harness --list                     # case ids and what each shows
  python -m harness --cases 'seeds.*' --json_out report.json

Exit status: 0 when every verdict is pass, xfail, xpass or skip; 1 when any is
fail, flaky, error, crash or timeout; 2 for a usage error.
"""

if __name__ == "__main__":
    # Inside the guard, so importing this module starts nothing. (A worker, started with
    # multiprocessing's spawn, does not import it: spawn skips a main module named *.__main__.)
    import sys

    from harness.process import head_start

    head_start.start(sys.argv[1:])  # the first worker imports TensorFlow while the flags are read
    from harness.cli import entry

    entry()
