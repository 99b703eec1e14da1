"""perf_analyzer's --input-data in full (docs/input_data.md and docs/cli.md of
triton-inference-server/perf_analyzer): each documented example shape as a fixture file
written here, read by the suite's workload; validation_data honoured under
--validate-responses; several files; zero|random; and every bad file refused with one
`error:` line and exit 2 before any request reaches Triton.
"""

from __future__ import annotations

import argparse
import base64
import json
import struct
from pathlib import Path

import numpy as np
import pytest

from loadtests.config.model_spec import ModelSpec
from loadtests.errors import PayloadError, SpecError
from loadtests.options.reading import settings_from
from loadtests.workloads import GenericWorkload


def spec(inputs, outputs=(), max_batch_size: int = 8) -> ModelSpec:
    """A ModelSpec from JSON shaped like Triton's metadata and config answers."""
    batch = [-1] if max_batch_size else []

    def tensors(items):
        return [{"name": n, "datatype": dt, "shape": batch + list(shape)} for n, dt, shape in items]

    metadata = {"name": "m", "versions": ["1"], "inputs": tensors(inputs), "outputs": tensors(outputs)}
    return ModelSpec.from_triton(metadata, {"max_batch_size": max_batch_size})


def write(path: Path, document: dict) -> Path:
    path.write_text(json.dumps(document))
    return path


def rng() -> np.random.Generator:
    return np.random.default_rng(0)


# --- each example of docs/input_data.md, in a file of our own ------------------------------


def test_plain_flattened_lists_for_two_4x4_int32_inputs(tmp_path):
    """'Real Input Data': INPUT0 and INPUT1, shape [4, 4], INT32, four entries, flat row-major."""
    model = spec([("INPUT0", "INT32", [4, 4]), ("INPUT1", "INT32", [4, 4])])
    entries = [{"INPUT0": list(range(i, i + 16)), "INPUT1": [i] * 16} for i in range(4)]
    wl = GenericWorkload(model, input_data_file=write(tmp_path / "d.json", {"data": entries}))
    batch = wl.make_batch(2, rng())
    assert batch["INPUT0"].shape == (2, 4, 4) and batch["INPUT0"].dtype == np.int32
    np.testing.assert_array_equal(batch["INPUT0"][1], np.arange(1, 17).reshape(4, 4))  # row-major
    assert wl.make_batch(2, rng())["INPUT1"][:, 0, 0].tolist() == [2, 3]  # round-robin order


def test_b64_tensors_little_endian(tmp_path):
    """The b64 example: {"b64": ...} per input, raw little-endian bytes of the whole tensor."""
    model = spec([("INPUT0", "INT32", [4, 4]), ("INPUT1", "FP16", [2])])
    values = np.arange(16, dtype="<i4") - 8
    halves = np.array([1.5, -2.0], dtype="<f2")
    entry = {
        "INPUT0": {"b64": base64.b64encode(values.tobytes()).decode()},
        "INPUT1": {"b64": base64.b64encode(halves.tobytes()).decode()},
    }
    wl = GenericWorkload(model, input_data_file=write(tmp_path / "d.json", {"data": [entry] * 3}))
    batch = wl.make_batch(1, rng())
    np.testing.assert_array_equal(batch["INPUT0"][0], values.reshape(4, 4))
    np.testing.assert_array_equal(batch["INPUT1"][0], halves)


def test_content_and_shape_for_a_variable_input(tmp_path):
    """INPUT [-1, -1] INT32: entries shaped [2,8], [8,2], none (the --shape default) and [4,4]."""
    model = spec([("INPUT", "INT32", [-1, -1])])
    ones = [1] * 16
    entries = [
        {"INPUT": {"content": ones, "shape": [2, 8]}},
        {"INPUT": {"content": ones, "shape": [8, 2]}},
        {"INPUT": {"content": ones}},
        {"INPUT": {"content": ones, "shape": [4, 4]}},
    ]
    path = write(tmp_path / "d.json", {"data": entries})
    with pytest.raises(PayloadError, match=r"data\[2\] input 'INPUT'.*--shape"):
        GenericWorkload(model, input_data_file=path)  # no shape in the entry, none on the command line
    wl = GenericWorkload(model, {"INPUT": (4, 4)}, input_data_file=path)
    shapes = [wl.make_batch(1, rng())["INPUT"].shape[1:] for _ in range(4)]
    assert shapes == [(2, 8), (8, 2), (4, 4), (4, 4)]


