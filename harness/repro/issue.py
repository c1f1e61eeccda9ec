"""ISSUE.md: a bug report in the shape TensorFlow's tracker asks for. Pure text."""

from __future__ import annotations

from typing import Mapping

from harness.records import ModeOutcome, Result, Status, Verdict

__all__ = ["render"]


def _outcome(outcome: ModeOutcome) -> str:
    if outcome.status is Status.OK:
        lines = [f"{outcome.mode}: ok"]
        for k, order in enumerate(outcome.orders):
            values = [None if o.value is None else o.value.tolist() for o in order]
            lines.append(f"  order {k}: {values}")
        return "\n".join(lines)
    if outcome.error is not None:
        return f"{outcome.mode}: {outcome.error.type} at {outcome.error.stage}: {outcome.error.first_line}"
    return f"{outcome.mode}: {outcome.status.value}"


def _headline(result: Result) -> str:
    """What the title says happened: true for this result, whatever its verdict."""
    names = ", ".join(m for m, o in result.outcomes.items() if o.status is not Status.SKIP)
    if result.verdict in (Verdict.CRASH, Verdict.TIMEOUT):
        dead = [m for m, o in result.outcomes.items() if o.status in (Status.CRASH, Status.TIMEOUT)]
        return f"{', '.join(dead) or names} {'crashes' if result.verdict is Verdict.CRASH else 'times out'}"
    if result.modes_disagree:
        return f"{names} disagree"
    differ = [n for n, o in result.oracles.items() if o.status == "differ"]
    if "upstream" in differ and "numeric" not in differ:
        o = result.oracles["upstream"]
        if o.details and o.details[0].startswith(("grad_fn fails", "the function raises")):
            return f"every mode agrees ({names}), and the weighted chain raises where the plain one does not"
        return f"every mode agrees ({names}), and the values with upstream weights differ from the numeric derivative"
    if differ:
        words = {"numeric": "the numeric derivative", "upstream": "the numeric derivative with upstream weights",
                 "reference": "the reference implementation", "analytic": "the analytic values"}
        return f"every mode agrees ({names}), and the values differ from {words[differ[0]]}"
    return f"{names} agree"


def _behaviour(result: Result) -> str:
    at = f"differentiated to order {result.order} at `{result.point}`"
    if result.verdict in (Verdict.CRASH, Verdict.TIMEOUT):
        return f"The `tf.custom_gradient` function, {at}, {'kills the process' if result.verdict is Verdict.CRASH else 'hangs'}:"
    if result.modes_disagree:
        return (f"The same `tf.custom_gradient` function, {at}, behaves differently in eager mode, inside "
                "`tf.function`, and in a `tf.compat.v1` graph with `tf.gradients`:")
    if result.oracles.get("upstream") is not None and result.oracles["upstream"].status == "differ":
        return (f"The `tf.custom_gradient` function, {at}, gives the same result in every mode, and it is wrong "
                "inside any loss but the plain sum of its outputs: `repro.py` computes the plain sum only, so it "
                "shows the modes agreeing; the harness's upstream-gradient check (the explanation below) is what "
                "shows the difference:")
    if any(o.status == "differ" for o in result.oracles.values()):
        return f"The `tf.custom_gradient` function, {at}, gives the same result in every mode, and it is wrong:"
    return f"The `tf.custom_gradient` function, {at}, gives the same result in every mode:"


def render(result: Result, script: str, environment: Mapping[str, str], description: str) -> str:
    """The issue text for `result`, with `script` (repro.py) as the standalone code."""
    modes = _headline(result)
    observed = "\n".join(_outcome(o) for o in result.outcomes.values())
    reference = next(iter(result.outcomes.values()), None)
    expected = ("All modes return the same values (within the dtype's tolerance) and the same exceptions, "
                "and every gradient has the shape and dtype of its input.")
    if reference is not None and reference.status is Status.OK:
        expected += f" Eager mode returns:\n\n```\n{_outcome(reference)}\n```"
    details = "\n".join(f"- {d}" for d in result.details) or "- (none)"
    return f"""\
# tf.custom_gradient: {description} ({modes})

### Issue type

Bug

### Have you reproduced the bug with TensorFlow Nightly?

Not yet: seen on the release below.

### Source

binary

### TensorFlow version

{environment.get("tensorflow", "?")} ({environment.get("tensorflow_git", "?")})

### Custom code

Yes

### OS platform and distribution

{environment.get("platform", "?")}

### Python version

{environment.get("python", "?")} (NumPy {environment.get("numpy", "?")})

### Current behavior?

{_behaviour(result)}

{result.reason}

{details}

What each mode returned:

```
{observed}
```

Expected: {expected}

### Standalone code to reproduce the issue

```python
{script.rstrip()}
```

### Relevant log output

```
{observed}
```

Found by the harness case `{result.case}` at `{result.point}` (verdict `{result.verdict.value}`):

    {result.rerun}
"""
