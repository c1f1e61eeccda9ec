"""What a --versions names, the order builds lie in, and the nightly's index and pins. No
TensorFlow, no network: the index is a folder of pages written here."""

import json
import re

import pytest

from harness.matrix import builds, nightly, pins

RELEASES = pins.versions()


# -- --versions ------------------------------------------------------------------------------------

def test_a_comma_list_names_each_release_once_in_the_order_given():
    assert builds.expand("2.21.0, 2.16.2,2.21.0", RELEASES) == ["2.21.0", "2.16.2"]


def test_all_is_every_release_of_the_pin_table():
    assert builds.expand("all", RELEASES) == RELEASES


@pytest.mark.parametrize("text, expected", [
    # A minor end takes every patch of it in the table; both ends are included.
    ("2.16..2.18", ["2.16.2", "2.17.1", "2.18.1"]),
    ("2.16.2..2.18.1", ["2.16.2", "2.17.1", "2.18.1"]),
    ("2.20..2.21", ["2.20.0", "2.21.0"]),
    ("2.12..2.12", ["2.12.1"]),
])
def test_a_range_is_the_releases_of_the_table_between_its_ends(text, expected):
    assert builds.expand(text, RELEASES) == expected


def test_nightly_and_named_nightlies_pass_through_to_be_resolved_later():
    assert builds.expand("2.21.0,nightly,2.22.0.dev20260601", RELEASES) == [
        "2.21.0", "nightly", "2.22.0.dev20260601"]


@pytest.mark.parametrize("text, said", [
    ("2.99.0", "no pins for TensorFlow '2.99.0'"),
    ("2.16", "no pins for TensorFlow '2.16'"),
    ("2.21..2.16", "holds no release of the pin table"),
    ("2.16.0..2.21", "is not a release of the pin table"),
    ("2.16..latest", "neither a release nor a minor release"),
    ("tf-nightly", "is not a TensorFlow version"),
    ("2.22.0.dev2026", "is not a TensorFlow version"),  # a day has eight digits
    (" , ", "--versions is empty"),
])
def test_a_name_that_names_nothing_is_refused_saying_what_to_write(text, said):
    with pytest.raises(builds.BuildsError, match=said):
        builds.expand(text, RELEASES)


# -- order, days, column names ---------------------------------------------------------------------

def test_a_nightly_lies_after_the_release_before_its_version_and_before_its_candidates():
    # 2.22.0.devN is built from master after the r2.21 branch: after 2.21.x, before 2.22.0rc0.
    given = ["2.22.0", "2.22.0rc0", "2.22.0.dev20260901", "2.21.0", "2.22.0.dev20260204",
             "2.21.0.dev20260202", "2.20.0", "2.23.0.dev20261026"]
    assert builds.sorted_builds(given) == [
        "2.20.0", "2.21.0.dev20260202", "2.21.0", "2.22.0.dev20260204", "2.22.0.dev20260901",
        "2.22.0rc0", "2.22.0", "2.23.0.dev20261026"]


def test_a_nightly_s_day_is_in_its_version_and_a_release_s_in_the_pin_table():
    assert builds.date_of("2.23.0.dev20261026", pins.released()) == "2026-10-26"
    # PyPI's upload day of tensorflow 2.21.0 (read 2026-12-06).
    assert builds.date_of("2.21.0", pins.released()) == "2026-03-06"
    assert builds.date_of("2.11.0", pins.released()) is None


def test_a_nightly_s_column_is_spelled_as_its_tf_version():
    # FACTS: tf.__version__ of tf-nightly 2.23.0.dev20261026 reads 2.23.0-dev20261026.
    assert builds.column("2.23.0.dev20261026") == "2.23.0-dev20261026"
    assert builds.column("2.21.0") == "2.21.0"


def test_the_release_days_run_in_release_order():
    days = [pins.released()[v] for v in RELEASES]
    assert days == sorted(days), "a later release was published no earlier"


# -- the index -------------------------------------------------------------------------------------

LINUX_311 = "tf_nightly-2.23.0.dev20261026-cp311-cp311-manylinux_2_27_x86_64.whl"


