"""`--shape-args` of the sweep shape (`levels=1;2;4,stability=10,...`), and the converters
the capacity shape shares with it."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from loadtests.errors import SpecError
from loadtests.traffic.constants import RATE, USERS
from loadtests.traffic.shape_args import ShapeArgError, split_shape_args
from loadtests.traffic.stability import (
    DEFAULT_MAX_TRIALS,
    DEFAULT_SETTLE_WINDOWS,
    DEFAULT_STABILITY_PERCENT,
    STABILITY_WINDOWS,
)

SWEEP_KEYS = ("levels", "kind", "stability", "max_trials", "latency_limit_ms", "settle", "users")


def _levels_arg(text: str) -> list[float]:
    parts = [part.strip() for part in text.split(";") if part.strip()]
    if not parts:
        raise ValueError("is empty (expected e.g. levels=1;2;4)")
    try:
        values = [float(part) for part in parts]
    except ValueError:
        raise ValueError("must be positive numbers separated by ';' (e.g. levels=1;2;4)") from None
    if any(not math.isfinite(v) or v <= 0 for v in values):
        raise ValueError("must be positive numbers separated by ';' (e.g. levels=1;2;4)")
    return values


def percent_arg(text: str) -> float:
    """A percentage >= 0 (`stability=`)."""
    value = float(text)
    if not math.isfinite(value) or value < 0:
        raise ValueError("must be a percentage >= 0")
    return value


def int_arg(minimum: int) -> Callable[[str], int]:
    """A whole number of at least `minimum` (`max_trials=`, `settle=`, `users=`)."""

    def convert(text: str) -> int:
        value = int(text)
        if value < minimum:
            raise ValueError(f"must be at least {minimum}")
        return value

    return convert


def _limit_arg(text: str) -> float:
    value = float(text)
    if not math.isfinite(value) or value < 0:
        raise ValueError("must be >= 0 (0: no limit)")
    return value


def _kind_arg(text: str) -> str:
    if text not in (USERS, RATE):
        raise ValueError(f"must be one of {USERS}, {RATE}")
    return text


def _worded(convert: Callable[[str], Any]) -> Callable[[str], Any]:
    """Python's own conversion errors ("could not convert string to float") read as 'is not a number'."""

    def checked(text: str) -> Any:
        try:
            return convert(text)
        except ValueError as error:
            if str(error).startswith(("must", "is")):
                raise
            raise ValueError("is not a number") from None

    return checked


_CONVERTERS: Mapping[str, Callable[[str], Any]] = MappingProxyType(
    {
        key: _worded(convert)
        for key, convert in {
            "levels": _levels_arg,
            "kind": _kind_arg,
            "stability": percent_arg,
            "max_trials": int_arg(STABILITY_WINDOWS),
            "latency_limit_ms": _limit_arg,
            "settle": int_arg(0),
            "users": int_arg(1),
        }.items()
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
