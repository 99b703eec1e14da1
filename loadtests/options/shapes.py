"""The one table of load shapes: `--load-shape NAME` -> the shape class, and the two options
that name a shape and its arguments (`--load-shape`, `--shape-args`) on Locust's parser.

To add a shape, write its class (a `TrafficShape` with `name`, `keys` and `parse_args`) and
list it here; nothing registers itself on import, so the choices never depend on which
modules were imported first. The shapes of `loadtests/traffic/` (steps, ramp, spike, sine,
trace) and of `loadtests/levels/` (sweep, capacity) meet here, above both.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from loadtests.config.settings import NO_SHAPE
from loadtests.errors import SpecError
from loadtests.levels.capacity_shape import CapacityShape
from loadtests.levels.sweep_shape import SweepShape
from loadtests.traffic.shape import RampShape, SineShape, SpikeShape, StepsShape, TraceShape, TrafficShape

SHAPES: Mapping[str, type[TrafficShape]] = MappingProxyType(
    {cls.name: cls for cls in (StepsShape, RampShape, SpikeShape, SineShape, TraceShape, SweepShape, CapacityShape)}
)
SHAPE_NAMES = tuple(SHAPES)
# The --shape-args keys each shape accepts, in the order its errors list them.
SHAPE_KEYS: Mapping[str, tuple[str, ...]] = MappingProxyType({name: cls.keys for name, cls in SHAPES.items()})


def shape_name(name: str) -> str:
    """`steps`, `Steps` or `StepsShape` -> `steps`; raises SpecError for an unknown shape."""
    key = str(name).strip().lower().removesuffix("shape")
    if key not in SHAPES:
        raise SpecError(f"--load-shape {name!r} is not one of: {', '.join(SHAPE_NAMES)}")
    return key


def parse_shape_args(name: str, text: str | None) -> dict[str, Any]:
    """Parse and check `--shape-args` for a shape; return the args with defaults filled in.

        >>> parse_shape_args("steps", "targets=1;2,step_s=5")
        {'targets': [1.0, 2.0], 'step_s': 5.0, 'kind': 'users'}

    Raises SpecError naming the shape, the bad key and the accepted keys, e.g.
    "--shape-args for ramp: duration_s='-5' must be positive (accepted keys: start, end, ...)".
    """
    return SHAPES[shape_name(name)].parse_args(text)


def add_arguments(parser: Any) -> None:
    """Register `--load-shape` and `--shape-args` on Locust's parser (once).

    On the parser itself, not in an argument group: Locust's web UI form lists only
    options added by `LocustArgumentParser.add_argument` (it marks them include_in_web_ui).
    """
    if "--shape-args" in getattr(parser, "_option_string_actions", {}):
        return
    parser.add_argument(
        "--load-shape",
        env_var="LOCUST_LOAD_SHAPE",
        default=NO_SHAPE,
        choices=(NO_SHAPE, *SHAPE_NAMES),
        help=(
            f"load shape: {NO_SHAPE} (the -u/-r/-t users), {', '.join(SHAPE_NAMES[:-1])} or {SHAPE_NAMES[-1]} "
            "[env LOCUST_LOAD_SHAPE]"
        ),
    )
    parser.add_argument(
        "--shape-args",
        env_var="LOCUST_SHAPE_ARGS",
        default="",
        metavar="KEY=VALUE,...",
        help=(
            "the load shape's parameters, e.g. steps: targets=1;2;4;8,step_s=30 | "
            "ramp: start=1,end=32,duration_s=120,hold_s=60 | "
            "spike: baseline=2,peak=20,at_s=60,spike_s=30,duration_s=180 | "
            "sine: baseline=8,amplitude=6,period_s=600,duration_s=1800 | trace: file=trace.csv,hold_s=30; "
            "any: spawn_rate=N, kind=users|rate [env LOCUST_SHAPE_ARGS]"
        ),
    )
