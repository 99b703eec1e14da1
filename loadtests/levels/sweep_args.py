"""`--shape-args` of the sweep shape (`levels=1;2;4,stability=10,...`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from loadtests.config.converters import above, at_least, listed, one_of, whole
from loadtests.errors import SpecError
from loadtests.levels.stability import (
    DEFAULT_MAX_TRIALS,
    DEFAULT_SETTLE_WINDOWS,
    DEFAULT_STABILITY_PERCENT,
    STABILITY_WINDOWS,
)
from loadtests.traffic.profiles import RATE, USERS
from loadtests.traffic.shape_args import ShapeArgError, split_shape_args

SWEEP_KEYS = ("levels", "kind", "stability", "max_trials", "latency_limit_ms", "settle", "users")


# The stability tolerance (`stability=`): shared with the capacity shape.
percent = at_least(0, "must be a percentage >= 0")

_CONVERTERS: Mapping[str, Callable[[str], Any]] = MappingProxyType(
    {
        "levels": listed(above(0), "e.g. levels=1;2;4", "must be positive numbers separated by ';'"),
        "kind": one_of((USERS, RATE)),
        "stability": percent,
        "max_trials": whole(STABILITY_WINDOWS),
        "latency_limit_ms": at_least(0, "must be >= 0 (0: no limit)"),
        "settle": whole(0),
        "users": whole(1),
    }
)


def parse_sweep_args(text: str | None) -> dict[str, Any]:
    """`--shape-args` of the sweep shape, defaults filled in; raises SpecError.

    >>> parse_sweep_args("levels=1;2;4")["max_trials"]
    10
    """
    accepted = f"(accepted keys: {', '.join(SWEEP_KEYS)})"
    try:
        args = split_shape_args(text, tuple(_CONVERTERS), _CONVERTERS)
    except ShapeArgError as error:
        raise SpecError(f"--shape-args for sweep: {error} {accepted}") from None
    if "levels" not in args:
        raise SpecError(f"--shape-args for sweep: missing levels= {accepted}")
    args.setdefault("kind", USERS)
    args.setdefault("stability", DEFAULT_STABILITY_PERCENT)
    args.setdefault("max_trials", DEFAULT_MAX_TRIALS)
    args.setdefault("latency_limit_ms", 0.0)
    args.setdefault("settle", DEFAULT_SETTLE_WINDOWS)
    if args["kind"] == USERS:
        if "users" in args:
            raise SpecError(f"--shape-args for sweep: users= applies to kind=rate only {accepted}")
        if any(level != int(level) for level in args["levels"]):
            raise SpecError(f"--shape-args for sweep: user counts must be whole numbers {accepted}")
    return args
