"""`--shape-args` of the profile shapes (steps, ramp, spike, sine, trace): `key=value,key=value`.

Lists use `;` (`targets=1;2;4`). Each key has a converter that says what is wrong with a
bad value; `profile_args` checks the keys together, fills in defaults and builds the
profile, so every error shows before any load. The sweep and capacity shapes parse their
own keys with the same `split_shape_args`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from loadtests.config.converters import above, at_least, listed, not_empty, number, one_of, whole
from loadtests.errors import SpecError
from loadtests.traffic.profiles import TARGET_KINDS, USERS, Profile, Ramp, Sine, read_trace, spike, staircase

DEFAULT_STEP_S = 30.0


class ShapeArgError(ValueError):
    """A bad `key=value` in --shape-args (the caller adds which shape and its accepted keys)."""


_level = at_least(0)
_positive = above(0)
_count = whole(1)
_targets = listed(_level, "e.g. targets=1;2;4", "must be numbers >= 0 separated by ';'")


# key -> converter (raises ValueError with what is wrong)
_CONVERTERS: Mapping[str, Callable[[str], Any]] = MappingProxyType(
    {
        "targets": _targets,
        "start": _level,
        "step": number,  # a staircase may go down
        "count": _count,
        "step_s": _positive,
        "end": _level,
        "duration_s": _positive,
        "hold_s": _level,
        "segments": _count,
        "baseline": _level,
        "peak": _level,
        "at_s": _level,
        "spike_s": _positive,
        "amplitude": number,
        "period_s": _positive,
        "file": not_empty,
        "scale": _positive,
        "kind": one_of(TARGET_KINDS),
        "spawn_rate": _positive,
        "users": _count,
    }
)
_COMMON = ("kind", "spawn_rate", "users")
# The keys each profile shape accepts, in the order the errors list them.
PROFILE_KEYS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "steps": ("targets", "start", "step", "count", "step_s", *_COMMON),
        "ramp": ("start", "end", "duration_s", "hold_s", "segments", *_COMMON),
        "spike": ("baseline", "peak", "at_s", "spike_s", "duration_s", *_COMMON),
        "sine": ("baseline", "amplitude", "period_s", "duration_s", *_COMMON),
        "trace": ("file", "hold_s", "scale", "spawn_rate", "users"),
    }
)


def split_shape_args(
    text: str | None, keys: tuple[str, ...], converters: Mapping[str, Callable[[str], Any]] | None = None
) -> dict[str, Any]:
    """`key=value,key=value` -> {key: converted value}; raises ShapeArgError naming the bad item."""
    converters = _CONVERTERS if converters is None else converters
    args: dict[str, Any] = {}
    for item in (part.strip() for part in str(text or "").split(",")):
        if not item:
            continue
        key, sep, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not sep:
            raise ShapeArgError(f"{item!r} is not key=value")
        if key not in keys:
            raise ShapeArgError(f"unknown key {key!r}")
        if key in args:
            raise ShapeArgError(f"{key} is given twice")
        try:
            args[key] = converters[key](value)
        except ValueError as error:
            raise ShapeArgError(f"{key}={value!r} {error}") from None
    return args


def _require(args: dict[str, Any], *keys: str) -> None:
    missing = [key for key in keys if key not in args]
    if missing:
        raise ShapeArgError("missing " + ", ".join(f"{key}=" for key in missing))


def _complete_steps(args: dict[str, Any]) -> None:
    if "targets" in args and {"start", "step", "count"} & args.keys():
        raise ShapeArgError("give either targets= or start=,step=,count=, not both")
    if "targets" not in args:
        if not {"start", "step", "count"} & args.keys():
            raise ShapeArgError("missing targets= (or start=,step=,count=)")
        _require(args, "start", "step", "count")
        targets = [args["start"] + i * args["step"] for i in range(args["count"])]
        if min(targets) < 0:
            raise ShapeArgError(f"start={args['start']:g},step={args['step']:g} goes below 0")
        args["targets"] = targets
    args.setdefault("step_s", DEFAULT_STEP_S)


def _complete(name: str, args: dict[str, Any]) -> dict[str, Any]:
    """Check the keys together and fill in defaults; raise ShapeArgError."""
    if name != "trace":
        args.setdefault("kind", USERS)
    if name == "steps":
        _complete_steps(args)
    elif name == "ramp":
        _require(args, "end", "duration_s")
        args.setdefault("start", 0.0)
        args.setdefault("hold_s", 0.0)
        args.setdefault("segments", 1)
    elif name == "spike":
        _require(args, "baseline", "peak", "at_s", "spike_s", "duration_s")
        if args["at_s"] + args["spike_s"] > args["duration_s"]:
            raise ShapeArgError("at_s + spike_s must not exceed duration_s")
    elif name == "sine":
        _require(args, "baseline", "amplitude", "period_s")
        args.setdefault("duration_s", args["period_s"])
    elif name == "trace":
        _require(args, "file")
        args.setdefault("hold_s", 0.0)
        args.setdefault("scale", 1.0)
    return args


def build_profile(name: str, args: dict[str, Any]) -> Profile:
    """The profile of a shape from its completed args (see `profile_args`)."""
    kind = args.get("kind", USERS)
    if name == "steps":
        return staircase(args["targets"], args["step_s"], kind)
    if name == "ramp":
        return Ramp(args["start"], args["end"], args["duration_s"], args["hold_s"], args["segments"], kind)
    if name == "spike":
        return spike(args["baseline"], args["peak"], args["at_s"], args["spike_s"], args["duration_s"], kind)
    if name == "sine":
        return Sine(args["baseline"], args["amplitude"], args["period_s"], args["duration_s"], kind)
    return read_trace(args["file"], args["hold_s"], args["scale"])


def profile_args(name: str, text: str | None) -> tuple[dict[str, Any], Profile]:
    """Parse and check a profile shape's `--shape-args`: the args with defaults, and its profile.

    The args always have `kind` ("users" or "rate"; a trace's from its header). A trace
    file is read here too. Raises SpecError naming the shape, the bad key and the accepted
    keys, e.g. "--shape-args for ramp: duration_s='-5' must be positive (accepted keys: start, end, ...)".
    """
    keys = PROFILE_KEYS[name]
    try:
        args = _complete(name, split_shape_args(text or "", keys))
        if args.get("kind") == USERS and "users" in args:
            raise ShapeArgError("users= applies to kind=rate only (the target is the user count)")
    except ShapeArgError as error:
        raise SpecError(f"--shape-args for {name}: {error} (accepted keys: {', '.join(keys)})") from None
    profile = build_profile(name, args)
    args["kind"] = profile.kind
    if profile.kind == USERS and "users" in args:
        raise SpecError(f"--shape-args for {name}: users= applies to a rate trace only (this trace is time_s,users)")
    return args, profile
