"""Traffic patterns: how much load, and when.

- `profiles.py` (pure target-versus-time curves, and what a target counts: `USERS` or `RATE`),
  `shape_args.py` (their `--shape-args`), `shape.py` (`TrafficShape`, the Locust side: ticks,
  steps, events), `steps.py`.
- Open-loop traffic: `open_loop.py` (arrival schedules, the rate plan), `senders.py`, `timer.py`.
- The traffic modes and "no shape" are option values: `loadtests/config/settings.py`.

The stabilised sweep and the capacity search are shapes too, with a package of their own
(`loadtests/levels/`); the table of every shape is `loadtests/options/shapes.py`, and
`loadtests/run/shapes.py` puts them into a Locust Environment.
"""

from loadtests.traffic.shape import TrafficShape

__all__ = ("TrafficShape",)
