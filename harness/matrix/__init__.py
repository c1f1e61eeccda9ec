"""The TensorFlow version matrix: one table of what every TensorFlow release does.

The data flows through one module per job:

- `pins`: the one table of TensorFlow releases and their tf-keras and NumPy pins.
- `envs`: an isolated, cached virtual environment per release, and a harness
  run inside it that writes a JSON report.
- `merge`: pure; reads JSON reports (schema "harness.report/1") and merges them
  into a `Matrix`: rows are case, point and mode, columns are TensorFlow
  releases, and rows whose behaviour changes between releases come first.
- `render`: pure; the matrix as Markdown, a self-contained HTML page, and JSON
  (schema "harness.matrix/1").

`scripts/matrix.py` runs the whole thing; `python -m harness merge` merges
reports made elsewhere (CI jobs).
"""
