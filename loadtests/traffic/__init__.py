"""Traffic patterns: how much load, and when.

- `profiles.py` (pure target-versus-time curves), `shape_args.py` (their `--shape-args`),
  `shape.py` (`TrafficShape`, the Locust side: ticks, steps, events), `steps.py`.
- Open-loop traffic: `open_loop.py` (arrival schedules, the rate plan), `senders.py`, `timer.py`.
- `constants.py`: the words all of these share (users/rate, the traffic modes).

The stabilised sweep and the capacity search are shapes too, with a package of their own
(`loadtests/levels/`); the table of every shape is `loadtests/options/shapes.py`, and
`loadtests/run/shapes.py` puts them into a Locust Environment.
"""

from loadtests.traffic.shape import TrafficShape

__all__ = ("TrafficShape",)
