"""The `--mix` value: several models driven by one run, each request choosing its model by weight.

A base-layer value type (like `loadtests.config.batch_size`), so the one `Settings` object can hold
it; `loadtests/workloads/mix.py` reads it from the option (a MODEL:WEIGHT list or a YAML/JSON
file) and turns it into prepared endpoints.

    >>> mix = ModelMix((MixEntry("identity", 3.0), MixEntry("sleep", 1.0)), "identity:3,sleep:1")
    >>> mix.weights
    {'identity': 0.75, 'sleep': 0.25}
    >>> mix.models
    ('identity', 'sleep')
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from pathlib import Path

from loadtests.config.batch_size import BatchSizeSpec, UniformSource


@dataclass(frozen=True)
class MixEntry:
    """One model of a mix: its weight as given, and the options it sets for itself.

    None means "as the run's own option says" (--batch-size, --shape, --input-data, --data-mode).
    """

    model: str
    weight: float
    batch_size: BatchSizeSpec | None = None
    shapes: dict[str, tuple[int, ...]] | None = None
    input_data: tuple[Path, ...] | None = None
    data_mode: str | None = None


@dataclass(frozen=True)
class ModelMix:
    """The models of a run and their weights (normalised to shares of the requests)."""

    entries: tuple[MixEntry, ...]
    text: str  # the --mix value as given (the list, or the file's path)
    _cumulative: tuple[float, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        total = sum(entry.weight for entry in self.entries)
        running, cumulative = 0.0, []
        for entry in self.entries:
            running += entry.weight / total
            cumulative.append(running)
        cumulative[-1] = 1.0  # no rounding gap above the last model
        object.__setattr__(self, "_cumulative", tuple(cumulative))

    @property
    def models(self) -> tuple[str, ...]:
        return tuple(entry.model for entry in self.entries)

    @property
    def weights(self) -> dict[str, float]:
        """Each model's share of the requests, as asked (the weights normalised)."""
        total = sum(entry.weight for entry in self.entries)
        return {entry.model: entry.weight / total for entry in self.entries}

    def pick_index(self, rng: UniformSource) -> int:
        """Which entry the next request goes to (one uniform draw; runs once per request)."""
        return bisect.bisect_right(self._cumulative, rng.random())
