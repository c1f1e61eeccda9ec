"""The TensorFlow version matrix: one table of what every TensorFlow release does.

The data flows through one module per job:

- `pins`: the one table of TensorFlow releases and their tf-keras and NumPy pins.
- `builds`: pure; what a --versions names (releases, ranges, nightlies), the
  order builds lie in, their days.
- `nightly`: the tf-nightly builds a package index has, and what goes with one.
- `envs`: an isolated, cached virtual environment per build, and a harness
  run inside it (this harness, through PYTHONPATH) that writes a JSON report.
- `bisect`: pure; the search for the first build whose result differs.
- `command`: `python -m harness matrix` and `bisect` over those.
- `merge`: pure; reads JSON reports (schema "harness.report/1" or "/2") and merges them
  into a `Matrix`: rows are case, point and mode, columns are TensorFlow
  releases, and rows whose behaviour changes between releases come first.
- `render`: pure; the matrix as Markdown, a self-contained HTML page, and JSON
  (schema "harness.matrix/1").

`python -m harness matrix` runs the whole thing (`scripts/matrix.py` is that
command from a checkout); `python -m harness merge` merges reports made
elsewhere (CI jobs).
"""
