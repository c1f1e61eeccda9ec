"""The TensorFlow pin table, and the CI workflow that runs the matrix with it. No TensorFlow."""

import inspect
import json
import re
import subprocess
import sys

import pytest

from harness.matrix import outputs, pins
from tests.helpers import ROOT

WORKFLOW = ROOT / ".github" / "workflows" / "matrix.yml"
FACTS = ROOT.parent / "shared" / "FACTS.md"

# shared/FACTS.md, transcribed: TensorFlow release -> (tf-keras, the NumPy versions that must be
# refused or allowed).
MEASURED = {
    "2.12.1": None, "2.13.1": None, "2.14.1": "2.14.1", "2.15.1": "2.15.1", "2.16.2": "2.16.0",
    "2.17.1": "2.17.0", "2.18.1": "2.18.0", "2.19.1": "2.19.0", "2.20.0": "2.20.1",
    "2.21.0": "2.21.0",
}


def release(text):
    return tuple(int(p) for p in text.split("."))


def allows(specifier, version):
    """Whether a one-clause NumPy specifier such as "<2.1" or ">=1.26" admits `version`."""
    op, bound = re.fullmatch(r"(<|>=)(\d+(?:\.\d+)*)", specifier).groups()
    v, b = release(version), release(bound)
    width = max(len(v), len(b))
    v, b = v + (0,) * (width - len(v)), b + (0,) * (width - len(b))
    return v < b if op == "<" else v >= b


def numpy_of(version):
    (req,) = [r for r in pins.requirements(version) if r.startswith("numpy")]
    return req[len("numpy"):]


@pytest.mark.parametrize("version, tf_keras", MEASURED.items())
def test_requirements_pin_tensorflow_and_the_measured_tf_keras(version, tf_keras):
    found = pins.requirements(version)
    assert found[0] == f"tensorflow=={version}"
    assert not any(r.startswith("tensorflow-cpu") for r in found)
    keras = [r for r in found if r.startswith("tf-keras")]
    assert keras == ([f"tf-keras=={tf_keras}"] if tf_keras else [])


# PyPI's upload dates (https://pypi.org/pypi/<name>/json, read 2026-12-03): each TensorFlow minor
# release's first, and every Keras 3 release's (3.12.x patches after 3.13.0 left out: a newer line
# was out by then).
_TF_MINOR_FIRST = {(2, 16): "2024-03-09", (2, 17): "2024-07-11", (2, 18): "2024-10-25",
                   (2, 19): "2025-03-12", (2, 20): "2025-08-13", (2, 21): "2026-03-06"}
_KERAS3 = {"3.3.3": "2024-04-26", "3.4.0": "2024-06-25", "3.4.1": "2024-06-26",
           "3.5.0": "2024-08-12", "3.6.0": "2024-10-03", "3.7.0": "2024-11-26",
           "3.8.0": "2025-01-07", "3.9.0": "2025-03-04", "3.9.2": "2025-04-02",
           "3.10.0": "2025-05-19", "3.11.2": "2025-08-11", "3.11.3": "2025-08-21",
           "3.12.0": "2025-10-27", "3.13.2": "2026-01-30", "3.14.0": "2026-04-03",
           "3.15.1": "2026-07-29"}


@pytest.mark.parametrize("version", sorted(pins.PINS))
def test_keras3_is_pinned_to_the_newest_release_while_its_tensorflow_was_newest(version):
    minor = release(version)[:2]
    if minor < (2, 16):  # TensorFlow's own Keras 2 is its `keras`
        assert pins.PINS[version].keras3 is None
        assert not any(r.startswith("keras==") for r in pins.requirements(version))
        return
    until = _TF_MINOR_FIRST.get((minor[0], minor[1] + 1), "9999")
    newest = max((k for k, day in _KERAS3.items() if day < until), key=release)
    assert pins.PINS[version].keras3 == newest
    assert f"keras=={newest}" in pins.requirements(version)


def test_every_tf_keras_pin_is_of_its_tensorflows_minor_release():
    for version, pin in pins.PINS.items():
        if pin.tf_keras is not None:
            assert release(pin.tf_keras)[:2] == release(version)[:2], version