def test_content_b64_with_shape_and_string_elements(tmp_path):
    """{"content": {"b64": ...}, "shape": [N]}; STRING elements as a 4-byte length then the bytes."""
    model = spec([("INPUT", "UINT8", [-1]), ("TEXT", "BYTES", [-1])])
    jpeg_like = bytes([0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10, 0x4A])
    strings = [b"", b"caf\xc3\xa9", b"x" * 300]
    packed = b"".join(struct.pack("<I", len(s)) + s for s in strings)
    entry = {
        "INPUT": {"content": {"b64": base64.b64encode(jpeg_like).decode()}, "shape": [len(jpeg_like)]},
        "TEXT": {"content": {"b64": base64.b64encode(packed).decode()}, "shape": [3]},
    }
    wl = GenericWorkload(model, input_data_file=write(tmp_path / "d.json", {"data": [entry, entry]}))
    batch = wl.make_batch(2, rng())
    assert batch["INPUT"][1].tobytes() == jpeg_like
    assert batch["TEXT"][0].tolist() == strings


def test_validation_data_aligned_with_data(tmp_path):
    """The Output Validation example: two INT32 [4, 4] outputs per entry, aligned with "data"."""
    model = spec(
        [("INPUT0", "INT32", [4, 4]), ("INPUT1", "INT32", [4, 4])],
        [("OUTPUT0", "INT32", [4, 4]), ("OUTPUT1", "INT32", [4, 4])],
    )
    document = {
        "data": [{"INPUT0": [1] * 16, "INPUT1": [1] * 16}, {"INPUT0": [2] * 16, "INPUT1": [5] * 16}],
        "validation_data": [{"OUTPUT0": [0] * 16, "OUTPUT1": [2] * 16}, {"OUTPUT0": [-3] * 16, "OUTPUT1": [7] * 16}],
    }
    wl = GenericWorkload(model, input_data_file=write(tmp_path / "d.json", document))
    _, expected = wl.make_batch_and_expected(2, rng())
    assert [row.tolist() for row in expected["OUTPUT1"]] == [[2] * 16, [7] * 16]
    _, again = wl.make_batch_and_expected(1, rng())  # round-robin: entry 0 again
    assert again["OUTPUT0"][0].tolist() == [0] * 16

    misaligned = write(tmp_path / "m.json", {**document, "validation_data": document["validation_data"][:1]})
    with pytest.raises(PayloadError, match=r"'validation_data' must align with 'data' \(2 entries\), got 1"):
        GenericWorkload(model, input_data_file=misaligned)
    not_an_output = write(tmp_path / "o.json", {**document, "validation_data": [{"NOPE": [1]}, {}]})
    with pytest.raises(PayloadError, match=r"validation_data\[0\]: 'NOPE' is not an output"):
        GenericWorkload(model, input_data_file=not_an_output)


def test_several_files_append_their_entries_in_order(tmp_path):
    """cli.md: `--input-data a.json --input-data b.json` appends b's entries after a's."""
    model = spec([("x", "INT32", [1])], [("y", "INT32", [1])])
    a = write(tmp_path / "a.json", {"data": [{"x": [1]}, {"x": [2]}], "validation_data": [{"y": [1]}, {"y": [2]}]})
    b = write(tmp_path / "b.json", {"data": [{"x": [3]}]})
    wl = GenericWorkload(model, input_data_file=[a, b])
    assert [int(wl.make_batch(1, rng())["x"][0, 0]) for _ in range(4)] == [1, 2, 3, 1]
    assert [{k: v.tolist() for k, v in e.items()} for e in wl.expected] == [{"y": [1]}, {"y": [2]}, {}]


def test_multi_stream_files_are_refused_with_one_line(tmp_path):
    """The sequence example: "data" as a list of lists (streams of 4, 3 and 2 steps)."""
    model = spec([("INPUT", "BYTES", [1])])
    streams = [[{"INPUT": [str(i)]} for i in range(n)] for n in (4, 3, 2)]
    path = write(tmp_path / "d.json", {"data": streams})
    with pytest.raises(PayloadError, match=r"data\[0\]: sequence data streams .* not supported") as error:
        GenericWorkload(model, input_data_file=path)
    assert "\n" not in str(error.value)


def test_request_parameters_in_an_entry_are_refused(tmp_path):
    model = spec([("x", "INT32", [1])])
    path = write(tmp_path / "d.json", {"data": [{"x": [1], "parameters": {"max_tokens": 8}}]})
    with pytest.raises(PayloadError, match="'parameters' is not part of perf_analyzer's input-data format"):
        GenericWorkload(model, input_data_file=path)


# --- options ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "files", "mode"),
    [
        (["a.json", "b.json"], ("a.json", "b.json"), "random"),
        (["zero"], (), "zero"),
        (["random"], (), "random"),
        ("c.json", ("c.json",), "random"),  # one string: the web UI's form
        ("c.json,d.json", ("c.json", "d.json"), "random"),
        ("zero", (), "zero"),
        (None, (), "random"),
    ],
)
def test_input_data_option_takes_files_or_a_data_mode(given, files, mode):
    settings = settings_from(argparse.Namespace(input_data=given))
    assert settings.input_data == tuple(Path(f) for f in files)
    assert settings.data_mode == mode


def test_input_data_mode_and_files_together_are_refused():
    with pytest.raises(SpecError, match="either JSON files or one of random, zero"):
        settings_from(argparse.Namespace(input_data=["zero", "a.json"]))
