"""What both measuring and judging use: tolerances, comparing values, the case's rules.

A worker measures with these (which oracles to run, whose values they check, each oracle's
match or differ along a direction) and the main process judges with the same ones (which
expectations apply, which mode is the yardstick, whether two modes' values agree), so each
criterion is written once and both sides read it. Named for what they are, the criteria a value
is held to, rather than for either side that applies them.

The layer sits below both: nothing here imports harness.measure, harness.judge, harness.process,
the command line or a tool; it rests on the plain records and the case alone (harness.records,
harness.case and the small modules the case reads), as tests/unit/test_imports.py holds. Nothing
here decides a verdict or words one: an oracle's match or differ is decided with these where it
is measured (harness.measure.oracles says why), the verdict in the main process (harness.judge).

- `tolerance`: the tolerance tables, a case's override over them, and the one rule that widens
  the numeric oracle's absolute part by a gradient's own rounding.
- `compare`: whether two modes' outputs say the same thing, and whether a gradient is shaped
  like its source.
- `differences`: central differences with their own error estimate, and what they show along
  one direction.
- `rules`: which expectations cover a mode, the yardstick mode, whose values the oracles check,
  which oracles every point must come back with.
"""
