"""The matrix pages lead with what matters: real changes first, then which modes apply, folded.

Hand-written reports shaped like the library's run over every release (docs/matrix.md): a mode
that begins to apply from one release at every point, an error that changes type, a mode that
stops applying, and a nightly column. No TensorFlow.
"""

import re

from harness.matrix import render
from tests.unit.test_merge import SKIP, merged, ok, parse, raised, report, result

MODES = ("eager", "function", "graph", "keras_mixed", "keras3_mirrored")
NIGHTLY_GIT = "v1.12.1-148158-gef696751006"  # a tf-nightly's tf.version.GIT_VERSION


def _point(case, version, **modes):
    """A point as the library's run gives it under `version`: keras3_mirrored skips before 2.18,
    keras_mixed from 2.17."""
    outcomes = {"keras3_mirrored": SKIP} if version < "2.18" else {}
    outcomes.update({"keras_mixed": SKIP} if version >= "2.17" else {})
    outcomes.update(modes)
    verdict = "xfail" if any(o.get("status") == "error" for o in outcomes.values()) else "pass"
    return result(case, verdict=verdict, **outcomes)


def library(nightly=False):
    """Four releases (and a nightly): ten points where keras3_mirrored begins to apply at 2.18.1,
    keras_mixed stops at 2.17.1, cond_around_call's TypeError becomes AttributeError at 2.13.1,
    and kwargs' RuntimeError becomes ValueError at the nightly."""
    versions = ["2.12.1", "2.13.1", "2.17.1", "2.18.1"]
    versions += ["2.23.0-dev20261026"] if nightly else []
    reports = []
    for version in versions:
        error = "TypeError" if version == "2.12.1" else "AttributeError"
        kwargs = "ValueError" if "dev" in version else "RuntimeError"
        points = [_point(f"patterns.p{i}", version) for i in range(8)]
        points.append(_point("variables.cond_around_call", version,
                             function=raised(error, "e"),
                             **({"keras3_mirrored": raised(error, "e")}
                                if version >= "2.18" else {})))
        points.append(_point("regressions.kwargs_65839", version, graph=raised(kwargs, "k"),
                             **({"keras3_mirrored": raised(kwargs, "k")}
                                if version >= "2.18" else {})))
        made = report(version, *points, modes=MODES)
        if "dev" in version:
            made["environment"]["tensorflow_git"] = NIGHTLY_GIT
        reports.append(made)
    return merged(*reports, modes=MODES)


def _section(text):
    """The lines under "What changed between releases", up to the next heading."""
    lines = text.splitlines()
    start = lines.index("### What changed between releases") + 1
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("#"))
    return [line for line in lines[start:end] if line]


def test_markdown_leads_with_real_changes_and_folds_a_mode_that_begins_to_apply():
    section = _section(render.markdown(library()))
    items = [line for line in section if line.startswith("- ")]
    # The real changes, each point once, before any line about which modes apply.
    assert items[0] == ("- **variables.cond_around_call[x=1.0]**: From 2.13.1: function: "
                        "TypeError → AttributeError.")
    assert len(items) == 1 + 2, "one real change, then a line per mode, release and direction"
    # keras_mixed stops at 2.17.1 before keras3_mirrored begins at 2.18.1: column order.
    assert items[1] == "- keras_mixed no longer applies from 2.17.1: 10 points (all ok before)."
    # Ten points: eight ok, cond_around_call's AttributeError, kwargs' RuntimeError.
    assert items[2] == ("- keras3_mirrored applies from 2.18.1: 10 points "
                        "(8 ok, 1 AttributeError, 1 RuntimeError).")
    assert not [line for line in section if "skip → ok" in line], "no point line per skip → ok"


def test_the_change_under_the_nightly_leads_the_real_changes_in_both_pages():
    # kwargs' RuntimeError becomes ValueError at the nightly, the newest column; cond_around_call
    # changed at 2.13.1, and comes first among the rows. The news leads.
    matrix = library(nightly=True)
    items = [line for line in _section(render.markdown(matrix)) if line.startswith("- **")]
    assert [item.split("**")[1] for item in items] == [
        "regressions.kwargs_65839[x=1.0]", "variables.cond_around_call[x=1.0]"], items
    assert items[0].startswith("- **regressions.kwargs_65839[x=1.0]**: From 2.23.0-dev20261026: ")
    page = render.html(matrix)
    real = re.search(r'<ul class="real">(.*?)</ul>', page).group(1)
    assert real.index("kwargs_65839") < real.index("variables.")


def test_a_step_with_a_real_and_a_coverage_part_leads_with_the_real_part_and_counts_in_the_fold():
    # At the nightly, kwargs' graph error changes type (real) while nothing else does; at 2.13.1
    # cond_around_call's change is real alone. Make a step hold both: from 2.18.1 its
    # keras3_mirrored begins to apply while function's error changes type.
    reports = []
    for version, error in (("2.17.1", "TypeError"), ("2.18.1", "AttributeError")):
        reports.append(report(version, _point("variables.cond_around_call", version,
                                              function=raised(error, "e")),
                              _point("patterns.p0", version), modes=MODES))
    matrix = merged(*reports, modes=MODES)
    section = _section(render.markdown(matrix))
    assert ("- **variables.cond_around_call[x=1.0]**: From 2.18.1: function: TypeError → "
            "AttributeError; keras3_mirrored: skip → ok.") in section
    assert ("- keras3_mirrored applies from 2.18.1: 2 points (all ok): "
            "variables.cond_around_call[x=1.0], patterns.p0[x=1.0].") in section


