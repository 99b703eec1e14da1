"""perf_analyzer's --input-data in full (docs/input_data.md and docs/cli.md of triton-inference-
server/perf_analyzer): each documented example shape as a fixture file written here, read by the
suite's workload; validation_data honoured under --validate-responses; several files; zero|random;
and every bad file refused with one `error:` line and exit 2 before any request reaches Triton.

The tests here need a Triton only to show a refused command left it untouched; the others, and this
feature's account, are in tests/unit/workloads/test_input_formats.py.
"""

from __future__ import annotations

import pytest

from tests.helpers import model_stats, run_locust, triton_options
from tests.refusals.run.test_preflight import assert_startup_error
from tests.unit.workloads.test_input_formats import write

BAD_FILES = {
    "multi_stream": ({"data": [[{"INPUT0": [1.0] * 16}], [{"INPUT0": [2.0] * 16}]]}, "sequence data streams"),
    "parameters": ({"data": [{"INPUT0": [1.0] * 16, "parameters": {"a": 1}}]}, "'parameters'"),
    "misaligned": (
        {"data": [{"INPUT0": [1.0] * 16}], "validation_data": [{"OUTPUT0": [1.0] * 16}] * 2},
        "must align with 'data'",
    ),
    "not_an_output": (
        {"data": [{"INPUT0": [1.0] * 16}], "validation_data": [{"OUT": [1.0]}]},
        "'OUT' is not an output",
    ),
    "bad_b64": ({"data": [{"INPUT0": {"b64": "not base64!"}}]}, "invalid base64"),
    "wrong_type": ({"data": [{"INPUT0": ["one"] * 16}]}, "not FP32"),
}


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_bad_input_data_files_are_refused_before_any_request(triton, tmp_path, case):
    document, fragment = BAD_FILES[case]
    path = write(tmp_path / f"{case}.json", document)
    before = model_stats(triton.http_address, "identity")
    result = run_locust(["TritonHttpUser"], [*triton_options(triton), "--model", "identity", "--input-data", str(path)])
    assert_startup_error(result, fragment, str(path))
    assert model_stats(triton.http_address, "identity") == before


@pytest.mark.parametrize("given", [["--input-data", "zero", "--input-data", "DIR"], ["--input-data", "DIR"]])
def test_input_data_mistakes_are_refused_before_any_request(triton, tmp_path, given):
    """A data mode mixed with files, and a perf_analyzer directory of binary files."""
    options = [str(tmp_path) if item == "DIR" else item for item in given]
    before = model_stats(triton.http_address, "identity")
    result = run_locust(["TritonGrpcUser"], [*triton_options(triton), "--model", "identity", *options])
    assert_startup_error(result, "--input-data")
    assert model_stats(triton.http_address, "identity") == before
