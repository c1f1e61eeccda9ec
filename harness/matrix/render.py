"""Renders a merged matrix: Markdown, one self-contained HTML page, and JSON.

Each renderer is a pure `fn(matrix) -> str`; `merge.main` writes the files.
"""

from __future__ import annotations

import html as _html
import json

from harness.matrix.merge import ABSENT, NOT_INSTALLED, SCHEMA, Cell, Column, Matrix, Row

__all__ = ["html", "json_text", "markdown"]

# One display row per verdict and per kind of missing cell: (css class, colour, text colour, meaning).
_LEGEND = (
    ("pass", "#c9f0d3", "#0f3d1e", "every mode agrees with the reference mode, and the oracles match"),
    ("xfail", "#d3e3ff", "#10305f", "the declared deviation happened"),
    ("xpass", "#ffe39a", "#4d3800", "a declared deviation did not happen: often a TensorFlow fix"),
    ("fail", "#ffb8b8", "#5c0000", "modes disagree, an oracle differs, or a gradient is malformed"),
    ("flaky", "#ff8fd0", "#4d0030", "a mode's values changed between repeated runs"),
    ("error", "#e4c6ff", "#3d0a66", "the case itself is broken"),
    ("crash", "#4a4a4a", "#ffffff", "a mode killed the process running it"),
    ("timeout", "#ffc58f", "#5c2d00", "a mode ran past its time limit"),
    ("skip", "#e6e9ec", "#3c4650", "not run, with the reason"),
    ("absent", "#ffffff", "#8a939c", "this version's run did not select the case and point"),
    ("noinst", "#eeeeee", "#5a5a5a", "this TensorFlow version could not be installed"),
)
_KNOWN = {name for name, *_ in _LEGEND}


def _env_line(column: Column) -> str:
    if column.not_installed is not None:
        return f"{NOT_INSTALLED}: {column.not_installed}"
    env = column.environment
    parts = [f"{key} {env[key]}" for key in ("numpy", "python") if key in env]
    return ", ".join(parts)


def _summary(matrix: Matrix) -> str:
    changed, total = len(matrix.changed), len(matrix.rows)
    if len(matrix.columns) < 2:
        return f"{total} rows from one TensorFlow version; nothing to compare."
    if not changed:
        return f"No row of {total} changed between versions."
    return f"{changed} of {total} rows changed between versions; they come first."


def _differs(row: Row, index: int) -> bool:
    """Whether cell `index` behaves differently from the nearest earlier version that ran the row."""
    cell = row.cells[index]
    if not cell.observed:
        return False
    earlier = [c for c in row.cells[:index] if c.observed]
    return bool(earlier) and earlier[-1].behaviour != cell.behaviour


# --- Markdown --------------------------------------------------------------------------------------

def _md(text: str) -> str:
    text = " ".join(str(text).split())
    text = text.replace("\\", "\\\\").replace("|", "\\|").replace("`", "\\`").replace("*", "\\*")
    return _html.escape(text, quote=False)


