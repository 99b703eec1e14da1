"""perf_analyzer's `--input-data` JSON files: the samples (`"data"`) and expected outputs
(`"validation_data"`) for any model.

The JSON semantics follow perf_analyzer (docs/input_data.md, "Real Input Data", and
src/infer_data_manager_base.cc in triton-inference-server/perf_analyzer):
- each entry of `"data"` holds every input for ONE sample: a batch-1 request of a
  batching model (shape without the batch dim), or the whole request of a
  non-batching one;
- a tensor is a flat row-major list, `{"content": [...], "shape": [...]}`, or
  `{"b64": "..."}` / `{"content": {"b64": ...}, "shape": [...]}` (little-endian raw
  bytes; BYTES elements as a 4-byte length then the bytes);
- a request of batch size B takes B consecutive entries, and the next request starts
  after them, wrapping round (round-robin); entries batched together must share a shape;
- several files: the entries of each, one file after another (perf_analyzer appends them
  to its single stream);
- `"validation_data"`, aligned with `"data"`: expected outputs per entry, in the same
  forms, which `--validate-responses` compares exactly (loadtests/workloads/validation.py).
Refused with a one-line PayloadError: multi-stream files (`"data"` as a list of lists,
perf_analyzer's per-sequence streams), directories of raw files, anything that does not
decode to the model's datatypes and shapes.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from loadtests.config.model_spec import ModelSpec, TensorSpec
from loadtests.errors import PayloadError

Shapes = dict[str, tuple[int, ...]]


@dataclass(frozen=True)
class InputFile:
    """One perf_analyzer input-data file: its `"data"` entries (per input, one sample's
    array) and, aligned with them, its `"validation_data"` (per output, one sample's flat
    expected values; empty dicts when the file has none)."""

    entries: list[dict[str, np.ndarray]]
    expected: list[dict[str, np.ndarray]]


def load_input_data(
    path: str | Path, model: ModelSpec, shape_overrides: Shapes | None = None
) -> list[dict[str, np.ndarray]]:
    """The `"data"` entries of a perf_analyzer input-data JSON file, one dict of sample
    arrays (no batch dim for batching models) per entry.

    Example: load_input_data("data.json", model)[0]["INPUT0"].shape == (16,)
    """
    return load_input_file(path, model, shape_overrides).entries


def load_input_file(path: str | Path, model: ModelSpec, shape_overrides: Shapes | None = None) -> InputFile:
    """`"data"` and `"validation_data"` of a perf_analyzer input-data JSON file.

    Example: load_input_file("data.json", model).expected[0]["OUTPUT0"]  # flat expected values
    """
    path = Path(path)
    if path.is_dir():
        raise PayloadError(
            f"--input-data {path}: a directory of raw binary files is not supported; write a perf_analyzer JSON file"
        )
    if not path.is_file():
        raise PayloadError(f"--input-data {path}: no such file (expected a perf_analyzer JSON file, or zero|random)")
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise PayloadError(f"--input-data {path}: cannot read ({exc})") from None
    except json.JSONDecodeError as exc:
        raise PayloadError(f"--input-data {path}: not JSON ({exc.msg} at line {exc.lineno})") from None
    data = document.get("data") if isinstance(document, dict) else None
    if not isinstance(data, list) or not data:
        raise PayloadError(f'--input-data {path}: expected {{"data": [ {{INPUT: values, ...}}, ... ]}}')

    overrides = shape_overrides or {}
    names = {t.name for t in model.inputs}
    entries = []
    for index, entry in enumerate(data):
        where = f"--input-data {path} data[{index}]"
        if isinstance(entry, list):
            raise PayloadError(
                f"{where}: sequence data streams (a list of lists, one stream per sequence) are not "
                "supported: the suite sends no sequence ids; give a flat list of entries"
            )
        if not isinstance(entry, dict):
            raise PayloadError(f"{where}: expected an object of input name -> values")
        if "parameters" in entry and "parameters" not in names:
            raise PayloadError(
                f"{where}: 'parameters' is not part of perf_analyzer's input-data format "
                "(an entry holds input tensors only) and the suite sends no request parameters"
            )
        unknown = sorted(set(entry) - names - {"model"})  # perf_analyzer allows "model"
        if unknown:
            raise PayloadError(
                f"{where}: {unknown[0]!r} is not an input of model {model.name!r} "
                f"(its inputs: {', '.join(t.name for t in model.inputs)})"
            )
        arrays = {}
        for tensor in model.inputs:
            if tensor.name not in entry:
                raise PayloadError(f"{where}: no data for input {tensor.name!r}")
            arrays[tensor.name] = _decode_tensor(
                entry[tensor.name], tensor, overrides.get(tensor.name), f"{where} input {tensor.name!r}"
            )
        entries.append(arrays)
    return InputFile(entries, _load_validation_data(document, len(entries), model, path))


def _load_validation_data(document: dict, count: int, model: ModelSpec, path: Path) -> list[dict[str, np.ndarray]]:
    """perf_analyzer's `"validation_data"`: one entry per `"data"` entry, output name ->
    values in the same forms as inputs. An entry may give some outputs only."""
    if "validation_data" not in document:
        return [{} for _ in range(count)]
    entries = document["validation_data"]
    if not isinstance(entries, list) or len(entries) != count:
        size = len(entries) if isinstance(entries, list) else "not a list"
        raise PayloadError(
            f"--input-data {path}: 'validation_data' must align with 'data' ({count} entries), got {size}"
        )
    outputs = {t.name: t for t in model.outputs}
    expected = []
    for index, entry in enumerate(entries):
        where = f"--input-data {path} validation_data[{index}]"
        if not isinstance(entry, dict):
            raise PayloadError(f"{where}: expected an object of output name -> values")
        unknown = sorted(set(entry) - set(outputs))
        if unknown:
            raise PayloadError(
                f"{where}: {unknown[0]!r} is not an output of model {model.name!r} "
                f"(its outputs: {', '.join(outputs) or 'none'})"
            )
        expected.append(
            {name: _decode_expected(value, outputs[name], f"{where} output {name!r}") for name, value in entry.items()}
        )
    return expected


def _decode_expected(value, tensor: TensorSpec, where: str) -> np.ndarray:
    """Expected output values, flat. A variable-size output need not state its shape
    (perf_analyzer compares the bytes); a stated or fixed shape must hold its values."""
    content, shape = _split_value(value, where)
    if shape is None and any(d < 0 for d in tensor.shape):
        return _decode_values(content, tensor, where)
    return _decode_tensor(value, tensor, None, where).ravel()


def _split_value(value, where: str) -> tuple[object, tuple[int, ...] | None]:
    """A tensor's values and its stated shape: a list, {"content": ..., "shape": ...},
    {"b64": ...} (with an optional "shape"), or {"content": {"b64": ...}, "shape": ...}."""
    if not isinstance(value, dict):
        return value, None
    shape = None
    if "shape" in value:
        raw = value["shape"]
        if not (isinstance(raw, list) and all(isinstance(d, int) and d >= 0 for d in raw)):
            raise PayloadError(f"{where}: 'shape' must be a list of non-negative integers")
        shape = tuple(raw)
    if "b64" in value:
        return value, shape
    if "content" not in value:
        raise PayloadError(f"{where}: an object needs 'content' (with 'shape') or 'b64'")
    return value["content"], shape


def _decode_values(content, tensor: TensorSpec, where: str) -> np.ndarray:
    """Flat values of `tensor`'s datatype, from a (nested) list or a {"b64": ...} object."""
    if isinstance(content, dict) and "b64" in content:
        return _decode_b64(content["b64"], tensor, where)
    if isinstance(content, list):
        return _decode_list(content, tensor, where)
    raise PayloadError(f"{where}: values must be a list or a {{'b64': ...}} object")


