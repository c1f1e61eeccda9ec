"""Renders a merged matrix: Markdown, one self-contained HTML page, and JSON.

Each renderer is a pure `fn(matrix) -> str`; `outputs.main` writes the files.
The Markdown and HTML open with what changed between releases, real changes
first and then which modes began or stopped applying (`Matrix.folds`), and show
one row per case and point (`Matrix.points`), the modes folded into each cell;
the JSON keeps a row per case, point and mode.
"""

from __future__ import annotations

import html as _html
import json
import re
from typing import Optional

from harness import mode_names
from harness.matrix.merge import (ABSENT, NO_KERAS3, NOT_INSTALLED, NOT_RUN, SCHEMA, Cell, Column,
                                  Fold, Matrix, Point)
from harness.printable import printable
from harness.records import VERDICTS

__all__ = ["html", "json_text", "markdown"]

# One display row per verdict (from the one table of verdicts, records.VERDICTS) and per kind of
# missing cell: (css class, colour, text colour, meaning).
_LEGEND = tuple((v.value, style.colour, style.text_colour, style.meaning)
                for v, style in VERDICTS.items()) + (
    ("absent", "#ffffff", "#8a939c", "this version's run did not select the case and point"),
    ("noinst", "#eeeeee", "#5a5a5a", "this TensorFlow version could not be installed"),
)
_KNOWN = {name for name, *_ in _LEGEND}

# A mode's status as its mark shows it: (css class, what the legend says).
_MARK_LEGEND = (
    ("m-ok", "ok"),
    ("m-exc", "raised an exception (its class on hover)"),
    ("m-crash", "crashed"),
    ("m-timeout", "timed out"),
    ("m-none", "not run or skipped"),
)


def _mark(mode: str) -> str:
    """The mark of `mode` inside a cell, and in the Markdown's cells: its row's, in
    harness.mode_names. A mode without a row (one this harness does not know, from another
    version's report) shows its whole name: two letters of it could be another mode's mark."""
    row = mode_names.ROWS.get(mode)
    return row.mark if row is not None else mode


def _mark_class(status: str) -> str:
    if status == "ok":
        return "m-ok"
    if status in ("crash", "timeout"):
        return f"m-{status}"
    if status in (NOT_RUN, "skip", NO_KERAS3):  # a missing Keras 3 is a skip, not an exception
        return "m-none"
    return "m-exc"


def _commit(column: Column) -> str:
    return f"commit {column.commit}" if column.commit else ""


def _environment(column: Column) -> list[str]:
    """["commit ef696751006", "keras 3.15.1", "tf_keras 2.21.0", "numpy 2.1.3", "python 3.11.7"]:
    what the build is, for a nightly, then what it ran with (the Keras 3 and Keras 2 beside it,
    "none" where it had none)."""
    env = column.environment
    return [_commit(column)] * bool(column.commit) + [
        f"{key} {env[key]}" for key in ("keras", "tf_keras", "numpy", "python") if key in env]


def _env_line(column: Column) -> str:
    if column.not_installed is not None:
        return f"{NOT_INSTALLED}: {column.not_installed}"
    return ", ".join(_environment(column))


# What the pages call the two kinds of change (`Step`): the words of every sentence about them.
_REAL = "a verdict or a mode's outcome"
_COVERAGE = "which modes apply"


def _summary(matrix: Matrix, points: tuple[Point, ...]) -> str:
    real = sum(p.kind == "changed" for p in points)
    coverage = sum(p.kind == "coverage" for p in points)
    total = len(points)
    if len(matrix.columns) < 2:
        return f"{total} case points from one TensorFlow version; nothing to compare."
    if not real + coverage:
        return f"No case point of {total} changed between versions."
    if not coverage:
        return (f"At {real} of {total} case points {_REAL} changed between versions; they come "
                "first.")
    if not real:
        return (f"At {coverage} of {total} case points only {_COVERAGE} changed between versions; "
                "they come first.")
    return (f"At {real} of {total} case points {_REAL} changed between versions, at {coverage} "
            f"more only {_COVERAGE}; they come first, in that order.")