def markdown(matrix: Matrix) -> str:
    """A compact GitHub table: changed rows first, each saying where it changed.

    A cell that differs from the version before it is in bold; a version that
    could not be installed is listed under the table with the reason.
    """
    versions = [f"{_md(c.version)}{' (not installed)' if c.not_installed is not None else ''}"
                for c in matrix.columns]
    lines = ["## TensorFlow version matrix", "",
             "; ".join(f"**{_md(c.version)}**: {_md(_env_line(c))}" if _env_line(c) else f"**{_md(c.version)}**"
                       for c in matrix.columns),
             "", _summary(matrix), "",
             "| case[point] | mode | where it changed | " + " | ".join(versions) + " |",
             "|---|---|---|" + "---|" * len(versions)]
    for row in matrix.rows:
        cells = [f"**{_md(c.text)}**" if _differs(row, i) else _md(c.text) for i, c in enumerate(row.cells)]
        lines.append(f"| {_md(row.name)} | {_md(row.mode)} | {_md(row.change)} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


# --- HTML ------------------------------------------------------------------------------------------

_CSS = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 1.5em 2em; color: #1f2328; }
h1 { font-size: 1.4em; margin: 0 0 .3em; }
p.meta { margin: .2em 0; color: #444c56; }
.legend { display: flex; flex-wrap: wrap; gap: .4em 1.2em; margin: .9em 0; padding: .6em .8em;
          border: 1px solid #d0d7de; border-radius: 6px; background: #f6f8fa; max-width: 88em; }
.legend span.key { display: inline-block; min-width: 4.5em; padding: 0 .5em; margin-right: .35em;
                   border: 1px solid #c2c9d1; border-radius: 3px; text-align: center; }
.legend .item { white-space: nowrap; font-size: 12.5px; }
label.filter { display: inline-block; margin: .2em 0 .7em; cursor: pointer; }
table { border-collapse: collapse; }
th, td { border: 1px solid #d0d7de; padding: 3px 9px; text-align: left; vertical-align: top; }
thead th { position: sticky; top: 0; background: #f6f8fa; z-index: 1; }
thead th.version { min-width: 10em; }
thead th small { display: block; font-weight: normal; color: #57606a; max-width: 16em; white-space: normal; }
td.name { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 12.5px; white-space: nowrap; }
td.mode { white-space: nowrap; }
td.change { min-width: 12em; max-width: 22em; color: #9a3412; font-size: 12.5px; }
td.c { cursor: pointer; white-space: nowrap; font-size: 12.5px; }
td.c:hover, td.c:focus { outline: 2px solid #0969da; outline-offset: -2px; }
td.c.selected { outline: 3px solid #0969da; outline-offset: -3px; }
td.c.differs { box-shadow: inset 4px 0 0 #d4380d; font-weight: 600; }
tr.group th { background: #fff; text-align: left; padding-top: .9em; font-size: 13px; border-left: 0; border-right: 0; }
body.only-changed tr.same { display: none; }
td.absent { font-style: italic; }
td.noinst, span.noinst { background: repeating-linear-gradient(45deg, #eeeeee 0 6px, #e0e0e0 6px 12px); }
#panel { position: fixed; right: 1.2em; bottom: 1.2em; width: 34em; max-width: calc(100vw - 3em);
         max-height: 50vh; overflow: auto; background: #fff; border: 1px solid #8c959f; border-radius: 6px;
         box-shadow: 0 4px 16px rgba(0,0,0,.18); padding: .7em .9em; z-index: 2; }
#panel[hidden] { display: none; }
#panel h2 { font-size: 1em; margin: 0 1.8em .4em 0; font-family: ui-monospace, SFMono-Regular, Menlo, monospace; }
#panel dl { margin: 0; display: grid; grid-template-columns: max-content 1fr; gap: .15em .8em; }
#panel dt { color: #57606a; }
#panel dd { margin: 0; white-space: pre-wrap; word-break: break-word; }
#panel dd.code { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 12px; }
#panel button { position: absolute; top: .35em; right: .5em; border: 0; background: none; font-size: 1.3em;
                cursor: pointer; color: #57606a; }
"""

# textContent only: nothing from a report is ever parsed as HTML.
_JS = """
(function () {
  var panel = document.getElementById('panel');
  var fields = ['status', 'verdict', 'stage', 'reason', 'error', 'details', 'rerun'];
  var selected = null;
  function show(td) {
    if (selected) selected.classList.remove('selected');
    selected = td;
    td.classList.add('selected');
    document.getElementById('p-head').textContent = td.dataset.head;
    fields.forEach(function (f) {
      var dd = document.getElementById('p-' + f), value = td.dataset[f] || '';
      dd.textContent = value;
      dd.hidden = dd.previousElementSibling.hidden = !value;
    });
    panel.hidden = false;
  }
  document.getElementById('grid').addEventListener('click', function (e) {
    var td = e.target.closest('td.c');
    if (td) show(td);
  });
  document.getElementById('grid').addEventListener('keydown', function (e) {
    var td = e.target.closest('td.c');
    if (td && (e.key === 'Enter' || e.key === ' ')) { e.preventDefault(); show(td); }
  });
  function hide() {
    panel.hidden = true;
    if (selected) selected.classList.remove('selected');
  }
  document.getElementById('p-close').addEventListener('click', hide);
  document.addEventListener('keydown', function (e) { if (e.key === 'Escape') hide(); });
  document.getElementById('only-changed').addEventListener('change', function (e) {
    document.body.classList.toggle('only-changed', e.target.checked);
  });
})();
"""


def _e(text: object) -> str:
    return _html.escape(str(text), quote=True)


def _css_class(cell: Cell) -> str:
    if cell.status == NOT_INSTALLED:
        return "noinst"
    if cell.status == ABSENT:
        return "absent"
    return cell.verdict if cell.verdict in _KNOWN else "error"


def _legend_css() -> str:
    return "\n".join(f"td.{name}, span.{name} {{ background-color: {bg}; color: {fg}; }}"
                     for name, bg, fg, _ in _LEGEND)


def _html_cell(row: Row, column: Column, index: int) -> str:
    cell = row.cells[index]
    classes = ["c", _css_class(cell)] + (["differs"] if _differs(row, index) else [])
    data = {"head": f"{row.name} · {row.mode} · TensorFlow {column.version}", "status": cell.status,
            "verdict": cell.verdict, "stage": cell.stage, "reason": cell.reason, "error": cell.error,
            "details": "\n".join(cell.details), "rerun": cell.rerun}
    attributes = " ".join(f'data-{key}="{_e(value)}"' for key, value in data.items() if value)
    title = cell.explanation or cell.text
    return f'<td class="{" ".join(classes)}" tabindex="0" title="{_e(title)}" {attributes}>{_e(cell.text)}</td>'


def _html_head(column: Column) -> str:
    # The reason can be long: it is in the title, the page's first lines and every cell, not here,
    # where it would widen the column.
    note = NOT_INSTALLED if column.not_installed is not None else _env_line(column)
    small = f"<small>{_e(note)}</small>" if note else ""
    classes = "version noinst" if column.not_installed is not None else "version"
    return f'<th class="{classes}" title="{_e(column.label)}">{_e(column.version)}{small}</th>'


def html(matrix: Matrix) -> str:
    """One self-contained page: the matrix as a colour grid with a legend.

    Inline CSS and JavaScript only; every text from a report is escaped. A
    cell's explanation shows on hover (its title) and, on click, in a details
    panel with the error, the result's details and the rerun command.
    """
    width = 3 + len(matrix.columns)
    body = []
    groups = ((f"Changed between versions ({len(matrix.changed)})", "changed", [r for r in matrix.rows if r.changed]),
              (f"Same in every version that ran it ({len(matrix.rows) - len(matrix.changed)})", "same",
               [r for r in matrix.rows if not r.changed]))
    for title, kind, rows in groups:
        if not rows:
            continue
        body.append(f'<tr class="group {kind}"><th colspan="{width}">{_e(title)}</th></tr>')
        for row in rows:
            cells = "".join(_html_cell(row, column, i) for i, column in enumerate(matrix.columns))
            body.append(f'<tr class="{kind}"><td class="name">{_e(row.name)}</td><td class="mode">{_e(row.mode)}</td>'
                        f'<td class="change">{_e(row.change)}</td>{cells}</tr>')
    legend = "".join(f'<span class="item"><span class="key {name}">{_e("not installed" if name == "noinst" else name)}'
                     f'</span>{_e(meaning)}</span>' for name, _, _, meaning in _LEGEND)
    legend += ('<span class="item"><span class="key" style="box-shadow: inset 4px 0 0 #d4380d; font-weight: 600">bold</span>'
               'differs from the version before it</span>')
    versions = ", ".join(f"{c.version} ({_env_line(c)})" if _env_line(c) else c.version for c in matrix.columns)
    fields = "".join(f'<dt>{_e(name)}</dt><dd id="p-{name}"{" class=code" if name in ("rerun", "details") else ""}>'
                     '</dd>' for name in ("status", "verdict", "stage", "reason", "error", "details", "rerun"))
    heads = "".join(_html_head(c) for c in matrix.columns)
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>TensorFlow version matrix</title>
<style>{_CSS}{_legend_css()}
</style>
</head>
<body>
<h1>TensorFlow version matrix</h1>
<p class="meta">TensorFlow {_e(versions)}</p>
<p class="meta">{_e(_summary(matrix))} Hover over a cell for its explanation; click it for the details.</p>
<div class="legend">{legend}</div>
<label class="filter"><input type="checkbox" id="only-changed"> only rows that changed</label>
<table id="grid">
<thead><tr><th>case[point]</th><th>mode</th><th>where it changed</th>{heads}</tr></thead>
<tbody>
{chr(10).join(body)}
</tbody>
</table>
<div id="panel" hidden><button id="p-close" title="close" aria-label="close">&times;</button>
<h2 id="p-head"></h2><dl>{fields}</dl></div>
<script>{_JS}</script>
</body>
</html>
"""


# --- JSON ------------------------------------------------------------------------------------------

def json_text(matrix: Matrix) -> str:
    """The merged data as strict JSON, schema "harness.matrix/1".

    Columns list each version with its environment, its reports and, for one
    that could not be installed, the reason. Each row has its cells keyed by
    version, and "change" (empty when the row behaves the same everywhere).
    A cell's status is "ok", an exception class, "crash", "timeout", or one of
    "not run", "absent" and "not installed"; its verdict is empty for the last two.
    """
    data = {
        "schema": SCHEMA,
        "versions": [{"version": c.version, "installed": c.not_installed is None,
                      "not_installed_reason": c.not_installed, "environment": dict(c.environment),
                      "reports": list(c.reports)} for c in matrix.columns],
        "modes": list(matrix.modes),
        "rows": [{"case": r.case, "point": r.point, "mode": r.mode, "change": r.change,
                  "cells": {c.version: {"status": cell.status, "verdict": cell.verdict, "stage": cell.stage,
                                        "reason": cell.reason, "error": cell.error, "details": list(cell.details),
                                        "rerun": cell.rerun}
                            for c, cell in zip(matrix.columns, r.cells)}}
                 for r in matrix.rows],
    }
    return json.dumps(data, indent=1, ensure_ascii=False, allow_nan=False) + "\n"
