"""Inputs for any model: random or zero tensors from its metadata, or the samples of
perf_analyzer `--input-data` JSON files (read by workloads/input_data.py, whose docstring
gives the format), handed out round-robin in batches.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from loadtests.config.model_spec import ModelSpec, TensorSpec
from loadtests.errors import ModelMismatchError, PayloadError, SpecError
from loadtests.workloads.batch_spec import SampleLayout, check_batch_size
from loadtests.workloads.input_data import Shapes, load_input_file

DATA_MODES = ("random", "zero")
RANDOM_INT_HIGH = 100  # random integers are drawn from [0, 100): valid ids/indices for most models
RANDOM_BYTES_LENGTH = 8  # characters per random BYTES element
RANDOM_POOL_SAMPLES = 16  # distinct random samples, so that requests do not all repeat one
RANDOM_POOL_MAX_BYTES = 64 * 2**20  # ... unless the samples are large
VARIABLE_DIM_SUGGESTED = 16  # the size suggested for a variable (-1) dim: short enough for any model

# Per output name, one flat array of expected values per sample of a request, in batch order.
ExpectedOutputs = dict[str, tuple[np.ndarray, ...]]


def parse_shape_overrides(values: str | Iterable[str] | None) -> Shapes:
    """Parse perf_analyzer-style `--shape NAME:d1,d2` values (repeated or space-separated).

    The shape excludes the batch dim, as perf_analyzer's does. Names may contain ':'
    (TensorFlow's "input:0"): the last ':' separates the dims.

    Example: parse_shape_overrides("a:1,2 b:3") == {"a": (1, 2), "b": (3,)}
    """
    if values is None:
        return {}
    if isinstance(values, str):
        values = [values]
    shapes: Shapes = {}
    for value in values:
        for item in value.split():
            name, sep, dims = item.rpartition(":")
            try:
                shape = tuple(int(d) for d in dims.split(","))
            except ValueError:
                shape = ()
            if not sep or not name or not shape or min(shape) < 1:
                raise SpecError(
                    f"bad --shape {item!r}: write NAME:d1,d2,... with positive dims, e.g. --shape INPUT0:3,224,224"
                )
            shapes[name] = shape
    return shapes


def suggested_shape(tensor: TensorSpec) -> str:
    """The --shape item the suite suggests for an input: its dims, each variable one as 16.

    The one rule behind the refusal of a variable input without --shape and the web form's
    Shape field filled for a chosen model (loadtests/run/webui_models.py).

    Example: suggested_shape(TensorSpec("input_ids", "INT32", (-1,))) == "input_ids:16"
    """
    return f"{tensor.name}:{','.join(str(d if d > 0 else VARIABLE_DIM_SUGGESTED) for d in tensor.shape)}"


def suggested_shapes(model: ModelSpec) -> str:
    """--shape for every input of `model` with a variable dim, space-separated ("" when none has one).

    Example: suggested_shapes(bert_spec) == "input_ids:16 segment_ids:16 input_mask:16"
    """
    return " ".join(suggested_shape(tensor) for tensor in model.inputs if any(d < 0 for d in tensor.shape))


def random_sample(
    tensor: TensorSpec, shape: Sequence[int], rng: np.random.Generator, count: int = 1, zero: bool = False
) -> np.ndarray:
    """`count` samples of `shape` for `tensor`, stacked: shape (count, *shape).

    Example: random_sample(TensorSpec("x", "BYTES", (2,)), (2,), rng)[0, 0] -> b'qkzjwhtr'
    """
    full = (count, *shape)
    dtype = tensor.numpy_dtype
    if tensor.datatype == "BYTES":
        n = math.prod(full)
        if zero:
            return np.full(full, b"", dtype=object)
        letters = rng.integers(ord("a"), ord("z") + 1, size=(n, RANDOM_BYTES_LENGTH), dtype=np.uint8)
        out = np.empty(n, dtype=object)
        out[:] = [row.tobytes() for row in letters]
        return out.reshape(full)
    if zero:
        return np.zeros(full, dtype=dtype)
    if tensor.datatype == "BOOL":
        return rng.integers(0, 2, size=full).astype(bool)
    if dtype.kind in "iu":
        return rng.integers(0, RANDOM_INT_HIGH, size=full, dtype=dtype)
    return rng.random(size=full).astype(dtype)


class GenericWorkload:
    """Batches for any model: random/zero data of the right dtype and shape, or the
    entries of perf_analyzer `--input-data` JSON files, round-robin.

    Example:
        >>> wl = GenericWorkload(model, parse_shape_overrides("INPUT0:16"))
        >>> wl.make_batch(4, np.random.default_rng(0))["INPUT0"].shape
        (4, 16)
    """

    def __init__(
        self,
        model: ModelSpec,
        shape_overrides: Shapes | None = None,
        data_mode: str = "random",
        input_data_file: str | Path | Sequence[str | Path] | None = None,
        seed: int = 0,
    ) -> None:
        if data_mode not in DATA_MODES:
            raise SpecError(f"bad data mode {data_mode!r}: use one of {', '.join(DATA_MODES)}")
        self.model = model
        self.data_mode = data_mode
        self.shape_overrides = dict(shape_overrides or {})
        self._layouts = {t.name: SampleLayout.of(model, t, rank=len(t.shape)) for t in model.inputs}
        self._check_overrides()
        self._cursor = 0
        paths = [input_data_file] if isinstance(input_data_file, (str, Path)) else list(input_data_file or [])
        # Several files: their entries one after another, in the order given (perf_analyzer
        # appends each file's entries to its single stream the same way).
        files = [load_input_file(p, model, self.shape_overrides) for p in paths]
        self.entries = [e for f in files for e in f.entries]
        self.expected = [e for f in files for e in f.expected]
        if self.entries:
            self._pool = _stack_if_uniform(self.entries, model)
        else:
            self._pool = self._random_pool(np.random.default_rng(seed))

    @property
    def uses_input_data(self) -> bool:
        return bool(self.entries)

    def make_batch(self, batch_size: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
        """Random/zero mode: samples drawn from a small precomputed pool with `rng`.
        JSON mode: the next `batch_size` entries in file order (`rng` unused)."""
        return self.make_batch_and_expected(batch_size, rng)[0]

    def make_batch_and_expected(
        self, batch_size: int, rng: np.random.Generator
    ) -> tuple[dict[str, np.ndarray], ExpectedOutputs | None]:
        """The batch, and what the file's `validation_data` says each output must be for it:
        per output name, one flat array per sample in batch order (None without such data)."""
        check_batch_size(self.model, batch_size)
        if not self.model.inputs:
            return {}, None
        if self.entries:
            n = len(self.entries)
            idx = (self._cursor + np.arange(batch_size)) % n
            self._cursor = (self._cursor + batch_size) % n
            expected = self._expected_for(idx)
            if self._pool is None:
                return self._stack_entries(idx), expected
        else:
            idx = rng.integers(0, len(next(iter(self._pool.values()))), size=batch_size)
            expected = None
        return {name: self._layouts[name].stack(rows[idx]) for name, rows in self._pool.items()}, expected

    def _expected_for(self, idx: np.ndarray) -> ExpectedOutputs | None:
        # An output is checked only when every sample of the request has a value for it.
        samples = [self.expected[i] for i in idx]
        names = set.intersection(*(set(s) for s in samples)) if samples else set()
        if not names:
            return None
        return {name: tuple(s[name] for s in samples) for name in sorted(names)}

    # --- construction ------------------------------------------------------------

    def _check_overrides(self) -> None:
        names = [t.name for t in self.model.inputs]
        for name, shape in self.shape_overrides.items():
            if name not in names:
                raise ModelMismatchError(
                    f"--shape {name}: model {self.model.name!r} has no input {name!r} (its inputs: {', '.join(names)})"
                )
            tensor = self.model.input(name)
            if not tensor.accepts(shape):
                raise ModelMismatchError(
                    f"--shape {name}:{','.join(map(str, shape))} does not fit the model's "
                    f"shape {list(tensor.shape)} for {name!r} (batch dim excluded)"
                )

    def sample_shape(self, tensor: TensorSpec) -> tuple[int, ...]:
        """The shape random data takes: the model's, with --shape filling -1 dims."""
        shape = self.shape_overrides.get(tensor.name, tuple(tensor.shape))
        if any(d < 0 for d in shape):
            missing = [
                t for t in self.model.inputs if t.name not in self.shape_overrides and any(d < 0 for d in t.shape)
            ]
            shapes = " ".join(suggested_shape(t) for t in missing)
            raise ModelMismatchError(
                f"model {self.model.name!r} input{'s' if len(missing) > 1 else ''} "
                + ", ".join(f"{t.name!r} {list(t.shape)}" for t in missing)
                + f" {'have' if len(missing) > 1 else 'has'} a variable shape: pass --shape "
                + (f'"{shapes}"' if len(missing) > 1 else shapes)
                + " (batch dim excluded)"
            )
        return shape

    def _random_pool(self, rng: np.random.Generator) -> dict[str, np.ndarray]:
        shapes = {t.name: self.sample_shape(t) for t in self.model.inputs}
        zero = self.data_mode == "zero"
        per_sample = sum(
            math.prod(shapes[t.name]) * (RANDOM_BYTES_LENGTH if t.datatype == "BYTES" else t.numpy_dtype.itemsize)
            for t in self.model.inputs
        )
        count = 1 if zero else max(1, min(RANDOM_POOL_SAMPLES, RANDOM_POOL_MAX_BYTES // max(per_sample, 1)))
        return {t.name: random_sample(t, shapes[t.name], rng, count, zero) for t in self.model.inputs}

    def _stack_entries(self, idx: np.ndarray) -> dict[str, np.ndarray]:
        out = {}
        for tensor in self.model.inputs:
            rows = [self.entries[i][tensor.name] for i in idx]
            for i, row in zip(idx[1:], rows[1:], strict=True):
                if row.shape != rows[0].shape:
                    raise PayloadError(
                        f"--input-data entries data[{idx[0]}] and data[{i}] give input "
                        f"{tensor.name!r} shapes {list(rows[0].shape)} and {list(row.shape)}: "
                        "entries batched together must share a shape"
                    )
            out[tensor.name] = self._layouts[tensor.name].stack(np.stack(rows))
        return out


def _stack_if_uniform(entries: list[dict[str, np.ndarray]], model: ModelSpec) -> dict[str, np.ndarray] | None:
    """All entries stacked per input, when every input keeps one shape across entries:
    then a batch is one fancy-index copy instead of a per-request np.stack."""
    pool = {}
    for tensor in model.inputs:
        rows = [e[tensor.name] for e in entries]
        if any(r.shape != rows[0].shape for r in rows):
            return None
        pool[tensor.name] = np.stack(rows)
    return pool