def _lead(matrix: Matrix, points: tuple[Point, ...]) -> str:
    """The first sentence under "What changed between releases"."""
    real = [p for p in points if p.real]
    if len(matrix.columns) < 2:
        return "One TensorFlow version: nothing to compare."
    if not any(p.changed for p in points):
        return (f"Nothing: each of the {len(points)} case points behaves the same in every "
                "version that ran it.")
    if not real:
        # Not "no verdict changed": a case that begins to apply and passes changed its verdict
        # from skip, and is a change of coverage all the same (merge.Step.real).
        return (f"Only {_COVERAGE} changed, below: wherever a mode ran in both versions its "
                "outcome is the same.")
    return f"At {len(real)} of {len(points)} case points {_REAL} changed:"


# The line above the folds; each renderer says how its table shows a cell that changed.
_FOLDS_HEAD = (f"Where {_COVERAGE} changed (a mode skipped, or not run, on one side), by mode and "
               "release; each point is in the table, {marked} where it changed{more}:")


def _real_steps(point: Point) -> str:
    """"From 2.13.1: function: TypeError → AttributeError." for each real step of the point."""
    return " ".join(f"From {s.label}: {s.text}." for s in point.steps if s.real)


def _mode_line(mode: str, cell: Cell) -> str:
    """"forward: ValueError at order 2: the message", or "eager: ok"."""
    where = f" at {cell.stage}" if cell.stage and cell.status != "ok" else ""
    error = f": {cell.error}" if cell.error else ""
    return f"{mode}: {cell.status}{where}{error}"


# --- Markdown -------------------------------------------------------------------------------------

def _md(text: str) -> str:
    text = printable(" ".join(str(text).split()))
    text = text.replace("\\", "\\\\").replace("|", "\\|").replace("`", "\\`").replace("*", "\\*")
    return _html.escape(text, quote=False)


def _md_cell(point: Point, index: int) -> str:
    """The verdict, then only the modes that are not ok: "xfail · ValueError: g fw".

    "all" stands for every mode, and "rest" for the modes not run beside the
    one that crashed or timed out: "crash: g; not run: rest".
    """
    cells = point.cells(index)
    first = cells[0]
    if not first.observed:
        return first.status
    groups: dict[str, list[str]] = {}
    for mode, cell in zip(point.modes, cells):
        if cell.status != "ok":
            groups.setdefault(cell.status, []).append(_mark(mode))
    missing = {mode for mode, cell in zip(point.modes, cells) if cell.status == NO_KERAS3}
    keras3 = mode_names.KERAS3_MODES
    if missing and missing >= {m for m in point.modes if m in keras3}:  # said without marks
        groups[NO_KERAS3] = []
    quiet = (NOT_RUN, "skip")
    # nothing ran (a skipped point), or everything was ok
    if all(status in quiet for status in groups):
        return first.word
    # Stable: what ran first, then a missing Keras 3, then what did not run.
    ordered = sorted(groups.items(),
                     key=lambda item: 2 if item[0] in quiet else item[0] == NO_KERAS3)
    stopped = not any(c.status == "ok" for c in cells) and ordered[0][0] not in quiet
    parts = []
    for status, marks in ordered:
        if status == NO_KERAS3 and not marks:
            parts.append(NO_KERAS3)
            continue
        if len(marks) == len(cells) > 1:
            who = "all"
        elif status == NOT_RUN and stopped and len(marks) >= 3:
            who = "rest"
        else:
            who = " ".join(marks)
        parts.append(f"{status}: {who}")
    head = "" if ordered[0][0] == first.verdict else f"{first.verdict} · "
    return head + "; ".join(parts)