def _decode_tensor(value, tensor: TensorSpec, override: tuple[int, ...] | None, where: str) -> np.ndarray:
    content, shape = _split_value(value, where)
    if shape is None:
        shape = override or tuple(tensor.shape)
    if not tensor.accepts(shape):
        raise PayloadError(
            f"{where}: shape {list(shape)} does not fit the model's {list(tensor.shape)} (batch dim excluded)"
        )
    if any(d < 0 for d in shape):
        raise PayloadError(
            f"{where}: the model's shape {list(tensor.shape)} is variable: "
            f'give "shape" in the entry or pass --shape {tensor.name}:d1,d2,...'
        )
    flat = _decode_values(content, tensor, where)
    expected = math.prod(shape)
    if flat.size != expected:
        raise PayloadError(f"{where}: {flat.size} elements, but shape {list(shape)} needs {expected}")
    return flat.reshape(shape)


def _decode_list(content: list, tensor: TensorSpec, where: str) -> np.ndarray:
    if tensor.datatype == "BYTES":
        flat = list(_flatten(content))
        if not all(isinstance(v, str) for v in flat):
            raise PayloadError(f"{where}: BYTES values must be strings")
        out = np.empty(len(flat), dtype=object)
        out[:] = [v.encode("utf-8") for v in flat]
        return out
    try:
        return np.asarray(content, dtype=tensor.numpy_dtype).ravel()
    except (TypeError, ValueError, OverflowError) as exc:
        raise PayloadError(f"{where}: values are not {tensor.datatype} ({exc})") from None


def _decode_b64(encoded, tensor: TensorSpec, where: str) -> np.ndarray:
    if not isinstance(encoded, str):
        raise PayloadError(f"{where}: 'b64' must be a string")
    try:
        raw = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise PayloadError(f"{where}: invalid base64 ({exc})") from None
    if tensor.datatype == "BYTES":
        # Triton's BYTES serialisation: each element is a little-endian uint32 length, then the bytes.
        items, pos = [], 0
        while pos < len(raw):
            if pos + 4 > len(raw):
                raise PayloadError(f"{where}: truncated BYTES data (length prefix at byte {pos})")
            (length,) = struct.unpack_from("<I", raw, pos)
            if pos + 4 + length > len(raw):
                raise PayloadError(f"{where}: truncated BYTES data (element at byte {pos})")
            items.append(raw[pos + 4 : pos + 4 + length])
            pos += 4 + length
        out = np.empty(len(items), dtype=object)
        out[:] = items
        return out
    dtype = tensor.numpy_dtype.newbyteorder("<")
    if len(raw) % dtype.itemsize:
        raise PayloadError(f"{where}: {len(raw)} bytes is not a whole number of {tensor.datatype} elements")
    return np.frombuffer(raw, dtype=dtype).astype(tensor.numpy_dtype)


def _flatten(values):
    for v in values:
        if isinstance(v, list):
            yield from _flatten(v)
        else:
            yield v