@pytest.mark.parametrize("name, fits", [
    (LINUX_311, True),
    ("tf_nightly-2.23.0.dev20261026-cp312-cp312-manylinux_2_27_x86_64.whl", False),
    ("tf_nightly-2.23.0.dev20261026-cp311-cp311-manylinux_2_27_aarch64.whl", False),
    ("tf_nightly-2.23.0.dev20261026-cp311-cp311-macosx_12_0_arm64.whl", False),
    ("keras_nightly-3.16.0.dev2026102704-py3-none-any.whl", True),
    ("tf_nightly-2.23.0.dev20261026.tar.gz", False),
])
def test_a_wheel_fits_by_its_python_and_platform_tags(name, fits):
    assert nightly.wheel_fits(name, "3.11.7", machine="x86_64", system="linux") is fits


def test_a_mac_wheel_fits_a_mac_of_its_machine():
    name = "tf_nightly-2.23.0.dev20261026-cp311-cp311-macosx_12_0_arm64.whl"
    assert nightly.wheel_fits(name, "3.11.1", machine="arm64", system="darwin")


def page(folder, package, names):
    (folder / package).mkdir(parents=True, exist_ok=True)
    links = "".join(f'<a href="{n}">{n}</a>\n' for n in names)
    (folder / package / "index.html").write_text(f"<html><body>\n{links}</body></html>\n")


def test_the_index_lists_the_builds_with_a_wheel_for_this_python(tmp_path, monkeypatch):
    monkeypatch.setattr(nightly, "wheel_fits",
                        lambda name, version: "cp311" in name and name.endswith(".whl"))
    page(tmp_path, "tf-nightly", [
        "tf_nightly-2.22.0.dev20260601-cp311-cp311-manylinux_2_27_x86_64.whl",
        "tf_nightly-2.22.0.dev20260321-cp312-cp312-manylinux_2_27_x86_64.whl",
        "tf_nightly-2.21.0.dev20260202-cp311-cp311-manylinux_2_27_x86_64.whl",
        "tf_nightly-2.21.0.dev20260202-cp310-cp310-manylinux_2_27_x86_64.whl"])
    index = nightly.Index(tmp_path.as_uri() + "/")
    assert index.url == tmp_path.as_uri()
    assert index.versions("tf-nightly", "3.11.7") == ["2.21.0.dev20260202", "2.22.0.dev20260601"]
    assert index.listed("tf-nightly") == ["2.21.0.dev20260202", "2.22.0.dev20260321",
                                          "2.22.0.dev20260601"]


def test_an_index_without_the_project_says_which_index_and_project(tmp_path):
    with pytest.raises(nightly.IndexReadError,
                       match=re.escape(f"cannot list tf-nightly on {tmp_path.as_uri()}: ")):
        nightly.Index(tmp_path.as_uri()).files("tf-nightly")


def test_the_json_simple_api_is_read_and_yanked_files_left_out():
    body = json.dumps({"files": [{"filename": LINUX_311, "yanked": False},
                                 {"filename": "tf_nightly-2.22.0.dev20260101-cp311-cp311-"
                                              "manylinux_2_27_x86_64.whl", "yanked": "broken"}]})
    assert nightly._filenames(body.encode(), "application/vnd.pypi.simple.v1+json") == [LINUX_311]


def test_the_default_index_is_the_installers_own(monkeypatch):
    for name in ("UV_DEFAULT_INDEX", "UV_INDEX_URL", "PIP_INDEX_URL"):
        monkeypatch.delenv(name, raising=False)
    assert nightly.default_index_url() == "https://pypi.org/simple"
    monkeypatch.setenv("PIP_INDEX_URL", "https://mirror.example/simple/")
    assert nightly.default_index_url() == "https://mirror.example/simple"


# -- what goes with a nightly ----------------------------------------------------------------------

KERAS = ["3.16.0.dev2026102504", "3.16.0.dev2026102604", "3.16.0.dev2026102704"]


def test_a_nightly_gets_the_newest_keras_nightly_of_its_day_or_before():
    assert nightly.keras_for("2.23.0.dev20261026", KERAS) == ("3.16.0.dev2026102604", "")
    assert nightly.keras_for("2.23.0.dev20261030", KERAS) == ("3.16.0.dev2026102704", "")


def test_a_nightly_older_than_every_keras_nightly_gets_the_oldest_and_says_so():
    keras, said = nightly.keras_for("2.22.0.dev20260204", KERAS)
    assert keras == "3.16.0.dev2026102504" and "no keras-nightly built on or before" in said
    assert nightly.keras_for("2.22.0.dev20260204", []) == (
        None, "no keras-nightly build is listed; tf-nightly's own requirement chooses one")


