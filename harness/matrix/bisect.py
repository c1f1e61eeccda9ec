"""The bisect: the first TensorFlow build at which a case's result differs from a good build's.
Pure: what is observed at a build is given to `search` as a function.

The builds lie in one order (harness.matrix.builds): the releases of the pin table and the
tf-nightly builds the index has, from the good build to the bad one, both included; n is their
number. One binary search runs over them all, so it observes at most ceil(log2 n) + 2 builds (its
two ends, then ceil(log2 (n - 1)) probes at most), where every build can be observed: each one
that cannot (not installed) costs one more probe. Releases come first where that costs nothing:
each probe may be any build that still halves the worst case, and a release among those is taken
before a nightly, so the release where a result changed is observed, not inferred, whenever the
search can afford it. A build that cannot be observed (not installed, no report) is left out and
the search goes on around it, as `git bisect skip` does; the answer then names it.

What is compared: the verdict of every case and point, and every mode's status and error type.
Values that differ only count where they change a verdict.
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Callable, Mapping, Optional, Sequence

from harness.matrix import builds

__all__ = ["BisectError", "Found", "Observation", "candidates", "commit_of", "compare_url",
           "limit", "pick", "render", "search", "signature"]


class BisectError(Exception):
    """The search cannot start or cannot go on (an end that cannot be observed, ends that agree);
    the message says why and what to do."""


@dataclasses.dataclass(frozen=True)
class Observation:
    """What a build gave.

    Attributes:
      version: the build ("2.21.0", "2.23.0.dev20261026").
      signature: what is compared between builds (`signature`); empty when `failed`.
      summary: the signature in words, for the output.
      tensorflow: its `tf.version.VERSION`, as its report gives it.
      git: its `tf.version.GIT_VERSION`.
      failed: why nothing was observed (not installed, no report), or "".
      installed: whether an environment was built for it (False: reused from the cache).
    """

    version: str
    signature: tuple = ()
    summary: str = ""
    tensorflow: str = ""
    git: str = ""
    failed: str = ""
    installed: bool = False


@dataclasses.dataclass(frozen=True)
class Found:
    """Where the result changed.

    Attributes:
      chain: every build from good to bad, in order (n = len(chain)).
      good: the last build observed to give the good result.
      bad: the first build observed to differ from it.
      taken: every observation, in the order taken.
      skipped: builds between `good` and `bad` that could not be observed, with why.
    """

    chain: tuple[str, ...]
    good: Observation
    bad: Observation
    taken: tuple[Observation, ...]
    skipped: tuple[Observation, ...] = ()


def limit(n: int) -> int:
    """The most builds a bisect over n builds observes: ceil(log2 n) + 2."""
    return math.ceil(math.log2(max(n, 1))) + 2


def candidates(good: str, bad: str, releases: Sequence[str],
               nightlies: Sequence[str]) -> list[str]:
    """The builds from `good` to `bad`, both included, in order: the releases and nightlies that
    lie between them, and the two ends themselves.

    Raises:
      BisectError: `good` does not lie before `bad`.
    """
    low, high = builds.order_key(good), builds.order_key(bad)
    if low >= high:
        raise BisectError(f"the good build {good} does not lie before the bad one {bad}; give the "
                          "older build as --good (a fix is bisected as a change too)")
    inside = [v for v in (*releases, *nightlies) if low < builds.order_key(v) < high]
    return builds.sorted_builds([good, *inside, bad])


def pick(inside: Sequence[str], is_release: Callable[[str], bool]) -> int:
    """Which of the `inside` builds (those still between the last good and the first bad) to
    observe next: the index of a release nearest the middle among the positions that keep the
    search as short as plain halving, else of the middle one."""
    k = len(inside)
    depth = math.ceil(math.log2(k + 1))
    half = 2 ** (depth - 1)
    # Position p (1-based) leaves at most max(p - 1, k - p) builds: within one step fewer.
    allowed = range(max(1, k + 1 - half), min(k, half) + 1)
    middle = (k + 1) / 2
    releases = [p for p in allowed if is_release(inside[p - 1])]
    if releases:
        return min(releases, key=lambda p: (abs(p - middle), p)) - 1
    return (k + 1) // 2 - 1


def _ends(chain: Sequence[str], observe: Callable[[str], Observation]) -> tuple:
    good = observe(chain[0])
    if good.failed:
        raise BisectError(f"the good build {chain[0]} could not be observed: {good.failed}")
    bad = observe(chain[-1])
    if bad.failed:
        raise BisectError(f"the bad build {chain[-1]} could not be observed: {bad.failed}")
    if bad.signature == good.signature:
        raise BisectError(f"{chain[0]} and {chain[-1]} give the same result ({good.summary}); "
                          "nothing to bisect: give a --bad build where it differs")
    return good, bad


def search(chain: Sequence[str], observe: Callable[[str], Observation],
           is_release: Callable[[str], bool]) -> Found:
    """Bisects `chain` (good first, bad last) for the first build whose signature differs from
    the first's.

    Args:
      chain: the builds in order (`candidates`).
      observe: observes one build; called at most once per build.
      is_release: whether a build is a release (preferred as a probe; see `pick`).

    Raises:
      BisectError: an end cannot be observed, or both ends give the same result.
    """
    good, bad = _ends(chain, observe)
    taken, skipped = [good, bad], []
    lo, hi = 0, len(chain) - 1
    left_out: set[int] = set()
    while True:
        inside = [i for i in range(lo + 1, hi) if i not in left_out]
        if not inside:
            break
        at = inside[pick([chain[i] for i in inside], is_release)]
        seen = observe(chain[at])
        taken.append(seen)
        if seen.failed:
            left_out.add(at)
            skipped.append(seen)
        elif seen.signature == good.signature:
            lo, good = at, seen
        else:
            hi, bad = at, seen
    between = {chain[i] for i in range(lo + 1, hi)}
    return Found(chain=tuple(chain), good=good, bad=bad, taken=tuple(taken),
                 skipped=tuple(s for s in skipped if s.version in between))


def signature(report: Mapping) -> tuple[tuple, str]:
    """What a JSON report (harness.report/1 or /2) says of its cases, for comparing builds: per case
    and point the verdict and each mode's status and error type; with the same in words."""
    found, words = [], []
    for r in sorted(report.get("results", []), key=lambda r: (r["case"], r["point"])):
        modes = tuple((mode, m.get("status", ""), m.get("error_type") or "")
                      for mode, m in sorted(r.get("modes", {}).items()))
        found.append((r["case"], r["point"], r.get("verdict", ""), modes))
        said = ", ".join(f"{mode} {error or status}" for mode, status, error in modes)
        words.append(f"{r['case']}[{r['point']}] {r.get('verdict', '')} ({said})")
    return tuple(found), "; ".join(words) or "no results"


