"""Stabilised levels: the sweep and the capacity search, as load shapes and their files.

A level holds one load (users or a rate) until perf_analyzer's stability rule says its
windows agree, or gives up; a sweep walks a list of levels, a capacity search chooses the next
level from the verdicts so far.

- `stability.py`: the rule (pure), shared by both.
- The sweep (`--load-shape sweep`, what `python -m loadtests sweep` runs): `sweep_args.py`
  (its `--shape-args`), `sweep_levels.py` (the level controller), `boundary_snapshots.py`
  (Triton's statistics at window boundaries), `sweep_shape.py` (the Locust side),
  `sweep_files.py` (sweep.json, sweep.csv).
- The capacity search (`--load-shape capacity`, what `python -m loadtests capacity` runs):
  `capacity_search.py` (the search, pure), `capacity_levels.py`, `capacity_shape.py`,
  `capacity_files.py` (capacity.json, capacity.csv).

Imports `traffic/` (the shape base, profiles, steps), `recording/` and `run_format/`.
"""
