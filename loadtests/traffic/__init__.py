"""Traffic patterns: how much load, and when.

- `table.py`: the one table of `--load-shape` names -> shape classes; `install.py` puts them
  into an Environment (`install_shape`), `arguments.py` adds `--load-shape`/`--shape-args`.
- `profiles.py` (pure target-versus-time curves), `shape_args.py` (their `--shape-args`),
  `shape.py` (`TrafficShape`, the Locust side: ticks, steps, events), `steps.py`.
- The stabilised sweep (`--load-shape sweep`, what `python -m loadtests sweep` runs):
  `stability.py` (perf_analyzer's rule, pure), `sweep_args.py`, `sweep_levels.py` (the level
  controller), `boundary_snapshots.py` (Triton's statistics at window boundaries),
  `sweep_shape.py`.
- The capacity search (`--load-shape capacity`, what `python -m loadtests capacity` runs):
  `capacity_search.py` (pure), `capacity_levels.py`, `capacity_files.py`, `capacity_shape.py`.
- Open-loop traffic: `open_loop.py` (arrival schedules, the rate plan), `timer.py`.
- `constants.py`: the words all of these share (users/rate, the traffic modes).
"""

from loadtests.traffic.install import install_shape
from loadtests.traffic.shape import TrafficShape

__all__ = ("TrafficShape", "install_shape")
