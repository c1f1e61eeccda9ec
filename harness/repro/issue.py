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


def render(result: Result, script: str, environment: Mapping[str, str], description: str) -> str:
    """The issue text for `result`, with `script` (repro.py) as the standalone code."""
    modes = ", ".join(result.outcomes) + (" agree" if result.verdict is Verdict.PASS else " disagree")
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

The same `tf.custom_gradient` function, differentiated to order {result.order} at `{result.point}`, behaves
differently in eager mode, inside `tf.function`, and in a `tf.compat.v1` graph with `tf.gradients`:

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
