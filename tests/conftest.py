"""Fixtures the test modules share: each expensive run happens once per session.

Nothing here imports TensorFlow at import time (the fast tier, tests/unit, loads this file
too): the fixtures that need it import it when they first run.

- `library_cases`: every built-in case, loaded once.
- `library_results`: every point of every built-in case run once in this process in the three
  core modes with default options: {case id: [Result per point]}.
- `seed_run`: one `python -m harness --mode=all --cases=seeds.*` run with a JSON and a JUnit
  report: (CompletedProcess, JSON path, JUnit path). Beside the reports, `processes.txt` records
  every Python process of the run (helpers.record_processes) and `tmp/` was its TMPDIR.
- `no_tensorflow`: an environment for subprocesses in which `import tensorflow` fails.

Plain helper functions are in tests/helpers.py: `harness(*args)` runs the CLI in a subprocess,
`run(case, modes)` judges a case in this process, `make_case`, `values`, `assert_usage_error`.

How a test module fits in:
- tests/unit/ is the fast tier: no TensorFlow, not even in subprocesses (tests/unit/conftest.py
  enforces it), no case run; hand-built records, parsing, rendering, the CLI's usage errors.
- tests/ is the rest. A test that needs the library's results takes `library_results` or
  `seed_run` instead of running the library or the seeds again; a test that judges a small case
  calls `helpers.run` (in this process, no workers).
- A test that starts TensorFlow in processes of its own (a CLI run that loads cases, a repro
  script, a SavedModel restorer) and takes more than a few seconds carries `@pytest.mark.slow`;
  the README's test command leaves it out, .ci/run runs it.
- Test modules import helpers from tests.helpers (or a helper module beside them, such as
  tests/unit/outcomes.py), never from another test module.
"""

import os

import pytest

from tests import helpers

CORE_MODES = ("eager", "function", "graph")

# Every harness run a test starts (and its workers) starts one worker before the cases are known,
# not two (harness.cli.settings.workers_at_once): the suite runs the harness hundreds of times,
# two tests at a time, where a second worker started ahead for a run of a few cases only takes a
# core from the other test. tests/test_no_process_left.py runs the default.
os.environ.setdefault("HARNESS_WORKERS_AT_ONCE", "1")

# tests/data holds case files and a user project with tests of its own (the recording tests run
# them on purpose); pytest does not collect them as the harness's tests.
collect_ignore = ["data"]


@pytest.fixture(scope="session")
def library_cases():
    from harness import loader

    return loader.builtin_cases()


@pytest.fixture(scope="session")
def library_results(library_cases):
    from harness.run_here import run_cases
    from harness.records import RunOptions

    found = {}
    for result in run_cases(library_cases, CORE_MODES,
                            RunOptions(), lambda c, p: f"rerun {c.id}[{p.label}]"):
        found.setdefault(result.case, []).append(result)
    return found


@pytest.fixture(scope="session")
def seed_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("seed_run")
    json_path, junit_path = folder / "r.json", folder / "r.xml"
    (folder / "tmp").mkdir()
    env = dict(os.environ, TMPDIR=str(folder / "tmp"))
    # As a user's shell has it: Python writes bytecode, which the run must not leave in TMPDIR.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    helpers.record_processes(env, folder)
    proc = helpers.harness("--mode=all", "--cases=seeds.*", f"--json_out={json_path}",
                           f"--junit_out={junit_path}", cwd=str(folder), env=env)
    return proc, json_path, junit_path


@pytest.fixture(scope="session")
def no_tensorflow(tmp_path_factory):
    return helpers.no_tensorflow_env(tmp_path_factory.mktemp("guard"))
