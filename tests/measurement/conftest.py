"""The measurement tier's one way to check a measured value against a bound: `bound`.

Every assertion here that depends on the host's speed goes through it, so each can record how far
inside its bound the value stayed: a JSON line per check in the file TRITON_LOADTEST_MARGINS
names, when it names one. `python -m tests.margins` runs the tier with it set and turns several
runs' lines into the table of margins (issue 39: the margin each test keeps, measured over
repeated runs beside another shard). Counts, orders and files are asserted plainly: no host
changes them.

    bound("probe vs truth", probe, near=truth_rps, rel=0.15)
    bound("uncorrected p99 (us)", p99, at_most=100_000)
    bound("served requests", served, near=expected, within=4 * math.sqrt(expected))
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable

import pytest

MARGINS_FILE = "TRITON_LOADTEST_MARGINS"


def limits(near: float | None, rel: float | None, within: float | None, at_least, at_most) -> tuple:
    """(low, high) the value must stay within (a side may be None): `near` give or take `rel` of
    it or `within` (the larger), or `at_least`/`at_most`."""
    if near is not None:
        allowance = max(abs(near) * (rel or 0.0), within or 0.0)
        return near - allowance, near + allowance
    return at_least, at_most


def headroom(value: float, low: float | None, high: float | None) -> float:
    """How far inside its bounds `value` is (negative: outside). Between two bounds: the distance
    to the nearer one over half the range (1 at the centre, 0 at an edge; a rate of 205 within
    190-210: 0.5). Against one bound: the distance over the bound (a p99 of 80 ms under 100: 0.2)."""
    if low is not None and high is not None:
        return min(value - low, high - value) / max((high - low) / 2, 1e-12)
    if low is not None:
        return (value - low) / max(abs(low), 1e-12)
    return (high - value) / max(abs(high), 1e-12)


@pytest.fixture
def bound(request) -> Callable[..., None]:
    def check(
        name: str,
        value: float,
        *,
        near: float | None = None,
        rel: float | None = None,
        within: float | None = None,
        at_least: float | None = None,
        at_most: float | None = None,
        context: object = None,
    ) -> None:
        low, high = limits(near, rel, within, at_least, at_most)
        assert low is not None or high is not None, f"{name}: no bound given"
        kept = headroom(value, low, high)
        if os.environ.get(MARGINS_FILE):
            record = {"test": request.node.nodeid, "check": name, "value": value, "low": low, "high": high}
            with open(os.environ[MARGINS_FILE], "a") as file:
                file.write(json.dumps({**record, "headroom": kept}) + "\n")
        inside = (low is None or value >= low) and (high is None or value <= high)
        assert inside, (name, value, {"low": low, "high": high}, context)

    return check
