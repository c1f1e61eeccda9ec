"""setup.cfg installs every package of the checkout: a subpackage it leaves out is missing from a
non-editable install (the README's own), though every test run from the checkout passes."""

import configparser

from tests.helpers import ROOT


def test_every_package_of_the_checkout_is_installed():
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    listed = {line.strip() for line in config["options"]["packages"].splitlines() if line.strip()}
    found = {
        ".".join(p.parent.relative_to(ROOT).parts)
        for p in (ROOT / "harness").rglob("__init__.py")
        if "cases" not in p.parent.relative_to(ROOT).parts
    }  # harness/cases: the link to cases/
    assert found <= listed, f"add to setup.cfg's packages: {sorted(found - listed)}"
    assert "harness.cases" in listed
