"""Triton's generate extension over HTTP (`POST /v2/models/<m>/generate_stream`), sans I/O:
which models it can carry, the JSON body, the server-sent events of its answer.

The request is one JSON object: each model input is a field of its name holding a flat list of
its values (numbers, booleans, strings). The answer is `text/event-stream`, chunked: one
`data: {...}` event per response with outputs (each output a field of its name, a flat list;
plus model_name and model_version), `data: {"error": "..."}` when the model fails, and the end
of the body when the final response is out (the empty final response sends no event).

What the bundled tritonserver (2.51) does with the body, tried input by input:
  - a flat list fills the input's shape when the element counts agree, whatever its rank
    (dims [2, 2] take four values); a nested list is refused ("The schema can not convert
    input 'X' to tensor with proper shape"), so a batching model gets one sample (batch
    dimension 1) per request;
  - one variable dim is sized by the count; with two or more, Triton picks a shape itself, so
    the model would not get the payload's shape;
  - FP16 (and BF16) values are refused ("receiving FP16 data via JSON is not supported");
  - `/generate` (one JSON answer) refuses a model that sends more or fewer than one response
    ("generate expects model to produce exactly 1 response"): decoupled models stream.

    body = generate_body(spec, {"INPUT0": np.arange(4, dtype=np.float32)})  # b'{"INPUT0":[0.0,...]}'
"""

from __future__ import annotations

import json
import math

import numpy as np

from loadtests.config.model_spec import ModelSpec, TensorSpec
from loadtests.errors import ModelMismatchError

# Datatypes generate's JSON cannot carry (Triton refuses them as JSON values).
NOT_JSON = ("FP16", "BF16")
ERROR_KEY = "error"
METADATA_KEYS = ("model_name", "model_version")


def generate_refusal(model: ModelSpec, batch_sizes: tuple[int, ...]) -> str | None:
    """Why the model's requests cannot be given to generate_stream, or None."""
    for kind, tensors in (("input", model.inputs), ("output", model.outputs)):
        for tensor in tensors:
            if tensor.datatype in NOT_JSON:
                return f"{kind} '{tensor.name}' is {tensor.datatype}, which Triton does not take or give as JSON"
    for tensor in model.inputs:
        if sum(1 for dim in tensor.shape if dim < 0) > 1:
            return (
                f"input '{tensor.name}' has shape {list(tensor.shape)}: generate_stream takes a flat list and "
                "sizes one variable dim from its length, not two"
            )
    if model.batches and set(batch_sizes) != {1}:
        return (
            "generate_stream takes one sample per request (a batch is a nested list, which Triton refuses): "
            "--batch-size 1"
        )
    return None


def generate_body(model: ModelSpec, inputs: dict[str, np.ndarray]) -> bytes:
    """The request's JSON, built once before the test: each input a flat list of its values."""
    fields = {}
    for name, array in inputs.items():
        values = array.ravel().tolist()
        if array.dtype.kind in "OS":
            try:
                values = [v.decode() if isinstance(v, bytes) else str(v) for v in values]
            except UnicodeDecodeError:
                raise ModelMismatchError(
                    f"input '{name}' of model '{model.name}' holds bytes that are not UTF-8 text, which "
                    "generate_stream's JSON cannot carry: TritonGrpcUser streams it"
                ) from None
        fields[name] = values
    try:
        return json.dumps(fields, separators=(",", ":"), allow_nan=False).encode()
    except ValueError:
        raise ModelMismatchError(
            f"the payload of model '{model.name}' holds NaN or infinity, which JSON cannot carry: "
            "TritonGrpcUser streams it"
        ) from None


def sse_events(chunks: list[bytes], times: list[int]) -> tuple[list[tuple[bytes, int]], bytes]:
    """The `data` of each complete server-sent event, with the arrival time of the chunk that
    completed it, and what is left over (an event cut short). Lines end in LF, CRLF or CR;
    several `data:` lines of one event are joined with LF; other fields and comments are skipped.
    """
    events: list[tuple[bytes, int]] = []
    pending = b""
    data: list[bytes] = []
    for chunk, arrived in zip(chunks, times, strict=True):
        pending += chunk
        lines = pending.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
        pending = lines.pop()  # no line end yet
        for line in lines:
            if not line:
                if data:
                    events.append((b"\n".join(data), arrived))
                    data = []
                continue
            field, _, value = line.partition(b":")
            if field == b"data":
                data.append(value[1:] if value.startswith(b" ") else value)
    cut = pending or (b"\n".join(data) if data else b"")
    return events, cut


def event_error(event: dict) -> str | None:
    """An error event's message (the model failed), else None."""
    error = event.get(ERROR_KEY)
    return None if error is None else str(error)


def event_outputs(model: ModelSpec, event: dict) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """A response event's outputs as arrays of the model's datatypes, shaped as far as the JSON
    tells (it is flat): the model's dims, the batch dimension 1, one variable dim from the count.
    The datatypes are the model's (generate's JSON does not say them)."""
    specs = {spec.name: spec for spec in model.outputs}
    outputs, datatypes = {}, {}
    for name, values in event.items():
        if name in METADATA_KEYS or name == "parameters":
            continue
        spec = specs.get(name)
        flat = values if isinstance(values, list) else [values]
        if spec is None:
            outputs[name], datatypes[name] = np.asarray(flat), ""
            continue
        if spec.datatype == "BYTES":
            array = np.array([str(v).encode() for v in flat], dtype=object)
        else:
            array = np.asarray(flat, dtype=spec.numpy_dtype)
        outputs[name], datatypes[name] = array.reshape(_shape(spec, model.batches, array.size)), spec.datatype
    return outputs, datatypes


def _shape(spec: TensorSpec, batches: bool, count: int) -> tuple[int, ...]:
    dims = [dim for dim in spec.shape]
    variable = [i for i, dim in enumerate(dims) if dim < 0]
    fixed = math.prod(dim for dim in dims if dim >= 0)
    if len(variable) > 1 or (not variable and fixed != count) or (variable and count % max(fixed, 1)):
        return (count,)  # as sent: validation then names the shape
    if variable:
        dims[variable[0]] = count // max(fixed, 1)
    return (1, *dims) if batches else tuple(dims)
