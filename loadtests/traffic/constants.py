"""The words traffic is described in: what a target counts, the traffic modes, the shape timing.

Defined once here (the option values with the settings); the shapes import them.
"""

from __future__ import annotations

# The traffic modes and "no shape" are option values: defined with the settings (base layer).
from loadtests.config.settings import CLOSED_LOOP, NO_SHAPE, OPEN_LOOP_HINT, OPEN_LOOP_MODES

__all__ = (
    "CLOSED_LOOP",
    "LOOKAHEAD_S",
    "NO_SHAPE",
    "OPEN_LOOP_HINT",
    "OPEN_LOOP_MODES",
    "RATE",
    "TARGET_KINDS",
    "TICK_S",
    "USERS",
)

USERS = "users"  # a target that is a user count (closed loop)
RATE = "rate"  # a target that is a request rate (open loop)
TARGET_KINDS = (USERS, RATE)
# A shape's user count changes at most once per tick (Locust ticks about once a second).
TICK_S = 1.0
# tick() looks this far ahead, so a change at second N happens at the tick nearest N. Ticks
# on a distributed master fall just before whole seconds (MasterRunner.start restarts the
# shape's clock at test_start, just after the first tick): without it, every step would
# start a whole tick late.
LOOKAHEAD_S = TICK_S / 2