_COMMIT = re.compile(r"-g([0-9a-f]{7,40})$")


def commit_of(observation: Observation) -> Optional[str]:
    """The commit a build was made from: the hash in its GIT_VERSION ("v1.12.1-148158-gef69675"),
    else a release's tag ("v2.21.0"); None for a nightly without one."""
    match = _COMMIT.search(observation.git.strip())
    if match:
        return match.group(1)
    return None if builds.is_nightly(observation.version) else f"v{observation.version}"


def compare_url(good: Observation, bad: Observation) -> Optional[str]:
    """GitHub's page of the commits between two builds, or None when one has no known commit."""
    old, new = commit_of(good), commit_of(bad)
    if not old or not new:
        return None
    return f"https://github.com/tensorflow/tensorflow/compare/{old}...{new}"


def _line(word: str, o: Observation, released: Mapping[str, str]) -> str:
    day = builds.date_of(o.version, released) or "date unknown"
    kind = "tf-nightly" if builds.is_nightly(o.version) else "tensorflow"
    return f"{word} {kind} {o.version} ({day}, GIT_VERSION {o.git or 'unknown'}): {o.summary}"


def _releases_line(found: Found, is_release: Callable[[str], bool]) -> str:
    """Where the change lies among releases: after which one, and the first that has it."""
    # Only up to the last good build: a release between it and the first bad one was not
    # observed (it could not be installed), and may be where the change is.
    good = found.chain.index(found.good.version)
    at = found.chain.index(found.bad.version)
    before = [v for v in found.chain[:good + 1] if is_release(v)]
    unknown = [v for v in found.chain[good + 1:at] if is_release(v)]
    after = [v for v in found.chain[at:] if is_release(v)]
    seen = {o.version for o in found.taken if not o.failed}
    first = (f"first in {after[0]} ({'observed' if after[0] in seen else 'by order: not observed'})"
             if after else "in no release of the pin table yet")
    if unknown:
        first = (f"in {', '.join(unknown)} (not observed) or later: {first}" if after
                 else f"in {', '.join(unknown)} (not observed) or in no release yet")
    return (f"among releases: the change comes after {before[-1] if before else 'none observed'}"
            f" and is {first}")


def render(found: Found, released: Mapping[str, str], is_release: Callable[[str], bool]) -> list:
    """The bisect's answer as lines: the last good and first bad builds with their days and
    GIT_VERSIONs, the commit range, the releases around it and what it cost."""
    url = compare_url(found.good, found.bad)
    lines = [_line("last good:", found.good, released), _line("first bad:", found.bad, released),
             f"commits: {url}" if url else "commits: unknown (a build without a commit in its "
             "GIT_VERSION)", _releases_line(found, is_release)]
    lines += [f"not observed between them: {s.version} ({s.failed})" for s in found.skipped]
    n = len(found.chain)
    built = sum(1 for o in found.taken if o.installed)
    reused = sum(1 for o in found.taken if not o.installed and not o.failed)
    failed = len(found.taken) - built - reused
    bound = (f"at most ceil(log2 n) + 2 = {limit(n)}" if not failed
             else f"at most ceil(log2 n) + 2 = {limit(n)} where every build is observed, one "
                  "more for each that is not")
    lines.append(f"tried {len(found.taken)} of n = {n} builds from {found.chain[0]} to "
                 f"{found.chain[-1]} ({bound}): {built} "
                 f"environment{'s' if built != 1 else ''} installed, {reused} reused from the "
                 f"cache" + (f", {failed} not installed" if failed else ""))
    return lines
