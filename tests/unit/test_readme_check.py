"""scripts/readme_check.py: what it runs of the README, in which order."""

import importlib.util
import re

from tests.helpers import ROOT

_spec = importlib.util.spec_from_file_location("readme_check", ROOT / "scripts" / "readme_check.py")
readme_check = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(readme_check)

README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_every_install_after_the_first_keeps_the_checkout_editable():
    # The README's first command installs a copy (what a newcomer runs, and what CI tries); any
    # later `pip install '.[extra]'` without -e would put a copy in place of the editable test
    # install, so that the checkout's edits no longer run.
    installs = [c for c in readme_check.readme_commands(README) if re.search(r"pip install .*'\.\[", c)]
    first, *later = installs
    assert "'.[keras]'" in first and "pip install -e" not in first
    assert later and all(re.search(r"pip install -e '\.\[\w+\]'", c) for c in later), later


def test_the_run_from_outside_the_checkout_comes_before_any_readme_command(tmp_path):
    todo = readme_check.plan(["pip install -e '.[explore]'", "python -m harness --list"], ["python -m harness x"],
                             tmp_path)
    assert todo[0] == ("python -m harness --mode all --cases 'seeds.*'", tmp_path)
    assert [c for c, _ in todo[1:]] == ["pip install -e '.[explore]'", "python -m harness --list",
                                        "python -m harness x"]
    assert all(where == readme_check.ROOT for _, where in todo[1:])
