"""The words traffic is described in: what a target counts, the traffic modes, the shape timing.

Defined once here; options, the SLO gate and the shapes import them.
"""

from __future__ import annotations

USERS = "users"  # a target that is a user count (closed loop)
RATE = "rate"  # a target that is a request rate (open loop)
TARGET_KINDS = (USERS, RATE)
NO_SHAPE = "none"
# --traffic: closed-loop users, or one of the open-loop arrival processes.
CLOSED_LOOP = "closed"
OPEN_LOOP_MODES = ("constant", "poisson", "gamma")
OPEN_LOOP_HINT = "--traffic " + "|".join(OPEN_LOOP_MODES)
# A shape's user count changes at most once per tick (Locust ticks about once a second).
TICK_S = 1.0
# tick() looks this far ahead, so a change at second N happens at the tick nearest N. Ticks
# on a distributed master fall just before whole seconds (MasterRunner.start restarts the
# shape's clock at test_start, just after the first tick): without it, every step would
# start a whole tick late.
LOOKAHEAD_S = TICK_S / 2