@pytest.mark.parametrize("version", sorted(pins.PINS))
def test_numpy_limits_follow_each_release(version):
    spec, minor = numpy_of(version), release(version)[:2]
    assert allows(spec, "1.26.4"), "every release here runs on NumPy 1.26"
    if minor <= (2, 17):
        assert not allows(spec, "2.0.0")
    elif minor == (2, 18):
        assert allows(spec, "2.0.2") and not allows(spec, "2.1.0")
    elif minor == (2, 19):
        assert allows(spec, "2.1.3") and not allows(spec, "2.2.0")
    else:
        assert allows(spec, "2.4.6")


def test_an_unknown_version_is_refused_naming_it_and_the_known_ones():
    with pytest.raises(pins.PinError) as caught:
        pins.requirements("2.99.0")
    assert (
        "'2.99.0'" in str(caught.value)
        and "2.16.2" in str(caught.value)
        and "PINS" in str(caught.value)
    )
    assert isinstance(caught.value, ValueError)


@pytest.mark.parametrize("version", ["2.22.0", "2.21.1", "2.23.0-dev20261026", "2.11.0"])
def test_a_version_outside_the_table_is_said_untested_in_one_line_naming_the_table(version):
    said = pins.untested(version)
    assert said.startswith(f"TensorFlow {version} is ") and "\n" not in said
    assert "untested" in said and "harness/matrix/pins.py" in said
    assert f"{pins.versions()[0]} to {pins.versions()[-1]}" in said
    assert ("nightly build" in said) == ("dev" in version)


@pytest.mark.parametrize("version", pins.versions())
def test_a_release_of_the_table_is_not_said_untested(version):
    assert pins.untested(version) == ""


def test_setup_cfg_sets_no_upper_bound_and_leaves_tensorflow_to_an_extra():
    # A requirement on the `tensorflow` distribution would install a second TensorFlow over
    # tf-nightly; an upper bound would refuse tomorrow's release.
    import configparser

    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    required = config["options"]["install_requires"].split()
    assert not any(r.startswith(("tensorflow", "tf-keras")) for r in required), required
    for extra, text in config["options.extras_require"].items():
        for line in filter(None, (ln.strip() for ln in text.splitlines())):
            if line.startswith(("tensorflow", "tf-keras")):
                assert "<" not in line, (extra, line)
    assert config["options.extras_require"]["tensorflow"].split() == ["tensorflow>=2.12"]


def test_versions_are_sorted_by_release():
    assert pins.versions() == sorted(pins.PINS, key=release)
    assert pins.versions()[-1] == "2.21.0"


@pytest.mark.skipif(not FACTS.is_file(), reason="shared/FACTS.md is not beside this checkout")
def test_every_release_in_facts_has_a_pin():
    rows = re.findall(r"^\| (2\.\d+\.[\dx]+(?:, 2\.\d+\.[\dx]+)*) \| ([^|]+) \|",
                      FACTS.read_text(), re.M)
    assert rows, "the FACTS table was not found"
    for versions, keras in rows:
        for version in versions.split(", "):
            matching = [v for v in pins.PINS
                        if re.fullmatch(version.replace(".", r"\.").replace("x", r"\d+"), v)]
            assert matching, f"FACTS lists TensorFlow {version}, which has no pin"
            for v in matching:
                expected = None if keras.startswith("none") else keras.strip()
                assert pins.PINS[v].tf_keras == expected, v


