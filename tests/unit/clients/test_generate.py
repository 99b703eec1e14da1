"""Triton's generate extension, sans I/O (clients/generate.py): which models generate_stream can
carry (what the bundled tritonserver 2.51 accepts, tried input by input, is in the module's
docstring), the JSON body, the server-sent events and their outputs."""

from __future__ import annotations

import json

import numpy as np
import pytest

from loadtests.clients.generate import event_outputs, generate_body, generate_refusal, sse_events
from loadtests.config.model_spec import ModelSpec, TensorSpec
from loadtests.errors import ModelMismatchError


def spec(*inputs: TensorSpec, max_batch_size: int = 0, outputs: tuple[TensorSpec, ...] = ()) -> ModelSpec:
    return ModelSpec("m", "1", "python", max_batch_size, inputs, outputs or inputs, decoupled=True)


FP32_4 = TensorSpec("INPUT0", "FP32", (4,))


@pytest.mark.parametrize(
    ("model", "sizes", "says"),
    [
        (spec(TensorSpec("x", "FP16", (4,))), (1,), "input 'x' is FP16"),
        (spec(FP32_4, outputs=(TensorSpec("y", "BF16", (4,)),)), (1,), "output 'y' is BF16"),
        (spec(TensorSpec("x", "FP32", (-1, -1))), (1,), "input 'x' has shape [-1, -1]"),
        (spec(FP32_4, max_batch_size=8), (1, 4), "--batch-size 1"),
    ],
)
def test_what_generate_stream_cannot_carry_is_named(model, sizes, says):
    reason = generate_refusal(model, sizes)
    assert reason is not None and says in reason, reason


@pytest.mark.parametrize(
    "model",
    [
        spec(FP32_4),
        spec(TensorSpec("x", "FP32", (2, 2))),  # a flat list fills any rank when the counts agree
        spec(TensorSpec("x", "INT64", (-1, 2))),  # one variable dim: sized by the count
        spec(TensorSpec("x", "BYTES", (1,)), max_batch_size=8),  # batch size 1
    ],
)
def test_what_generate_stream_carries_is_not_refused(model):
    assert generate_refusal(model, (1,)) is None


def test_the_body_is_each_input_as_a_flat_list():
    inputs = {"a": np.arange(4, dtype=np.float32).reshape(1, 2, 2), "b": np.array([[b"hi"]], dtype=object)}
    body = json.loads(generate_body(spec(TensorSpec("a", "FP32", (2, 2))), inputs))
    assert body == {"a": [0.0, 1.0, 2.0, 3.0], "b": ["hi"]}


@pytest.mark.parametrize(
    ("array", "says"),
    [(np.array([b"\xff\xfe"], dtype=object), "not UTF-8"), (np.array([np.nan], dtype=np.float32), "NaN")],
)
def test_a_payload_json_cannot_carry_is_a_startup_error(array, says):
    with pytest.raises(ModelMismatchError, match=says):
        generate_body(spec(FP32_4), {"INPUT0": array})


def test_events_split_over_chunks_crlf_and_several_data_lines():
    chunks = [b'data: {"a"', b': 1}\r\n\r\n: a comment\n\ndata: {"b":\ndata: 2}\n', b"\n", b"data: cut"]
    events, cut = sse_events(chunks, [10, 20, 30, 40])
    # Each event is timed by the chunk that completed it.
    assert events == [(b'{"a": 1}', 20), (b'{"b":\n2}', 30)]
    assert cut == b"data: cut"


def test_an_events_outputs_are_shaped_as_the_model_says():
    model = spec(TensorSpec("INPUT0", "FP32", (-1, 2)), max_batch_size=8)
    outputs, datatypes = event_outputs(model, {"INPUT0": [1, 2, 3, 4], "model_name": "m", "model_version": "1"})
    assert outputs["INPUT0"].shape == (1, 2, 2) and outputs["INPUT0"].dtype == np.float32
    assert datatypes == {"INPUT0": "FP32"}
