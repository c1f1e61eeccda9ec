"""The bisect's search over fake build lists: where it lands, how many builds it observes, and what
it prints. Pure: a build's result is a function of its position, no environment, no TensorFlow."""

import json
import math

import pytest

from harness.matrix import bisect, builds, pins

RELEASES = pins.versions()


def nightlies(count, first_day=20260204):
    """`count` made-up nightlies of 2.22.0, a day apart (days past 28 roll into the next month
    only in their number, which is all the order reads)."""
    return [f"2.22.0.dev{first_day + i}" for i in range(count)]


class Fake:
    """Observes a chain whose result changes at `changed` (the first bad position); records the
    builds asked for, and fails the ones in `broken`."""

    def __init__(self, chain, changed, broken=()):
        self.chain, self.changed, self.broken, self.asked = list(chain), changed, set(broken), []

    def __call__(self, version):
        assert version not in self.asked, f"{version} observed twice"
        self.asked.append(version)
        if version in self.broken:
            return bisect.Observation(version=version, failed="not installed: no wheel")
        bad = self.chain.index(version) >= self.changed
        verdict = "xpass" if bad else "xfail"
        at = self.chain.index(version)
        return bisect.Observation(version=version, signature=(verdict,), summary=verdict,
                                  git=f"v1.12.1-{at}-g{at:07x}")


def is_release(version):
    return not builds.is_nightly(version)


@pytest.mark.parametrize("n", [2, 3, 4, 5, 8, 9, 17, 100, 165])
def test_the_search_finds_every_change_point_within_ceil_log2_n_plus_2_observations(n):
    chain = ["2.21.0"] + nightlies(n - 1)
    for changed in range(1, n):
        fake = Fake(chain, changed)
        found = bisect.search(chain, fake, is_release)
        assert (found.good.version, found.bad.version) == (chain[changed - 1], chain[changed])
        # The bound a bisect promises, ceil(log2 n) + 2 (the two ends, then halving), computed
        # here from that formula, not from the module.
        assert len(fake.asked) <= math.ceil(math.log2(n)) + 2, (n, changed, fake.asked)
        assert fake.asked[:2] == [chain[0], chain[-1]]


def test_the_bound_is_ceil_log2_n_plus_2():
    # 165 builds from 2.21.0 to the newest nightly: 8 probes and the two ends.
    assert [bisect.limit(n) for n in (2, 3, 4, 5, 165)] == [3, 4, 4, 5, 10]


def test_a_release_is_probed_first_where_halving_allows_it():
    # Six builds inside: plain halving probes the third, a nightly; the fourth, 2.21.0, leaves no
    # more behind it (three, then two), so it goes first.
    chain = ["2.20.0", "2.21.0.dev20260201", "2.21.0.dev20260202", "2.21.0.dev20260203", "2.21.0",
             *nightlies(2), "2.23.0.dev20261026"]
    fake = Fake(chain, changed=6)
    found = bisect.search(chain, fake, is_release)
    assert fake.asked[2] == "2.21.0"
    assert (found.good.version, found.bad.version) == (chain[5], chain[6])


def test_no_release_is_probed_where_it_would_cost_a_step():
    # Inside: one release at the very start of 30 builds; the middle nightly goes first.
    chain = ["2.20.0", "2.21.0", *nightlies(29), "2.23.0.dev20261026"]
    fake = Fake(chain, changed=20)
    bisect.search(chain, fake, is_release)
    assert builds.is_nightly(fake.asked[2])


def test_pick_never_leaves_more_than_plain_halving_would():
    for k in range(1, 200):
        for release_at in range(k):
            inside = [f"r{i}" if i == release_at else f"n{i}" for i in range(k)]
            at = bisect.pick(inside, lambda v: v.startswith("r")) + 1
            # k inside builds need ceil(log2(k + 1)) probes at worst; whatever is left after this
            # one must need one fewer, as after plain halving.
            left = max(at - 1, k - at)
            assert math.ceil(math.log2(left + 1)) <= math.ceil(math.log2(k + 1)) - 1, (k, at)


def test_a_build_that_cannot_be_observed_is_left_out_and_named():
    chain = ["2.21.0", *nightlies(7), "2.23.0.dev20261026"]
    middle = chain[4]
    fake = Fake(chain, changed=5, broken={middle})
    found = bisect.search(chain, fake, is_release)
    assert middle in fake.asked
    assert (found.good.version, found.bad.version) == (chain[3], chain[5])
    assert [s.version for s in found.skipped] == [middle]


def test_ends_that_agree_or_cannot_be_observed_stop_the_search_saying_why():
    chain = ["2.21.0", *nightlies(3)]
    with pytest.raises(bisect.BisectError, match="give the same result"):
        bisect.search(chain, Fake(chain, changed=99), is_release)
    with pytest.raises(bisect.BisectError, match="the good build 2.21.0 could not be observed"):
        bisect.search(chain, Fake(chain, changed=2, broken={"2.21.0"}), is_release)


def test_candidates_are_the_releases_and_nightlies_between_the_ends_in_order():
    found = bisect.candidates("2.19.1", "2.22.0.dev20260206", RELEASES,
                              ["2.21.0.dev20260202", *nightlies(5)])
    assert found == ["2.19.1", "2.20.0", "2.21.0.dev20260202", "2.21.0", "2.22.0.dev20260204",
                     "2.22.0.dev20260205", "2.22.0.dev20260206"]
    with pytest.raises(bisect.BisectError, match="does not lie before"):
        bisect.candidates("2.21.0", "2.16.2", RELEASES, [])


# -- what is compared ------------------------------------------------------------------------------

