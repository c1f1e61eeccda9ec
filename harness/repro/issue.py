"""ISSUE.md: a bug report in the shape TensorFlow's tracker asks for. Pure text."""

from __future__ import annotations

from typing import Mapping

from harness import oracle_names
from harness.criteria.compare import compare_outcomes
from harness.oracle_names import NUMERIC, UPSTREAM
from harness.records import OracleStatus, Result, Status, Verdict

__all__ = ["bisect_line", "render"]


def _every(result: Result) -> str:
    """"every mode", or "every mode that ran" where one was skipped."""
    skipped = any(o.status is Status.SKIP for o in result.outcomes.values())
    return "every mode that ran" if skipped else "every mode"


def _headline(result: Result) -> str:
    """What the title says happened: true for this result, whatever its verdict."""
    names = ", ".join(m for m, o in result.outcomes.items() if o.status is not Status.SKIP)
    every = _every(result)
    if result.verdict in (Verdict.CRASH, Verdict.TIMEOUT):
        dead = [m for m, o in result.outcomes.items() if o.status in (Status.CRASH, Status.TIMEOUT)]
        return (
            f"{', '.join(dead) or names}"
            f" {'crashes' if result.verdict is Verdict.CRASH else 'times out'}"
        )
    if result.modes_disagree:
        return f"{names} disagree"
    differ = [n for n, o in result.oracles.items() if o.status is OracleStatus.DIFFER]
    if UPSTREAM in differ and NUMERIC not in differ:
        o = result.oracles[UPSTREAM]
        if o.details and o.details[0].startswith(("grad_fn fails", "the function raises")):
            return (
                f"{every} agrees ({names}), and the weighted chain raises where the plain one"
                " does not"
            )
        return (
            f"{every} agrees ({names}), and the values with upstream weights differ from the"
            " numeric derivative"
        )
    if differ:
        words = oracle_names.ROWS[differ[0]].words
        return f"{every} agrees ({names}), and the values differ from {words}"
    return f"{names} agree"


def _how(result: Result) -> str:
    """What each mode did, modes that did the same together: "eager and graph raise ValueError;
    function raises InternalError"."""
    groups: dict[str, list[str]] = {}
    for mode, o in result.outcomes.items():
        if o.status is not Status.SKIP:
            key = f"raise{{}} {o.error.type}" if o.status is Status.ERROR and o.error else (
                "return{} values" if o.status is Status.OK else f"end{{}} {o.status.value}")
            groups.setdefault(key, []).append(mode)
    if len(groups) == 1:  # the same kind everywhere: values that differ
        ref = result.yardstick or next(iter(result.outcomes))
        base = result.outcomes[ref]
        plain = [m for m in next(iter(groups.values()))
                 if m != ref and compare_outcomes(base, result.outcomes[m], upstream=False)]
        if plain:
            return (
                f"{' and '.join(plain)} return{'s' if len(plain) == 1 else ''} other values than"
                f" {ref}"
            )
        weighted = [m for m in next(iter(groups.values()))
                    if m != ref and compare_outcomes(base, result.outcomes[m], upstream=True)]
        if not weighted:
            return f"{_every(result)} returns values"
        return (f"{' and '.join(weighted)} return{'s' if len(weighted) == 1 else ''} the same "
                f"values as {ref} for "
                "the plain sum of the outputs, and other values with upstream weights")
    parts = []
    for key, modes in groups.items():
        verb = key.format("s" if len(modes) == 1 else "")
        parts.append(f"{', '.join(modes[:-1]) + ' and ' if len(modes) > 1 else ''}{modes[-1]} "
                     f"{verb}")
    return "; ".join(parts)


