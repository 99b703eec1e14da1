"""The one table of load shapes: `--load-shape NAME` -> the shape class.

To add a shape, write its class (a `TrafficShape` with `name`, `keys` and `parse_args`) and
list it here; nothing registers itself on import, so the choices never depend on which
modules were imported first.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from loadtests.errors import SpecError
from loadtests.traffic.capacity_shape import CapacityShape
from loadtests.traffic.shape import RampShape, SineShape, SpikeShape, StepsShape, TraceShape, TrafficShape
from loadtests.traffic.sweep_shape import SweepShape

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