def report(verdict="xfail", function=("error", "ValueError"), value=1.0):
    def mode(status, error=None):
        return {"status": status, "orders": [[{"value": value}]],
                **({"error_type": error} if error else {})}
    return {"results": [{"case": "c", "point": "x=1", "verdict": verdict,
                         "modes": {"eager": mode("ok"), "function": mode(*function)}}]}


def test_a_verdict_or_a_mode_s_error_type_changes_the_signature_and_a_value_alone_does_not():
    base, _ = bisect.signature(report())
    assert bisect.signature(report(verdict="xpass"))[0] != base
    assert bisect.signature(report(function=("error", "TypeError")))[0] != base
    assert bisect.signature(report(function=("ok", None)))[0] != base
    assert bisect.signature(report(value=2.0))[0] == base
    assert bisect.signature(report())[1] == "c[x=1] xfail (eager ok, function ValueError)"


# -- what is printed -------------------------------------------------------------------------------

def test_the_commit_is_the_hash_after_g_else_a_release_s_tag():
    # FACTS: a nightly's GIT_VERSION reads like v1.12.1-148158-gef696751006.
    night = bisect.Observation(version="2.23.0.dev20261026", git="v1.12.1-148158-gef696751006")
    assert bisect.commit_of(night) == "ef696751006"
    assert bisect.commit_of(bisect.Observation(version="2.21.0", git="unknown")) == "v2.21.0"
    assert bisect.commit_of(bisect.Observation(version="2.22.0.dev20260204")) is None
    good = bisect.Observation(version="2.21.0", git="v2.21.0-rc1-5-ga481b10260d")
    assert bisect.compare_url(good, night) == (
        "https://github.com/tensorflow/tensorflow/compare/a481b10260d...ef696751006")


def test_the_answer_names_both_builds_their_days_commits_and_what_it_cost():
    chain = ["2.21.0", *nightlies(6), "2.23.0.dev20261026"]
    found = bisect.search(chain, Fake(chain, changed=3), is_release)
    lines = bisect.render(found, pins.released(), is_release)
    assert lines[0] == ("last good: tf-nightly 2.22.0.dev20260205 (2026-02-05, "
                        "GIT_VERSION v1.12.1-2-g0000002): xfail")
    assert lines[1].startswith("first bad: tf-nightly 2.22.0.dev20260206 (2026-02-06, ")
    assert lines[2] == ("commits: https://github.com/tensorflow/tensorflow/compare/"
                        "0000002...0000003")
    assert lines[3] == ("among releases: the change comes after 2.21.0 and is in no release of "
                        "the pin table yet")
    assert lines[-1].startswith(f"tried {len(found.taken)} of n = 8 builds from 2.21.0 to "
                                "2.23.0.dev20261026 (at most ceil(log2 n) + 2 = 5)")


def test_a_release_that_could_not_be_observed_is_not_claimed_as_good():
    # 2.21.0 lies between the last good and the first bad build and could not be installed: the
    # change may be in it, so the answer may not say it comes after it; and the bound on builds
    # holds only where every build is observed.
    chain = ["2.19.1", "2.20.0", "2.21.0.dev20250101", "2.21.0", "2.22.0.dev20260205"]
    found = bisect.search(chain, Fake(chain, changed=4, broken={"2.21.0"}), is_release)
    assert (found.good.version, found.bad.version) == ("2.21.0.dev20250101", "2.22.0.dev20260205")
    lines = bisect.render(found, pins.released(), is_release)
    assert lines[3] == ("among releases: the change comes after 2.20.0 and is in 2.21.0 (not "
                        "observed) or in no release yet")
    assert "where every build is observed, one more for each that is not" in lines[-1]


# -- repro --bisect_json --------------------------------------------------------------------------

ANSWER = {"schema": "harness.bisect/1", "target": "regressions.silu_beta_shape_127690", "n": 165,
          "observed": 10, "compare": "https://github.com/tensorflow/tensorflow/compare/a...b",
          "good": {"version": "2.22.0.dev20260601", "date": "2026-06-01", "git": "v1.12.1-9-ga",
                   "result": "xfail"},
          "bad": {"version": "2.22.0.dev20260602", "date": "2026-06-02", "git": "v1.12.1-10-gb",
                  "result": "xpass"}}


def test_issue_md_s_bisect_line_names_both_builds_and_the_commits():
    from harness.repro import issue

    assert issue.bisect_line(ANSWER) == (
        "Bisected with the harness over 165 TensorFlow builds (`python -m harness bisect`, 10 of "
        "them run): the result changed between tf-nightly 2.22.0.dev20260601 (2026-06-01, "
        "GIT_VERSION v1.12.1-9-ga), the last with the --good build's result, and tf-nightly "
        "2.22.0.dev20260602 (2026-06-02, GIT_VERSION v1.12.1-10-gb), the first with another "
        "(xpass): "
        "https://github.com/tensorflow/tensorflow/compare/a...b")


def test_repro_refuses_a_bisect_of_another_case_or_a_file_that_is_no_bisect(tmp_path):
    from tests.unit.in_process import harness

    answer = tmp_path / "bisect.json"
    answer.write_text(json.dumps(ANSWER))
    proc = harness("repro", "seeds.custom_square", f"--out={tmp_path / 'o'}",
                   f"--bisect_json={answer}")
    assert proc.returncode == 2 and proc.stderr == (
        f"harness: error: --bisect_json {answer} bisected regressions.silu_beta_shape_127690, not "
        "seeds.custom_square; bisect seeds.custom_square, or drop --bisect_json\n")
    answer.write_text(json.dumps({"schema": "harness.matrix/1"}))
    proc = harness("repro", "seeds.custom_square", f"--out={tmp_path / 'o'}",
                   f"--bisect_json={answer}")
    assert proc.returncode == 2 and "not a bisect's answer" in proc.stderr
    assert not (tmp_path / "o").exists()