def _behaviour(result: Result, function: str = "`tf.custom_gradient` function") -> str:
    at = f"differentiated to order {result.order} at `{result.point}`"
    if result.verdict in (Verdict.CRASH, Verdict.TIMEOUT):
        return (
            f"The {function}, {at},"
            f" {'kills the process' if result.verdict is Verdict.CRASH else 'hangs'}:"
        )
    if result.modes_disagree:
        return (f"The same {function}, {at}, does not do the same in {_every(result)}: "
                f"{_how(result)}.")
    upstream = result.oracles.get(UPSTREAM)
    if upstream is not None and upstream.status is OracleStatus.DIFFER:
        return (f"The {function}, {at}, gives the same result in {_every(result)}, and it is "
                "wrong "
                "inside any loss but the plain sum of its outputs: `repro.py` computes the plain "
                "sum only, so it shows the modes agreeing; the harness's upstream-gradient check "
                "(the explanation below) is what shows the difference:")
    if any(o.status is OracleStatus.DIFFER for o in result.oracles.values()):
        return (f"The {function}, {at}, gives the same result in {_every(result)}, and it is "
                "wrong:")
    return f"The {function}, {at}, gives the same result in {_every(result)}:"


# TensorFlow's bug template, heading by heading; render fills it in.
_TEMPLATE = """\
# {title} ({headline})

### Issue type

Bug

### Have you reproduced the bug with TensorFlow Nightly?

Not yet: seen on the release below.

### Source

binary

### TensorFlow version

{tensorflow} ({tensorflow_git}){seen_line}{bisect_line}

### Custom code

{custom}

### OS platform and distribution

{platform}

### Python version

{python} (NumPy {numpy})

### Current behavior?

{behaviour} {reason}{details}

### Standalone code to reproduce the issue

```python
{script}
```{note_line}

### Relevant log output

```
{output}
```

Found by the harness case `{case}` at `{point}` (verdict `{verdict}`): `{rerun}`
"""


def _build(build: Mapping) -> str:
    kind = "tf-nightly" if ".dev" in str(build.get("version", "")) else "tensorflow"
    day = f"{build['date']}, " if build.get("date") else ""
    return f"{kind} {build.get('version', '?')} ({day}GIT_VERSION {build.get('git') or 'unknown'})"


def bisect_line(bisected: Mapping) -> str:
    """The sentence a bisect's answer (schema harness.bisect/1) adds: between which builds the
    result changed, and the commits between them."""
    good, bad = bisected["good"], bisected["bad"]
    commits = (f": {bisected['compare']}" if bisected.get("compare")
               else "; the commits between them are unknown")
    return (f"Bisected with the harness over {bisected.get('n', '?')} TensorFlow builds "
            f"(`python -m harness bisect`, {bisected.get('observed', '?')} of them run): the "
            f"result changed between {_build(good)}, the last with the --good build's result, and "
            f"{_build(bad)}, the first with another ({bad.get('result', '')}){commits}")


def render(result: Result, script: str, environment: Mapping[str, str], description: str,
           output: str, seen: str = "", note: str = "", origin: str = "", library: str = "",
           bisected: str = "") -> str:
    """The issue text for `result`: the template's headings, the environment, the explanation,
    `script` (repro.py) and `output`, what running it printed.

    Args:
      seen: a sentence naming the TensorFlow releases where this was seen (from a version
        matrix), if known.
      bisected: a sentence naming the builds where the result changed (`bisect_line`), if
        known.
      note: a sentence on the script, e.g. why it is the complete one.
      origin, library: for a function from an installed library, its module and name and the
        distribution with its version: the title and "Custom code" name them.
    """
    details = "".join(f"\n- {d}" for d in result.details[:_DETAILS])
    if len(result.details) > _DETAILS:
        details += (
            f"\n- ({len(result.details) - _DETAILS} more lines: run the harness command below)"
        )
    return _TEMPLATE.format(
        title=f"{library.split()[0]}: `{origin}`" if library
        else f"tf.custom_gradient: {description}", headline=_headline(result),
        **{key: environment.get(key, "?")
           for key in ("tensorflow", "tensorflow_git", "platform", "python", "numpy")},
        seen_line=f"\n\n{seen}" if seen else "",
        bisect_line=f"\n\n{bisected}" if bisected else "",
        custom=f"No: the function under test, `{origin}`, comes from {library}" if library
        else "Yes", behaviour=_behaviour(result, *([f"function `{origin}`"] if origin else [])),
        reason=result.reason, details=details, script=script.rstrip(),
        note_line=f"\n\n{note}" if note else "", output=output.rstrip(), case=result.case,
        point=result.point, verdict=result.verdict.value, rerun=result.rerun)


_DETAILS = 4