def test_a_nightly_installs_tf_nightly_and_its_keras_and_tf_keras_only_when_given():
    assert nightly.requirements("2.23.0.dev20261026", "3.16.0.dev2026102604") == [
        "tf-nightly==2.23.0.dev20261026", "keras-nightly==3.16.0.dev2026102604"]
    assert nightly.requirements("2.23.0.dev20261026", "3.16.0.dev2026102604",
                                "2.23.0.dev2026102618") == [
        "tf-nightly==2.23.0.dev20261026", "keras-nightly==3.16.0.dev2026102604",
        "tf-keras-nightly==2.23.0.dev2026102618"]


# tf-keras-nightly's builds as the index listed them in late October 2026: several minor releases
# built on the same days, each requiring tf-nightly~=MAJOR.MINOR.0.dev (their wheels' metadata).
TF_KERAS = ["2.21.0.dev2026101609", "2.22.0.dev2026101621", "2.22.0.dev2026101709",
            "2.21.0.dev2026102509", "2.21.0.dev2026102609", "2.23.0.dev2026102618"]


def test_a_nightly_gets_the_tf_keras_nightly_of_its_own_minor_release_never_another():
    # 2.21.0.dev2026102609 is of the same day, but requires tf-nightly 2.21: it would not install.
    assert nightly.tf_keras_for("2.23.0.dev20261026", TF_KERAS) == ("2.23.0.dev2026102618", "")
    assert nightly.tf_keras_for("2.23.0.dev20261030", TF_KERAS) == ("2.23.0.dev2026102618", "")
    assert nightly.tf_keras_for("2.22.0.dev20261020", TF_KERAS) == ("2.22.0.dev2026101709", "")


def test_a_nightly_older_than_its_minors_tf_keras_nightlies_gets_the_oldest_and_says_so():
    chosen, said = nightly.tf_keras_for("2.23.0.dev20261012", TF_KERAS)
    assert chosen == "2.23.0.dev2026102618"
    assert said == ("no tf-keras-nightly for TensorFlow 2.23 built on or before 20261012; the "
                    "oldest there is, 2.23.0.dev2026102618, goes with it")


def test_a_nightly_with_no_tf_keras_nightly_of_its_minor_installs_none_saying_what_skips():
    assert nightly.tf_keras_for("2.24.0.dev20261201", TF_KERAS) == (
        None, "no tf-keras-nightly for TensorFlow 2.24 is listed: tf_keras is not installed, and "
              "what needs it skips")


class _Listed:
    url = "https://index.example/simple"

    def __init__(self, **versions):
        self.found = versions

    def versions(self, package, python):
        return self.found.get(package, [])


def test_the_newest_nightly_comes_with_its_keras_and_on_asking_its_tf_keras():
    index = _Listed(**{"tf-nightly": ["2.23.0.dev20261025", "2.23.0.dev20261026"],
                       "keras-nightly": KERAS, "tf-keras-nightly": TF_KERAS})
    found, notes = nightly.newest(index, "3.11.7", tf_keras=True)
    assert found == ["tf-nightly==2.23.0.dev20261026", "keras-nightly==3.16.0.dev2026102604",
                     "tf-keras-nightly==2.23.0.dev2026102618"]
    assert notes[0] == "tf-nightly 2.23.0.dev20261026, the newest of 2 on " + index.url
    assert nightly.newest(index, "3.11.7", tf_keras=False)[0] == found[:2]
    with pytest.raises(nightly.IndexReadError, match="has no tf-nightly for Python 3.11.7"):
        nightly.newest(_Listed(), "3.11.7", tf_keras=True)


def test_the_script_exits_3_where_the_index_has_no_nightly_and_says_why(tmp_path, capsys):
    (tmp_path / "tf-nightly").mkdir()
    (tmp_path / "tf-nightly" / "index.html").write_text("<html><body></body></html>\n")
    assert nightly._main(["--tf-keras", "--index", tmp_path.as_uri()]) == nightly.NO_NIGHTLY == 3
    said = capsys.readouterr()
    assert said.out == "" and said.err.startswith("nightly: ") and "has no tf-nightly" in said.err
