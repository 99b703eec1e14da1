"""Batch sizes: the `--batch-size SPEC` option, and how a batch meets a model's tensors.

SPEC forms (DESIGN.md): `8` (fixed), `1,2,4,8` (uniform choice), `1-16` (uniform
integer range, inclusive), `1:0.7,8:0.3` (weighted; weights are normalised).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

import numpy as np

from loadtests.errors import ModelMismatchError, SpecError
from loadtests.model_spec import ModelSpec, TensorSpec

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
    def parse(cls, text: str) -> BatchSizeSpec:
        """Parse a SPEC string; raise SpecError naming the spec and the accepted forms."""
        spec = str(text).strip()
        try:
            sizes, weights = _parse(spec)
        except ValueError as exc:
            raise SpecError(f"bad --batch-size {text!r}: {exc}; accepted forms: {ACCEPTED_FORMS}") from None
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

    def sample(self, rng: np.random.Generator) -> int:
        """One batch size drawn from the distribution (about 0.3 µs)."""
        if len(self.sizes) == 1:
            return self.sizes[0]
        # rng.random() is several times cheaper than rng.choice / rng.integers.
        u = rng.random()
        if self._uniform:
            return self.sizes[int(u * len(self.sizes))]
        return self.sizes[bisect.bisect_right(self._cumulative, u)]

    def check_against(self, model: ModelSpec) -> None:
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


# --- how a batch maps onto a model's tensors ------------------------------------


def check_batch_size(model: ModelSpec, batch_size: int) -> None:
    """Raise ModelMismatchError if one request of `batch_size` cannot go to `model`."""
    if batch_size < 1:
        raise ModelMismatchError(f"batch size {batch_size} is not positive")
    if not model.batches and batch_size != 1:
        raise ModelMismatchError(f"model {model.name!r} does not batch (max_batch_size 0): use --batch-size 1")
    if model.batches and batch_size > model.max_batch_size:
        raise ModelMismatchError(
            f"batch size {batch_size} is above model {model.name!r} max_batch_size {model.max_batch_size}"
        )


@dataclass(frozen=True)
class SampleLayout:
    """Where one sample's dims sit in a model tensor, batching or not.

    A batching model's tensor shape is the sample's shape; the client adds the batch
    dim. A non-batching model either spells a leading batch-like dim of -1 or 1
    (`lead_dim`: we send 1) or takes the bare sample (`lead_dim` False).

    Example: SampleLayout.of(model, model.input("input_ids"), rank=1).dims == (-1,)
    """

    dims: tuple[int, ...]
    lead_dim: bool

    @classmethod
    def of(cls, model: ModelSpec, tensor: TensorSpec, rank: int) -> SampleLayout | None:
        """The layout if `tensor` holds samples of `rank` dims, else None."""
        shape = tuple(tensor.shape)
        if model.batches:
            return cls(shape, True) if len(shape) == rank else None
        if len(shape) == rank + 1 and shape[0] in (-1, 1):
            return cls(shape[1:], True)
        if len(shape) == rank:
            return cls(shape, False)
        return None

    def stack(self, samples: np.ndarray) -> np.ndarray:
        """`samples` has a leading batch dim; drop it where the model has none."""
        return samples if self.lead_dim else samples[0]