def test_a_small_fold_names_its_points_and_a_large_one_leaves_them_to_the_table():
    section = _section(render.markdown(library()))
    assert not [line for line in section if "patterns.p0" in line], "ten points are not listed"
    small = merged(report("2.16.2", result("a"), result("b")),
                   report("2.17.1", result("a", keras_mixed=SKIP), result("b")), modes=MODES)
    assert ("- keras_mixed no longer applies from 2.17.1: 1 point (ok before): a[x=1.0]."
            in _section(render.markdown(small)))


def test_only_coverage_changes_are_said_to_be_no_real_change():
    matrix = merged(report("2.17.1", result("a", keras3_mirrored=SKIP)),
                    report("2.18.1", result("a")), modes=MODES)
    section = _section(render.markdown(matrix))
    assert section[0] == ("Only which modes apply changed, below: wherever a mode ran in both "
                          "versions its outcome is the same.")
    assert section[-1] == "- keras3_mirrored applies from 2.18.1: 1 point (ok): a[x=1.0]."
    assert "At 1 of 1 case points only which modes apply changed" in render.markdown(matrix)


def test_no_sentence_names_a_release_by_its_minor_version():
    # The columns are 2.13.1, 2.17.1 and 2.18.1: "from 2.18" would claim 2.18.0 too.
    for page in (render.markdown(library()), render.html(library())):
        assert not re.search(r"[Ff]rom 2\.1[3-8](?![.\d])", page)


def _changes(page):
    """The HTML's section of changes: its tags and text, by the page parser."""
    start, end = page.index('<section id="changes">'), page.index("</section>")
    return parse(page[start:end + len("</section>")])


def test_html_leads_with_the_same_changes_and_each_fold_is_one_line_with_its_points_inside():
    matrix = library()
    page = render.html(matrix)
    assert page.index('<section id="changes">') < page.index('<table id="grid">')
    section = _changes(page)
    text = "".join(section.text)
    assert ("variables.cond_around_call[x=1.0]: From 2.13.1: function: TypeError → "
            "AttributeError.") in text
    summaries = re.findall(r"<summary>(.*?)</summary>", page)
    assert summaries == ["keras_mixed no longer applies from 2.17.1: 10 points (all ok before)",
                         "keras3_mirrored applies from 2.18.1: 10 points "
                         "(8 ok, 1 AttributeError, 1 RuntimeError)"]
    # Each link leads to the row of the point it names.
    rows = {attrs["id"]: attrs["data-name"] for attrs, _ in parse(page).rows}
    links = [(attrs["href"], i) for i, (tag, attrs) in enumerate(section.tags) if tag == "a"]
    assert len(links) == 1 + 10 + 10
    assert rows[links[0][0].lstrip("#")] == "variables.cond_around_call[x=1.0]"
    fold = page[page.index("<summary>keras3_mirrored"):]
    fold = fold[:fold.index("</details>")]
    assert "(AttributeError)" in fold and "(RuntimeError)" in fold and fold.count("<a ") == 10


def test_html_groups_rows_real_changes_then_coverage_then_the_rest():
    matrix = merged(report("2.17.1", result("a.cover", keras3_mirrored=SKIP), result("b.same"),
                           result("c.real")),
                    report("2.18.1", result("a.cover"), result("b.same"),
                           result("c.real", graph=raised("ValueError", "v"))), modes=MODES)
    page = parse(render.html(matrix))
    assert [(attrs["data-name"], attrs["class"]) for attrs, _ in page.rows] == [
        ("c.real[x=1.0]", "p changed"), ("a.cover[x=1.0]", "p coverage"),
        ("b.same[x=1.0]", "p same")]
    groups = [attrs["data-kind"] for tag, attrs in page.tags
              if tag == "tr" and "group" in attrs.get("class", "")]
    assert groups == ["changed", "coverage", "same"]


def test_a_nightly_column_names_its_commit_in_both_heads_and_sorts_after_the_releases():
    matrix = library(nightly=True)
    assert matrix.versions[-2:] == ("2.18.1", "2.23.0-dev20261026")
    text = render.markdown(matrix)
    header = next(line for line in text.splitlines() if line.startswith("| case"))
    assert header.endswith("| 2.18.1 | 2.23.0-dev20261026 (commit ef696751006) |")
    assert "- **2.23.0-dev20261026**: commit ef696751006, numpy 1.26.4, python 3.11.7" in text
    assert ("- **regressions.kwargs_65839[x=1.0]**: From 2.23.0-dev20261026: graph, "
            "keras3_mirrored: RuntimeError → ValueError.") in text
    page = render.html(matrix)
    head = re.search(r'<th class="version" title="([^"]*)">2\.23\.0<wbr>-dev20261026(.*?)</th>',
                     page)
    assert head and head.group(1) == "2.23.0-dev20261026 (commit ef696751006)"
    assert "<small>commit ef696751006</small>" in head.group(2)
    release = re.search(r'<th class="version" title="2\.18\.1">2\.18\.1(.*?)</th>', page)
    assert release and "commit" not in release.group(1)


def test_a_mark_for_a_missing_keras3_is_a_skip_and_does_not_move_when_keras3_arrives():
    missing = {"status": "skip", "orders": [], "sources": [],
               "note": "needs Keras 3 (the keras package, 3.0 or later)"}
    matrix = merged(report("2.15.1", result("a", keras3_mirrored=missing)),
                    report("2.16.2", result("a")), modes=MODES)
    (_, cells), = parse(render.html(matrix)).rows
    marks = [{text: attrs["class"].split() for attrs, text in mark_list}
             for _, mark_list, _ in cells]
    assert "m-none" in marks[0]["k3ms"] and "m-exc" not in marks[0]["k3ms"]
    assert "moved" not in marks[1]["k3ms"]
