"""The terminal report: one line per case and point as it finishes, then a summary."""

from __future__ import annotations

from typing import Sequence

from harness.judge.explain import NO_GRADIENT, PARTLY_OUTSIDE
from harness.printable import printable
from harness.records import VERDICTS, Explored, ModeOutcome, Report, Result, Status, Verdict

__all__ = ["explored", "line", "summary", "render"]

# One display word per verdict, padded to one width.
_WORD = {v: style.word for v, style in VERDICTS.items()}
_WIDTH = max(len(w) for w in _WORD.values())


def _status(outcome: ModeOutcome, order: int) -> str:
    if outcome.status is Status.OK:
        # A training step computes order 1 only: the line's order is the case's, not what it judged.
        if outcome.top_order is not None and outcome.top_order < order:
            return f"ok(order {outcome.top_order})"
        return "ok"
    if outcome.error is not None and outcome.status is Status.ERROR:
        return f"{outcome.error.type}@{outcome.error.stage}"
    return outcome.status.value


def line(result: Result) -> str:
    """The result's line and, unless it passed, its explanation and rerun command."""
    modes = "  ".join([f"{m}:{_status(o, result.order)}" for m, o in result.outcomes.items()]
                      + [f"{n}:{o.status}" for n, o in result.oracles.items()])
    head = printable(f"{_WORD[result.verdict]:<{_WIDTH}}  {result.name}  order {result.order}  "
                     f"{modes}".rstrip())
    if result.verdict is Verdict.PASS and not result.unchecked:
        # A pass prints its line alone, but for what it left unjudged on purpose.
        said = [d for d in result.details if d.startswith((NO_GRADIENT, PARTLY_OUTSIDE))]
        return "\n".join([head] + [_indented("    - ", d) for d in said])
    if result.unchecked:
        head += "  (unchecked)"
    lines = [head, _indented("    ", result.reason)]
    lines += [_indented("    - ", d) for d in _shown(result.details, result.reason)]
    if result.verdict is not Verdict.SKIP:
        lines.append(f"    rerun: {printable(result.rerun)}")
    return "\n".join(lines)


# A verdict's block fits on a screen: at most this many detail lines besides its hints.
MAX_DETAILS = 5


def _shown(details, reason: str) -> list[str]:
    """The detail lines a verdict's block shows: the first MAX_DETAILS and every hint, and a line
    that says how many more the JSON report holds."""
    lines = [d for d in details if d != reason]
    hints = [d for d in lines if d.startswith("hint: ")]
    rest = [d for d in lines if not d.startswith("hint: ")]
    if len(rest) <= MAX_DETAILS:
        return rest + hints
    more = len(rest) - MAX_DETAILS + 1
    return rest[:MAX_DETAILS
                - 1] + [f"... and {more} more detail lines: the JSON report (--json_out) holds "
                        "them all"] + hints


def _indented(lead: str, text: str) -> str:
    """`text` after `lead`, each further line of it indented as deep, so that no line of a case's
    own text starts where a verdict word does."""
    first, *rest = printable(text, newlines=True).split("\n")
    return "\n".join([lead + first] + [" " * len(lead) + line for line in rest])


def explored(e: Explored) -> str:
    """What exploring one case found: the shrunk point, ready to paste, or how many examples passed;
    any control character of a case's own text escaped."""
    return printable(_explored(e), newlines=True)


def _explored(e: Explored) -> str:
    over = ", ".join(f"{n}={d}" for n, d in e.domains)
    seed = f", seed {e.seed}" if e.seed is not None else ""
    if e.incomplete:
        said = (f"no example was judged over {over} in {e.seconds:.1f} s{seed}, so nothing passed"
                if not e.tried else
                f"none of {e.tried} examples failed over {over} in {e.seconds:.1f} s{seed}, but "
                f"Hypothesis ended the search before the {e.limit} asked for, so it is no pass")
        text = f"EXPLORE {_WORD[Verdict.ERROR]}  {e.case}: {said}"
        return "\n".join([text]
                         + [f"    {what}: {why}"
                            for what, why in (("stopped", e.stopped), ("note", e.note))
                                   if why])
    if e.found is None:
        text = (
            f"EXPLORE PASS  {e.case}: {e.tried} examples passed over {over} in {e.seconds:.1f}"
            f" s{seed}"
        )
        return text + (f"\n    note: {e.note}" if e.note else "")
    r = e.found
    dead = r.verdict in (
        Verdict.CRASH,
        Verdict.TIMEOUT,
    )  # the search stops there, without shrinking
    counts = (f"{e.tried} examples" if dead else
              f"{e.tried} examples ({e.searched} searching, {e.shrinking} shrinking)")
    lines = [f"EXPLORE {_WORD[r.verdict]}  {e.case}: {r.verdict.value} at --inputs {e.inputs!r}, "
             f"{'not shrunk' if dead else 'shrunk'}, after {counts} in {e.seconds:.1f} s over "
             f"{over}{seed}",
             f"    {r.reason}"]
    lines += [f"    - {d}" for d in r.details if d != r.reason]
    if e.note:
        lines.append(f"    note: {e.note}")
    lines.append(f"    check: {e.check}" if e.check else f"    rerun: {r.rerun}")
    return "\n".join(lines)


def summary(results: Sequence[Result], seconds: float | None = None, not_run: int = 0) -> str:
    counts = {v: 0 for v in Verdict}
    for r in results:
        counts[r.verdict] += 1
    unchecked = sum(1 for r in results if r.verdict is Verdict.PASS and r.unchecked)
    # A pass that nothing but the modes' agreement stands behind is counted apart.
    parts = [f"{n} {v.value}"
             + (f" ({unchecked} of them unchecked)" if v is Verdict.PASS and unchecked else "")
             for v, n in counts.items() if n]
    cases = len({r.case for r in results})
    text = f"{_count(cases, 'case')} at {_count(len(results), 'point')}: " + (", ".join(parts)
                                                                              or "nothing ran")
    if not_run:
        text += f"; {not_run} not run"
    if seconds is not None:
        text += f" in {seconds:.1f} s"
    return text


def time_by_mode(results: Sequence[Result], seconds: float) -> str:
    """Where a run's time went: each mode's time over every point, summed over the workers, with its
    share of all the modes' time, and that total beside the run's `seconds` (the rest being the
    oracles, the workers' start, judging and reports); "" where no mode was timed."""
    by_mode: dict[str, float] = {}
    for r in results:
        for name, outcome in r.outcomes.items():
            by_mode[name] = by_mode.get(name, 0.0) + outcome.seconds
    total = sum(by_mode.values())
    if total <= 0:
        return ""
    parts = [f"{name} {t:.1f} s ({100 * t / total:.0f}%)" for name, t in by_mode.items()]
    return (f"time in each mode, summed over the workers: {', '.join(parts)}; "
            f"the modes {total:.1f} s of the run's {seconds:.1f} s")


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def render(report: Report) -> str:
    return "\n".join([*(line(r) for r in report.results), *(explored(e) for e in report.explore),
                      summary(report.results)]) + "\n"
