"""The `--batch-size SPEC` value: a distribution of batch sizes, sampled once per request.

A base-layer value type (it imports nothing of the suite but `errors`), so the one
`Settings` object can hold it; `loadtests/workloads/batch_spec.py` adds how a batch meets
a model's tensors.

SPEC forms (DESIGN.md): `8` (fixed), `1,2,4,8` (uniform choice), `1-16` (uniform
integer range, inclusive), `1:0.7,8:0.3` (weighted; weights are normalised).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from loadtests.errors import ModelMismatchError, SpecError


class BatchingModel(Protocol):
    """What `check_against` reads of a model (`loadtests.config.model_spec.ModelSpec` has it)."""

    name: str
    max_batch_size: int

    @property
    def batches(self) -> bool: ...


class UniformSource(Protocol):
    """Draws uniform floats in [0, 1): `random.Random` or `numpy.random.Generator`."""

    def random(self) -> float: ...


ACCEPTED_FORMS = "8 (fixed), 1,2,4,8 (uniform choice), 1-16 (range), 1:0.7,8:0.3 (weighted)"


@dataclass(frozen=True)
class BatchSizeSpec:
    """A distribution of batch sizes, sampled once per request.

    Example:
        >>> spec = BatchSizeSpec.parse("1:0.7,8:0.3")
        >>> spec.sizes, spec.max, spec.sample(np.random.default_rng(0)) in (1, 8)
        ((1, 8), 8, True)
    """

    text: str
    sizes: tuple[int, ...]
    # Same order as `sizes`; they sum to 1.
    probabilities: tuple[float, ...]
    _cumulative: tuple[float, ...] = field(init=False, repr=False, compare=False)
    _uniform: bool = field(init=False, repr=False, compare=False)

    @classmethod
    def parse(cls, text: str, option: str = "--batch-size") -> BatchSizeSpec:
        """Parse a SPEC string; raise SpecError naming the option, the spec and the accepted
        forms (`option`: the same SPEC grammar serves --sequence-length)."""
        spec = str(text).strip()
        try:
            sizes, weights = _parse(spec)
        except ValueError as exc:
            raise SpecError(f"bad {option} {text!r}: {exc}; accepted forms: {ACCEPTED_FORMS}") from None
        total = sum(weights)
        return cls(spec, tuple(sizes), tuple(w / total for w in weights))

    def __post_init__(self) -> None:
        # Precomputed once: sample() runs per request and must stay cheap.
        cumulative = np.cumsum(self.probabilities).tolist()
        cumulative[-1] = 1.0  # guard against float round-off at the top end
        uniform = len(set(self.probabilities)) == 1
        object.__setattr__(self, "_cumulative", tuple(cumulative))
        object.__setattr__(self, "_uniform", uniform)

    @property
    def max(self) -> int:
        return max(self.sizes)

    @property
    def mean(self) -> float:
        """Expected inferences per request (for rate <-> inferences/s conversions)."""
        return float(sum(s * p for s, p in zip(self.sizes, self.probabilities, strict=True)))

    @property
    def is_fixed(self) -> bool:
        return len(self.sizes) == 1

    def sample(self, rng: UniformSource) -> int:
        """One batch size drawn from the distribution (about 0.3 µs)."""
        if len(self.sizes) == 1:
            return self.sizes[0]
        # rng.random() is several times cheaper than rng.choice / rng.integers.
        u = rng.random()
        if self._uniform:
            return self.sizes[int(u * len(self.sizes))]
        return self.sizes[bisect.bisect_right(self._cumulative, u)]

    def check_against(self, model: BatchingModel) -> None:
        """Raise ModelMismatchError if the model cannot take every size in the spec."""
        if not model.batches:
            if self.sizes != (1,):
                raise ModelMismatchError(f"model {model.name!r} does not batch (max_batch_size 0): use --batch-size 1")
            return
        if self.max > model.max_batch_size:
            raise ModelMismatchError(
                f"--batch-size {self.text!r} reaches {self.max}, above model "
                f"{model.name!r} max_batch_size {model.max_batch_size}: "
                f"use sizes <= {model.max_batch_size}"
            )

    def __str__(self) -> str:
        return self.text


def parse_batch_size(text: str) -> BatchSizeSpec:
    """Shorthand for BatchSizeSpec.parse. Example: parse_batch_size("1-16").max == 16"""
    return BatchSizeSpec.parse(text)


def _positive_int(token: str) -> int:
    token = token.strip()
    if not token.isdigit() or int(token) < 1:
        raise ValueError(f"{token!r} is not a positive integer")
    return int(token)


def _parse(spec: str) -> tuple[list[int], list[float]]:
    if not spec:
        raise ValueError("empty")
    if ":" in spec:
        sizes, weights = [], []
        for part in spec.split(","):
            size, sep, weight = part.partition(":")
            if not sep:
                raise ValueError(f"{part.strip()!r} has no weight (write SIZE:WEIGHT)")
            try:
                w = float(weight)
            except ValueError:
                raise ValueError(f"weight {weight.strip()!r} is not a number") from None
            if not np.isfinite(w) or w <= 0:
                raise ValueError(f"weight {weight.strip()!r} must be positive")
            sizes.append(_positive_int(size))
            weights.append(w)
    elif "," in spec:
        sizes = [_positive_int(part) for part in spec.split(",")]
        weights = [1.0] * len(sizes)
    elif "-" in spec.lstrip("-"):
        low, _, high = spec.partition("-")
        lo, hi = _positive_int(low), _positive_int(high)
        if lo > hi:
            raise ValueError(f"range {lo}-{hi} is empty")
        sizes = list(range(lo, hi + 1))
        weights = [1.0] * len(sizes)
    else:
        sizes, weights = [_positive_int(spec)], [1.0]
    if len(set(sizes)) != len(sizes):
        raise ValueError("a size appears twice")
    return sizes, weights
