"""Reading the per-version JSON reports the matrix merges, and refusing, in one line naming the
file, what is not a current harness report. Only `load_report` reads a file."""

from __future__ import annotations

import json

from harness.report.json_report import SCHEMA as REPORT_SCHEMA

__all__ = ["HOW_TO_MAKE", "MATRIX_SCHEMA", "MergeError", "READ_SCHEMAS", "REPORT_SCHEMA",
           "check_report", "load_report"]

MATRIX_SCHEMA = "harness.matrix/1"  # a merged matrix, which is not a report
# The report schemas merged: schema 2 summarizes large values, which the matrix never reads, and is
# otherwise schema 1, so a matrix of older reports beside newer ones still merges.
READ_SCHEMAS = ("harness.report/1", REPORT_SCHEMA)

HOW_TO_MAKE = "give a report written by `python -m harness --json_out`"


class MergeError(Exception):
    """Reports that cannot be merged; the message names the file and what to do."""


def _fail(name: str, what: str) -> MergeError:
    return MergeError(f"{name}: {what}")


def check_report(name: str, data: object) -> None:
    """Raises MergeError unless `data` has the shape of a report of a schema in READ_SCHEMAS."""
    if not isinstance(data, dict) or "schema" not in data or "results" not in data:
        found = (f"keys {sorted(data)[:6]}" if isinstance(data, dict)
                 else f"a JSON {type(data).__name__}")
        raise _fail(name,
                    f"not a harness report (no \"schema\" and \"results\"; found {found}); "
                    f"{HOW_TO_MAKE}")
    schema = data["schema"]
    if schema == MATRIX_SCHEMA:
        raise _fail(name,
                    f"this is a merged matrix ({MATRIX_SCHEMA}), not a report; merge the "
                    "per-version reports "
                          "it was made from")
    if schema not in READ_SCHEMAS:
        raise _fail(name,
                    f"schema {schema!r}, but this harness reads "
                    f"{' and '.join(map(repr, READ_SCHEMAS))}; regenerate the report with this "
                    "version of the harness")
    environment = data.get("environment")
    if not isinstance(environment, dict) or not isinstance(environment.get("tensorflow"), str):
        raise _fail(name,
                    "environment.tensorflow is missing, so the TensorFlow version is unknown; "
                          f"{HOW_TO_MAKE}")
    if not isinstance(data["results"], list):
        raise _fail(name,
                    f"\"results\" is a JSON {type(data['results']).__name__}, not a list; "
                    f"{HOW_TO_MAKE}")
    modes = data.get("modes", [])
    if not isinstance(modes, list) or not all(isinstance(m, str) for m in modes):
        raise _fail(name,
                    f"\"modes\" is {_json_type(modes)}, not a list of mode names; {HOW_TO_MAKE}")
    for index, result in enumerate(data["results"]):
        _check_result(name, index, result)


def _json_type(value: object) -> str:
    """What a JSON value is, for a message: `a string "eager"`, `a number 7`, `a list`."""
    kinds = {str: "a string", bool: "a boolean", int: "a number", float: "a number",
             list: "a list", dict: "an object"}
    kind = kinds.get(type(value), "null" if value is None else type(value).__name__)
    return f"{kind} {json.dumps(value)[:40]}" if isinstance(value, (str, int, float)) else kind


# The fields of a result, and of each of its modes, that the matrix reads beyond those every report
# has: a report may lack them (older reports do), but one that has them has them of these types.
_RESULT_FIELDS = {"reason": str, "rerun": str, "unchecked": str, "details": list}
_MODE_FIELDS = {"stage": str, "error_type": str, "error_message": str}


def _check_result(name: str, index: int, result: object) -> None:
    where = f"results[{index}]"
    if not isinstance(result, dict):
        raise _fail(name, f"{where} is not an object; {HOW_TO_MAKE}")
    for key in ("case", "point", "verdict"):
        if not isinstance(result.get(key), str):
            raise _fail(name,
                        f"{where} has no string {key!r} (found {result.get(key)!r}); {HOW_TO_MAKE}")
    modes = result.get("modes")
    if not isinstance(modes,
                      dict) or not all(isinstance(m, dict) and isinstance(m.get("status"), str)
                                              for m in modes.values()):
        raise _fail(name, f"{where} ({result['case']}[{result['point']}]) has no \"modes\" with a "
                          f"\"status\" each; {HOW_TO_MAKE}")
    fields = [(key, result.get(key), kind, where) for key, kind in _RESULT_FIELDS.items()]
    fields += [(key, outcome.get(key), kind, f"{where}.modes.{mode}")
               for mode, outcome in modes.items()
               for key, kind in _MODE_FIELDS.items()]
    for key, value, kind, at in fields:
        if value is not None and not isinstance(value, kind):
            wanted = "a list of strings" if kind is list else "a string"
            raise _fail(name, f"{at}.{key} is {_json_type(value)}, not {wanted}; {HOW_TO_MAKE}")
    if not all(isinstance(d, str) for d in result.get("details") or ()):
        raise _fail(name, f"{where}.details holds something that is not a string; {HOW_TO_MAKE}")


def load_report(path: str) -> dict:
    """Reads one JSON report and checks that it is a report of a schema in READ_SCHEMAS.

    Raises:
      MergeError: the file is missing or unreadable, not JSON, not a harness
        report, or of another schema version.
    """
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        raise _fail(path, f"no such file; {HOW_TO_MAKE}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise _fail(path, f"cannot read it ({e}); {HOW_TO_MAKE}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        hint = (" (this is the JSON Lines stream; give the --json_out file beside it)"
                if path.endswith(".jsonl") else "")
        raise _fail(
            path, f"not JSON ({e.msg} at line {e.lineno}, column {e.colno}){hint}; {HOW_TO_MAKE}"
        ) from None
    check_report(path, data)
    return data