@pytest.mark.subprocess
def test_pins_runs_as_a_script_with_the_standard_library_only():
    # -S -I: no site-packages, no user paths: what CI has before anything is installed.
    done = subprocess.run([sys.executable, "-S", "-I",
                           str(ROOT / "harness" / "matrix" / "pins.py"), "2.16.2"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["tensorflow==2.16.2", "tf-keras==2.16.0", "keras==3.4.1",
                                        "numpy<2"]
    refused = subprocess.run([sys.executable, "-S", "-I",
                              str(ROOT / "harness" / "matrix" / "pins.py"), "9.9"],
                             capture_output=True, text=True, timeout=60)
    assert refused.returncode != 0 and "no pins for TensorFlow '9.9'" in refused.stderr


# --- the CI workflow ------------------------------------------------------------------------------

def workflow_text():
    return WORKFLOW.read_text(encoding="utf-8")


def run_lines():
    """Each shell command of the workflow: `run: X` lines and the lines of `run: |` blocks."""
    lines, block = [], None
    for line in workflow_text().splitlines():
        indent = len(line) - len(line.lstrip())
        if block is not None and (not line.strip() or indent > block):
            if line.strip() and not line.strip().startswith("#"):
                lines.append(line.strip())
            continue
        block = None
        match = re.match(r"\s*(?:- )?run:\s*(.*)$", line)
        if match:
            if match.group(1) == "|":
                block = indent
            else:
                lines.append(match.group(1))
    return lines


def test_workflow_parses_as_yaml_with_the_expected_jobs():
    yaml = pytest.importorskip("yaml",
                               reason="PyYAML is not installed; the structural tests below still "
                                      "run")
    data = yaml.safe_load(workflow_text())
    assert set(data["jobs"]) == {"versions", "run", "merge"}
    assert data["jobs"]["run"]["needs"] == "versions" and data["jobs"]["merge"]["needs"] == "run"
    # The job matrix is the pin table's, read by the first job: no release is written twice.
    matrix = data["jobs"]["run"]["strategy"]["matrix"]
    assert matrix["tensorflow"] == "${{ fromJSON(needs.versions.outputs.versions) }}"
    assert matrix["python"] == ["3.11"], "FACTS measured these releases on Python 3.11"
    steps = data["jobs"]["versions"]["steps"]
    assert any("python harness/matrix/pins.py --list" in step.get("run", "") for step in steps)
    triggers = data.get(True, data.get("on"))  # YAML 1.1 reads the bare key `on` as True
    assert set(triggers) == {"workflow_dispatch", "schedule"}, "weekly and by hand"


@pytest.mark.subprocess
def test_pins_list_is_every_release_as_json():
    done = subprocess.run([sys.executable, "-S", "-I",
                           str(ROOT / "harness" / "matrix" / "pins.py"), "--list"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == pins.versions() == list(MEASURED)


def test_workflow_caches_the_downloads_per_release():
    text = workflow_text()
    assert "uses: actions/cache@v4" in text and "path: ~/.cache/pip" in text
    key = re.search(r"\n\s*key: (.+)", text).group(1)
    assert "${{ matrix.tensorflow }}" in key and "hashFiles('harness/matrix/pins.py')" in key


def test_workflow_uses_the_pinned_action_versions():
    uses = set(re.findall(r"uses:\s*(\S+)", workflow_text()))
    assert uses == {"actions/checkout@v4", "actions/setup-python@v5", "actions/cache@v4",
                    "actions/upload-artifact@v4", "actions/download-artifact@v4"}


def test_workflow_installs_each_release_from_the_pin_table():
    assert 'python harness/matrix/pins.py "${{ matrix.tensorflow }}"' in workflow_text(), \
        "the pins must come from the one table, not be copied"


def test_workflow_runs_the_documented_harness_commands():
    lines = run_lines()
    runs = [line for line in lines if line.startswith("python -m harness ")
            and " merge " not in line]
    assert runs == ['python -m harness --mode full,keras,keras3 --json_out '
                    '"$GITHUB_WORKSPACE/report-${{ matrix.tensorflow }}.json"']
    flags_page = (ROOT / "docs" / "running.md").read_text(encoding="utf-8")
    for flag in re.findall(r"(--\w+)", runs[0]):
        assert f"`{flag}`" in flags_page, f"{flag} is not in docs/running.md's flag table"
    assert "python -m harness --mode all" in (ROOT / "README.md").read_text(encoding="utf-8")
    merges = [line for line in lines if line.startswith("python -m harness merge")]
    assert merges == [("python -m harness merge report-*.json --markdown_out matrix.md --html_out "
                       "matrix.html --json_out matrix.json")]
    # Each merge flag is a parameter of the function the CLI hands it to.
    parameters = inspect.signature(outputs.main).parameters
    for flag in re.findall(r"--(\w+)", merges[0]):
        assert flag in parameters
    assert 'cat matrix.md >> "$GITHUB_STEP_SUMMARY"' in lines


def test_workflow_installs_this_package_without_dependencies_and_keeps_failed_reports():
    text = workflow_text()
    assert "pip install --disable-pip-version-check --no-deps ." in text
    assert "if: ${{ !cancelled() }}" in text
    assert "fail-fast: false" in text
    assert "\t" not in text, "YAML forbids tabs for indentation"
