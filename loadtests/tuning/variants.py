"""Configuration variants of one model: its own config with the --vary axes applied.

    axes = parse_axes(["instances=1,2", "dynamic_batching=off,on"])
    for variant in build_variants(config_from_triton, axes):
        variant.name      # "instances=1 dynamic_batching=off"
        variant.config    # the model's config (Triton's JSON) with those settings

Every variant is checked against the model before anything is loaded (SpecError, one line):
dynamic batching on a model with max_batch_size 0, a max_batch_size that would change the
model's input shapes (0 <-> N), preferred batch sizes above max_batch_size, queue settings
without dynamic batching, any variant of an ensemble. Combinations that give the same config
(queue delay or preferred sizes with dynamic batching off) are measured once.
"""

from __future__ import annotations

import copy
import itertools
import json
from dataclasses import dataclass
from typing import Any

from loadtests.config.converters import one_of, switch, whole
from loadtests.errors import SpecError

INSTANCE_KINDS = ("KIND_CPU", "KIND_GPU", "KIND_AUTO")


def _sizes(text: str) -> tuple[int, ...]:
    """Preferred batch sizes of one variant: 4, or several joined by +: 4+8."""
    return tuple(whole(1)(part) for part in text.split("+"))


# The axes --vary knows: how one value is read, and an example for the error message.
AXES = {
    "instances": (whole(1), "instances=1,2,4"),
    "kind": (one_of(INSTANCE_KINDS, str.upper), "kind=KIND_CPU,KIND_GPU"),
    "dynamic_batching": (switch, "dynamic_batching=off,on"),
    "max_batch_size": (whole(0), "max_batch_size=8,16,32"),
    "max_queue_delay_us": (whole(0), "max_queue_delay_us=0,100,1000"),
    "preferred_batch_size": (_sizes, "preferred_batch_size=4,8,4+8"),
}
BATCHER_AXES = ("max_queue_delay_us", "preferred_batch_size")


@dataclass(frozen=True)
class Variant:
    """One configuration to measure: the axis values and the full config Triton is given."""

    settings: dict[str, Any]
    config: dict[str, Any]

    @property
    def name(self) -> str:
        return " ".join(f"{axis}={_show(value)}" for axis, value in self.settings.items())

    @property
    def slug(self) -> str:
        """A directory name: instances-2_dynamic_batching-on."""
        return "_".join(f"{axis}-{_show(value)}" for axis, value in self.settings.items()).replace("+", "p")


def _show(value: Any) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, tuple):
        return "+".join(str(v) for v in value)
    return str(value)


def parse_axes(specs: list[str]) -> dict[str, list[Any]]:
    """--vary NAME=V1,V2 (repeatable) -> {axis: [values]} in the order given; raises SpecError."""
    if not specs:
        raise SpecError("--vary is required, e.g. --vary instances=1,2 --vary dynamic_batching=off,on")
    axes: dict[str, list[Any]] = {}
    for spec in specs:
        name, sep, values = spec.partition("=")
        name = name.strip()
        if not sep or name not in AXES:
            raise SpecError(f"--vary {spec!r}: give NAME=V1,V2 with NAME one of {', '.join(AXES)}")
        if name in axes:
            raise SpecError(f"--vary {name} is given twice")
        read, example = AXES[name]
        parsed = []
        for text in values.split(","):
            try:
                parsed.append(read(text.strip()))
            except ValueError as error:
                raise SpecError(f"--vary {spec!r}: {text.strip()!r} {error} (e.g. {example})") from None
        if len(set(parsed)) != len(parsed):
            raise SpecError(f"--vary {spec!r} repeats a value")
        axes[name] = parsed
    return axes


def build_variants(base: dict[str, Any], axes: dict[str, list[Any]]) -> list[Variant]:
    """Every combination of the axes applied to `base` (Triton's config of the model), checked."""
    model = base.get("name", "the model")
    if base.get("platform") == "ensemble":
        raise SpecError(f"{model} is an ensemble: it has no instances or batcher of its own; tune its composing models")
    variants: list[Variant] = []
    seen: dict[str, Variant] = {}
    for values in itertools.product(*axes.values()):
        settings = dict(zip(axes, values, strict=True))
        config = apply(base, settings)
        check(base, config, settings, "dynamic_batching" in axes)
        if "dynamic_batching" not in config:  # the batcher's settings mean nothing without it
            settings = {axis: value for axis, value in settings.items() if axis not in BATCHER_AXES}
        key = json.dumps(config, sort_keys=True)
        if key not in seen:
            seen[key] = Variant(settings, config)
            variants.append(seen[key])
    return variants


def apply(base: dict[str, Any], settings: dict[str, Any]) -> dict[str, Any]:
    """`base` with the settings of one variant; `base` is not changed."""
    config = copy.deepcopy(base)
    if "max_batch_size" in settings:
        config["max_batch_size"] = settings["max_batch_size"]
    groups = config.get("instance_group") or [{"kind": "KIND_AUTO", "count": 1}]
    for group in groups:
        if "instances" in settings:
            group["count"] = settings["instances"]
        if "kind" in settings:
            group["kind"] = settings["kind"]
            if settings["kind"] != "KIND_GPU":
                group.pop("gpus", None)
    config["instance_group"] = groups
    batching = settings.get("dynamic_batching", "dynamic_batching" in config)
    if not batching:
        config.pop("dynamic_batching", None)
        return config
    batcher = config.setdefault("dynamic_batching", {})
    if "max_queue_delay_us" in settings:
        batcher["max_queue_delay_microseconds"] = settings["max_queue_delay_us"]
    if "preferred_batch_size" in settings:
        batcher["preferred_batch_size"] = list(settings["preferred_batch_size"])
    elif batcher.get("preferred_batch_size"):
        # Triton fills in [max_batch_size] when a config has none: a smaller max_batch_size
        # variant must not inherit sizes it cannot form (Triton fills them in again).
        limit = config.get("max_batch_size", 0)
        batcher["preferred_batch_size"] = [size for size in batcher["preferred_batch_size"] if size <= limit]
    return config


def check(base: dict[str, Any], config: dict[str, Any], settings: dict[str, Any], batching_varied: bool) -> None:
    """SpecError when a variant cannot work for this model (found before anything is loaded)."""
    model = base.get("name", "the model")
    base_max, max_batch = int(base.get("max_batch_size", 0)), int(config.get("max_batch_size", 0))
    if (base_max == 0) != (max_batch == 0):
        raise SpecError(
            f"--vary max_batch_size={max_batch}: {model} has max_batch_size {base_max}; "
            "switching between 0 and a batch size changes the shapes of its inputs"
        )
    batcher = config.get("dynamic_batching")
    if batcher is not None and max_batch == 0:
        raise SpecError(f"dynamic batching needs max_batch_size > 0, and {model} has max_batch_size 0")
    if batcher is not None and "sequence_batching" in config:
        raise SpecError(f"{model} uses the sequence batcher: dynamic batching cannot be turned on")
    for axis in BATCHER_AXES:
        if axis in settings and batcher is None and not batching_varied:
            raise SpecError(
                f"--vary {axis} needs dynamic batching, which {model} has off: add --vary dynamic_batching=on"
            )
    too_big = [size for size in (batcher or {}).get("preferred_batch_size", []) if size > max_batch]
    if too_big:
        raise SpecError(f"--vary preferred_batch_size: {too_big} above max_batch_size {max_batch} of {model}")