def markdown(matrix: Matrix) -> str:
    """What changed between releases, then a table: a row per case and point, a column per version.

    What changed lists first each point whose verdict or a mode's outcome changed, with those
    steps only (`Step.real`), the one that changed latest first, then a line per mode, release
    and direction where a mode began or
    stopped applying (`Matrix.folds`), naming the points where there are at most
    `_NAMED_IN_FOLD`. Each cell is the verdict and the modes that were not ok, by their marks
    (each mode's row's `mark` in harness.mode_names, listed above the table); a cell that differs
    from the version before it is in bold. A version that could not be installed says why on the
    versions line, and a nightly names its commit there and in its column's head.
    """
    points = matrix.points
    heads = [_md(c.version) + (" (not installed)" if c.not_installed is not None
                               else f" ({_md(_commit(c))})" if c.commit else "")
             for c in matrix.columns]
    lines = ["## TensorFlow version matrix", ""]
    lines += [f"- **{_md(c.version)}**: {_md(_env_line(c))}" if _env_line(c)
              else f"- **{_md(c.version)}**"
              for c in matrix.columns]
    lines += ["", "Modes, in each cell only where not ok: "
              + ", ".join(f"{_mark(m)} {_md(m)}" for m in matrix.modes)
              + ". A cell in bold differs from the "
              "version before it.", "", "### What changed between releases", ""]
    lines += _md_changes(matrix, points)
    lines += ["", "### Every case point", "", _summary(matrix, points), "",
              "| case[point] | " + " | ".join(heads) + " |",
              "|---|" + "---|" * len(heads)]
    for point in points:
        cells = [f"**{_md(_md_cell(point, i))}**" if point.step_at(i) else _md(_md_cell(point, i))
                 for i in range(len(matrix.columns))]
        lines.append(f"| {_md(point.name)} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


# A fold of this many points or fewer names them on its line; a longer one leaves them to the table.
_NAMED_IN_FOLD = 3


def _newest_first(points: tuple[Point, ...]) -> list[tuple[int, Point]]:
    """The points whose verdict or a mode's outcome changed, each with its row's index, the one
    that changed latest first (a change under the nightly leads: it is the news), in row order
    among those that changed at the same version."""
    real = [(i, p) for i, p in enumerate(points) if p.real]
    return sorted(real, key=lambda item: -max(s.column for s in item[1].steps if s.real))


def _md_changes(matrix: Matrix, points: tuple[Point, ...]) -> list[str]:
    """The lines under "What changed between releases": the lead, the real changes (newest
    first), the folds."""
    lines = [_md(_lead(matrix, points))]
    real = [p for _, p in _newest_first(points)]
    if real:
        lines.append("")
    lines += [f"- **{_md(p.name)}**: {_md(_real_steps(p))}" for p in real]
    folds = matrix.folds
    if folds:
        lines += ["", _md(_FOLDS_HEAD.format(marked="in bold", more="")), ""]
    for fold in folds:
        names = (": " + ", ".join(name for name, _ in fold.points)
                 if len(fold.points) <= _NAMED_IN_FOLD else "")
        lines.append(f"- {_md(fold.text + names)}.")
    return lines


# --- HTML -----------------------------------------------------------------------------------------

# Sizes are in px where they decide whether ten release columns fit in a 1400-pixel window: the case
# column is at most 22em of 12px, and a cell is about 92px: four 19px marks a line.
_CSS = """
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 1em 1.2em;
       color: #1f2328; }
h1 { font-size: 1.4em; margin: 0 0 .3em; }
h2 { font-size: 1.15em; margin: .8em 0 .3em; }
code { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 12.5px; }
#changes p { margin: .3em 0; }
#changes ul { margin: .2em 0 .5em; padding-left: 1.4em; }
#changes li { margin: .15em 0; }
#changes a { color: inherit; text-decoration: none; }
#changes a:hover code { text-decoration: underline; }
#changes ul.real code { font-weight: 600; }
#changes summary { cursor: pointer; }
#changes p.points { margin: .2em 0 .5em; max-height: 10em; overflow: auto; font-size: 12px;
                    color: #444c56; }
#changes p.points code { font-size: 11.5px; }
tr.p { scroll-margin-top: 9em; }
tr.p:target td.name { background: #fff8c5; }
p.meta { margin: .2em 0; color: #444c56; }
.legend { display: flex; flex-wrap: wrap; gap: .3em 1.1em; margin: .6em 0; padding: .5em .8em;
          border: 1px solid #d0d7de; border-radius: 6px; background: #f6f8fa; font-size: 12.5px; }
.legend .row { flex-basis: 100%; display: flex; flex-wrap: wrap; gap: .3em 1.1em; }
.legend .row b { min-width: 7.5em; }
.legend span.key { display: inline-block; min-width: 4.5em; padding: 0 .5em; margin-right: .35em;
                   border: 1px solid #c2c9d1; border-radius: 3px; text-align: center; }
.legend .item { white-space: nowrap; }
.legend .mk { margin-right: .3em; }
.controls { display: flex; flex-wrap: wrap; align-items: center; gap: .4em 1.2em; margin: .5em 0; }
.controls label { cursor: pointer; }
.controls input[type=search] { width: 16em; }
#shown { color: #57606a; font-size: 12.5px; }
.wrap { overflow: auto; max-height: calc(100vh - 1em); border: 1px solid #d0d7de;
        border-radius: 4px; }
table { border-collapse: separate; border-spacing: 0; }
th, td { border: 0 solid #d0d7de; border-width: 0 1px 1px 0; padding: 3px 4px; text-align: left;
         vertical-align: top; }
thead th { position: sticky; top: 0; background: #f6f8fa; z-index: 2; font-size: 12.5px; }
thead th.version { width: 92px; min-width: 92px; }
thead th small { display: block; font-weight: normal; color: #57606a; font-size: 10.5px;
                 line-height: 1.25; }
th.name, td.name { position: sticky; left: 0; background: #fff; z-index: 1; width: 22em;
                   min-width: 18em;
                   max-width: 22em; font-size: 12px; }
thead th.name { z-index: 3; background: #f6f8fa; }
td.name code { font-family: ui-monospace, SFMono-Regular, Menlo, monospace;
               overflow-wrap: break-word; }
td.name .change { display: block; color: #9a3412; font-size: 11px; line-height: 1.3;
                  overflow-wrap: anywhere; }
td.c { cursor: pointer; width: 92px; min-width: 92px; max-width: 92px; font-size: 11px;
       line-height: 1.2; }
td.c:hover, td.c:focus { outline: 2px solid #0969da; outline-offset: -2px; }
td.c.selected { outline: 3px solid #0969da; outline-offset: -3px; }
td.c.differs { box-shadow: inset 4px 0 0 #d4380d; }
td.c.differs .v { font-weight: 700; }
td.c .v { display: block; margin: 0 0 2px 1px; overflow: hidden; text-overflow: ellipsis;
          white-space: nowrap; }
td.c.differs .v { padding-left: 3px; }
.marks { display: flex; flex-wrap: wrap; gap: 2px; }
.mk { display: inline-block; min-width: 19px; height: 15px; line-height: 13px; font-size: 10px;
      font-weight: 600; padding: 0 1px;
      text-align: center; border: 1px solid; border-radius: 3px;
      font-family: ui-monospace, SFMono-Regular, Menlo,
      monospace; }
.mk.long { letter-spacing: -.08em; }
.mk.m-ok { background: #ffffff; color: #1a7f37; border-color: #8ccf9f; }
.mk.m-exc { background: #cf222e; color: #ffffff; border-color: #a40e26; }
.mk.m-crash { background: #000000; color: #ffffff; border-color: #000000; }
.mk.m-timeout { background: #bc4c00; color: #ffffff; border-color: #8a3600; }
.mk.m-none { background: rgba(255,255,255,.6); color: #57606a; border: 1px dashed #57606a;
             font-weight: 400; }
.mk.moved { box-shadow: 0 0 0 2px #d4380d; }
tr.group th { background: #fff; text-align: left; padding-top: .8em; font-size: 13px; }
tr.group th span { position: sticky; left: .4em; }
td.absent .v { font-style: italic; }
td.noinst, span.noinst { background: repeating-linear-gradient(45deg, #eeeeee 0 6px,
                         #e0e0e0 6px 12px); }
td.noinst .v { white-space: normal; }
#panel { position: fixed; right: 1.2em; bottom: 1.2em; width: 36em; max-width: calc(100vw - 2.4em);
         max-height: 55vh; overflow: auto; background: #fff; border: 1px solid #8c959f;
         border-radius: 6px;
         box-shadow: 0 4px 16px rgba(0,0,0,.18); padding: .7em .9em; z-index: 4; }
#panel[hidden] { display: none; }
#panel h2 { font-size: 1em; margin: 0 1.8em .4em 0;
            font-family: ui-monospace, SFMono-Regular, Menlo, monospace;
            overflow-wrap: anywhere; }
#panel dl { margin: 0; display: grid; grid-template-columns: max-content 1fr; gap: .15em .8em; }
#panel dt { color: #57606a; }
#panel dd { margin: 0; white-space: pre-wrap; word-break: break-word; }
#panel dd.code { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 12px; }
#panel button { position: absolute; top: .35em; right: .5em; border: 0; background: none;
                font-size: 1.3em;
                cursor: pointer; color: #57606a; }
"""

# textContent only: nothing from a report is ever parsed as HTML.
_JS = """
(function () {
  var panel = document.getElementById('panel');
  var fields = ['verdict', 'reason', 'change', 'modes', 'details', 'rerun'];
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
  var grid = document.getElementById('grid');
  grid.addEventListener('click', function (e) {
    var td = e.target.closest('td.c');
    if (td) show(td);
  });
  grid.addEventListener('keydown', function (e) {
    var td = e.target.closest('td.c');
    if (td && (e.key === 'Enter' || e.key === ' ')) { e.preventDefault(); show(td); }
  });
  function hide() {
    panel.hidden = true;
    if (selected) selected.classList.remove('selected');
  }
  document.getElementById('p-close').addEventListener('click', hide);
  document.addEventListener('keydown', function (e) { if (e.key === 'Escape') hide(); });
  var rows = Array.prototype.slice.call(grid.querySelectorAll('tbody tr.p'));
  var groups = Array.prototype.slice.call(grid.querySelectorAll('tbody tr.group'));
  var only = document.getElementById('only-changed'), theme = document.getElementById('theme'),
      search = document.getElementById('search');
  function filter() {
    var q = search.value.trim().toLowerCase(), shown = 0;
    rows.forEach(function (tr) {
      var keep = (!only.checked || tr.classList.contains('changed')) &&
                 (!theme.value || tr.dataset.theme === theme.value) &&
                 (!q || tr.dataset.name.toLowerCase().indexOf(q) >= 0);
      tr.hidden = !keep;
      if (keep) shown++;
    });
    groups.forEach(function (g) {
      g.hidden = !rows.some(function (tr) {
        return !tr.hidden && tr.classList.contains(g.dataset.kind);
      });
    });
    document.getElementById('shown').textContent =
      shown + ' of ' + rows.length + ' case points shown';
  }
  [only, theme].forEach(function (el) { el.addEventListener('change', filter); });
  search.addEventListener('input', filter);
  filter();
  // A link from the list of changes to a row the filters hide shows every row first.
  document.getElementById('changes').addEventListener('click', function (e) {
    var a = e.target.closest('a'), tr = a && document.getElementById(a.hash.slice(1));
    if (tr && tr.hidden) { only.checked = false; theme.value = ''; search.value = ''; filter(); }
  });
})();
"""


def _e(text: object) -> str:
    return _html.escape(printable(str(text), newlines=True), quote=True)


def _breakable(name: str) -> str:
    """The escaped case[point], free to wrap at a word's "." or "_", after "," and before "[".

    Escaping makes none of these characters, so no break lands in an entity.
    """
    return re.sub(r"(?<=[._])(?=[A-Za-z])|(?<=,)|(?=\[)", "<wbr>", _e(name))


def _css_class(cell: Cell) -> str:
    if cell.status == NOT_INSTALLED:
        return "noinst"
    if cell.status == ABSENT:
        return "absent"
    return cell.verdict if cell.verdict in _KNOWN else "error"


def _legend_css() -> str:
    return "\n".join(f"td.{name}, span.{name} {{ background-color: {bg}; color: {fg}; }}"
                     for name, bg, fg, _ in _LEGEND)


def _observed_before(point: Point, index: int) -> Optional[int]:
    """The nearest column before `index` that ran the point, or None."""
    return next((i for i in range(index - 1, -1, -1) if point.rows[0].cells[i].observed), None)


def _html_marks(point: Point, index: int) -> str:
    before = _observed_before(point, index)
    marks = []
    for row in point.rows:
        cell = row.cells[index]
        classes = ["mk", _mark_class(cell.status)]
        # Keras 3's arrival in 2.16 is no change of the case (merge.NO_KERAS3): no mark moves
        if (before is not None and row.cells[before].status != cell.status
                and NO_KERAS3 not in (row.cells[before].status, cell.status)):
            classes.append("moved")
        marks.append(f'<span class="{" ".join(classes)}" title="{_e(_mode_line(row.mode, cell))}">'
                     f'{_e(_mark(row.mode))}</span>')
    return f'<span class="marks">{"".join(marks)}</span>'


def _html_cell(point: Point, columns: tuple[Column, ...], index: int) -> str:
    column, cells = columns[index], point.cells(index)
    first = cells[0]
    step = point.step_at(index)  # a step has a column before it that ran the point
    classes = ["c", _css_class(first)] + (["differs"] if step else [])
    data = {"head": f"{point.name} · TensorFlow {column.version}",
            "verdict": first.word or first.status, "reason": first.reason,
            "change": f"since {columns[_observed_before(point, index)].version}: {step.text}"
            if step else "",
            "modes": "\n".join(_mode_line(m, c) for m, c in zip(point.modes, cells))
            if first.observed else "", "details": "\n".join(first.details), "rerun": first.rerun}
    attributes = " ".join(f'data-{key}="{_e(value)}"' for key, value in data.items() if value)
    title = first.explanation if first.observed else first.reason or first.status
    if step:
        title += f"\nchanged: {step.text}"
    word = (first.word if first.observed else NOT_INSTALLED if first.status == NOT_INSTALLED
            else first.status)
    marks = _html_marks(point, index) if first.observed else ""
    return (f'<td class="{" ".join(classes)}" tabindex="0" title="{_e(title)}" {attributes}>'
            f'<span class="v">{_e(word)}</span>{marks}</td>')


def _html_head(column: Column) -> str:
    # The reason can be long: it is in the title, the page's first lines and every cell, not here,
    # where it would widen the column.
    if column.not_installed is not None:
        notes = [NOT_INSTALLED]
    else:  # a nightly's commit on a line of its own: it names the build, as the version does
        others = ", ".join(_environment(column)[bool(column.commit):])
        notes = [line for line in (_commit(column), others) if line]
    small = "".join(f"<small>{_e(line)}</small>" for line in notes)
    classes = "version noinst" if column.not_installed is not None else "version"
    # a nightly's version is wider than its column: it may break before its ".dev" or "-dev"
    version = re.sub(r"(?=[-.]dev)", "<wbr>", _e(column.version))
    return f'<th class="{classes}" title="{_e(column.label)}">{version}{small}</th>'


def _html_legend(matrix: Matrix) -> str:
    verdicts = "".join(
        f'<span class="item"><span class="key {name}">'
        f'{_e("not installed" if name == "noinst" else name)}</span>{_e(meaning)}</span>'
        for name, _, _, meaning in _LEGEND
    )
    verdicts += ('<span class="item"><span class="key" style="box-shadow: inset 4px 0 0 #d4380d; '
                 'font-weight: 700">bar</span>differs from the version before it</span>')
    modes = "".join(f'<span class="item"><span class="mk m-ok">{_e(_mark(m))}</span>{_e(m)}</span>'
                    for m in matrix.modes)
    statuses = "".join(f'<span class="item"><span class="mk {cls}">e</span>{_e(meaning)}</span>'
                       for cls, meaning in _MARK_LEGEND)
    statuses += (
        '<span class="item"><span class="mk m-ok moved">e</span>status differs from the version'
        " before</span>"
    )
    return (f'<div class="legend"><div class="row"><b>cell: verdict</b>{verdicts}</div>'
            f'<div class="row"><b>marks: modes</b>{modes}</div>'
            f'<div class="row"><b>mark: status</b>{statuses}</div></div>')


def html(matrix: Matrix) -> str:
    """One self-contained page: what changed between releases, then a row per case and point
    and a column per version.

    What changed is the Markdown's list (`markdown`): the real changes, each linked to its row,
    then a line per fold whose points open in a <details> element. The rows come in three groups
    (`Point.kind`): a real change, only which modes apply changed, the same everywhere. A
    nightly's column head names its commit. Each cell has its verdict's colour and one mark per
    mode, coloured by what the mode did. Inline CSS and JavaScript only; every text from a report
    is escaped. A cell's explanation, and each mark's status, show on hover (the
    title); a click on a cell shows the details panel: the reason, what changed,
    every mode's status and error, the result's details and the rerun command.
    The rows can be filtered to those with a real change, by theme (the case
    id's prefix) and by a search of case[point].
    """
    points = matrix.points
    body = _html_rows(matrix)
    themes = sorted({p.theme for p in points})
    counts = {t: sum(p.theme == t for p in points) for t in themes}
    options = "".join(f'<option value="{_e(t)}">{_e(t)} ({counts[t]})</option>' for t in themes)
    versions = _html_versions(matrix)
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
{_html_changes(matrix, points)}
<h2>Every case point</h2>
<p class="meta">{_e(_summary(matrix, points))}
Hover over a cell or a mark for its explanation; click a cell for the details.</p>
{_html_legend(matrix)}
<div class="controls">
<label><input type="checkbox" id="only-changed"> only rows where {_e(_REAL)} changed</label>
<label>theme <select id="theme"><option value="">all ({len(points)})</option>{options}
</select></label>
<label>search <input type="search" id="search" placeholder="case[point]"></label>
<span id="shown"></span>
</div>
<div class="wrap">
<table id="grid">
<thead><tr><th class="name">case[point]</th>{heads}</tr></thead>
<tbody>
{chr(10).join(body)}
</tbody>
</table>
</div>
{_html_panel()}
<script>{_JS}</script>
</body>
</html>
"""


# The table's groups of rows, by `Point.kind`: (kind, heading).
_GROUPS = (("changed", f"{_REAL[0].upper()}{_REAL[1:]} changed"),
           ("coverage", f"Only {_COVERAGE} changed"),
           ("same", "Same in every version that ran it"))


def _row_id(index: int) -> str:
    """The id of the row of `matrix.points[index]`, which the list of changes links to."""
    return f"pt-{index}"


def _html_panel() -> str:
    """The details panel, empty: the script fills it from the clicked cell's data attributes."""
    names = ("verdict", "reason", "change", "modes", "details", "rerun")
    code = ("modes", "details", "rerun")
    fields = "".join(f'<dt>{_e(name)}</dt><dd '
                     f'id="p-{name}"{" class=code" if name in code else ""}></dd>'
                     for name in names)
    return ('<div id="panel" hidden><button id="p-close" title="close" aria-label="close">'
            f'&times;</button>\n<h2 id="p-head"></h2><dl>{fields}</dl></div>')


def _html_rows(matrix: Matrix) -> list[str]:
    """The table's rows, a group per `Point.kind` under a heading row (`_GROUPS`); a group with no
    point has no heading."""
    points = matrix.points
    width = 1 + len(matrix.columns)
    body = []
    for kind, heading in _GROUPS:
        group = [(i, p) for i, p in enumerate(points) if p.kind == kind]
        if not group:
            continue
        body.append(f'<tr class="group" data-kind="{kind}"><th '
                    f'colspan="{width}"><span>{_e(f"{heading} ({len(group)})")}</span></th></tr>')
        for index, point in group:
            cells = "".join(_html_cell(point, matrix.columns, i)
                            for i in range(len(matrix.columns)))
            change = f'<span class="change">{_e(point.change)}</span>' if point.change else ""
            body.append(
                f'<tr class="p {kind}" id="{_row_id(index)}" data-name="{_e(point.name)}" '
                f'data-theme="{_e(point.theme)}"><td '
                f'class="name"><code>{_breakable(point.name)}</code>{change}</td>{cells}</tr>'
            )
    return body


def _html_changes(matrix: Matrix, points: tuple[Point, ...]) -> str:
    """What changed between releases, as the Markdown says it (`markdown`): each point whose
    verdict or a mode's outcome changed, linked to its row, then one line per fold, its points
    in a <details> element."""
    real = "".join(f'<li><a href="#{_row_id(i)}"><code>{_breakable(p.name)}</code></a>: '
                   f"{_e(_real_steps(p))}</li>" for i, p in _newest_first(points))
    text = f"<p>{_e(_lead(matrix, points))}</p>"
    text += f'<ul class="real">{real}</ul>' if real else ""
    folds = matrix.folds
    if folds:
        head = _FOLDS_HEAD.format(marked="its cell barred", more="; open a line for its points")
        text += f'<p>{_e(head)}</p><ul class="folds">'
        text += "".join(_html_fold(fold, points) for fold in folds) + "</ul>"
    return f'<section id="changes"><h2>What changed between releases</h2>{text}</section>'


def _html_fold(fold: Fold, points: tuple[Point, ...]) -> str:
    ids = {p.name: _row_id(i) for i, p in enumerate(points)}
    names = ", ".join(f'<a href="#{ids[name]}"><code>{_breakable(name)}</code></a>'
                      f'{"" if status == "ok" else f" ({_e(status)})"}'
                      for name, status in fold.points)
    return (f"<li><details><summary>{_e(fold.text)}</summary>"
            f'<p class="points">{names}</p></details></li>')


def _html_versions(matrix: Matrix) -> str:
    """The page's line on the versions: how many, from which to which, and why any is not
    installed."""
    installed = [c.version for c in matrix.columns if c.not_installed is None]
    versions = (f"{len(matrix.columns)} versions, {matrix.columns[0].version} to "
                f"{matrix.columns[-1].version}"
                if len(matrix.columns) > 1 else matrix.columns[0].version)
    nightly = " and, for a build between releases, its commit" if any(
        c.commit for c in matrix.columns if c.not_installed is None) else ""
    versions += f"; each column names its NumPy and Python{nightly}." if installed else "."
    versions += "".join(f" {c.version} is not installed: {c.not_installed}." for c in matrix.columns
                        if c.not_installed is not None)
    return versions


# --- JSON -----------------------------------------------------------------------------------------

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
                  "cells": {c.version: {"status": cell.status, "verdict": cell.verdict,
                                        "stage": cell.stage, "reason": cell.reason,
                                        "error": cell.error, "details": list(cell.details),
                                        "rerun": cell.rerun, "unchecked": cell.unchecked}
                            for c, cell in zip(matrix.columns, r.cells)}}
                 for r in matrix.rows],
    }
    return json.dumps(data, indent=1, ensure_ascii=False, allow_nan=False) + "\n"
