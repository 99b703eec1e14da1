"""perf_analyzer's --input-data in full (docs/input_data.md and docs/cli.md of triton-inference-
server/perf_analyzer): each documented example shape as a fixture file written here, read by the
suite's workload; validation_data honoured under --validate-responses; several files; zero|random;
and every bad file refused with one `error:` line and exit 2 before any request reaches Triton.

The tests here need a real Triton or a browser; the others, and this feature's account, are in
tests/unit/workloads/test_input_formats.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from loadtests.config.settings import Settings
from tests.helpers import http_target, run_against_triton
from tests.unit.workloads.test_input_formats import write

WRONG = "validation: OUTPUT0 differs from validation_data"


# --- end to end, against the real Triton ---------------------------------------------------


def identity_file(path: Path, expected_value: float) -> Path:
    """Two entries for `identity` (INPUT0 [16] FP32); validation_data says OUTPUT0 of the
    second entry is `expected_value` everywhere (the model echoes 2.0)."""
    return write(
        path,
        {
            "data": [{"INPUT0": [1.0] * 16}, {"INPUT0": [2.0] * 16}],
            "validation_data": [{"OUTPUT0": [1.0] * 16}, {"OUTPUT0": [expected_value] * 16}],
        },
    )


def run_identity(triton, tmp_path, user_class: str, *options: str):
    """A 2-s run of one user on identity, each into a run directory of its own (a used one is
    refused): (the process, its endpoint from summary.json or None)."""
    run_dir = tmp_path / f"run-{len(list(tmp_path.glob('run-*')))}"
    run = run_against_triton(
        triton, run_dir, [user_class], ["--model", "identity", *options], users=1, run_time="2s", expect_exit=None
    )
    return run.result, run.summary["endpoints"][0] if run.summary else None


@pytest.mark.parametrize("user_class", ["TritonHttpUser", "TritonGrpcUser"])
def test_wrong_validation_data_is_a_counted_failure(triton, tmp_path, user_class):
    """Finding 2: a file whose expected outputs are wrong gave 0 failures under --validate-responses."""
    wrong = identity_file(tmp_path / "wrong.json", expected_value=3.0)
    result, endpoint = run_identity(triton, tmp_path, user_class, "--input-data", str(wrong), "--validate-responses")
    assert result.returncode == 1, result.stderr[-2000:]
    assert set(endpoint["failures_by_class"]) == {WRONG}
    # Entries alternate: the second entry's requests fail, the first entry's pass.
    assert 0 < endpoint["failures"] < endpoint["requests"]


def test_right_validation_data_passes_and_is_checked_only_on_request(triton, tmp_path):
    right = identity_file(tmp_path / "right.json", expected_value=2.0)
    result, endpoint = run_identity(
        triton, tmp_path, "TritonHttpUser", "--input-data", str(right), "--validate-responses"
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert endpoint["failures"] == 0 and endpoint["requests"] > 0
    wrong = identity_file(tmp_path / "wrong.json", expected_value=3.0)
    result, endpoint = run_identity(triton, tmp_path, "TritonHttpUser", "--input-data", str(wrong))
    assert result.returncode == 0, result.stderr[-2000:]  # without --validate-responses: not checked
    assert endpoint["failures"] == 0


def test_repeated_input_data_uses_every_file(triton, tmp_path):
    """Finding 4: repeating --input-data kept only the last file."""
    right = write(tmp_path / "a.json", {"data": [{"INPUT0": [1.0] * 16}], "validation_data": [{"OUTPUT0": [1.0] * 16}]})
    wrong = write(tmp_path / "b.json", {"data": [{"INPUT0": [2.0] * 16}], "validation_data": [{"OUTPUT0": [5.0] * 16}]})
    result, endpoint = run_identity(
        triton,
        tmp_path,
        "TritonGrpcUser",
        "--input-data",
        str(right),
        "--input-data",
        str(wrong),
        "--validate-responses",
    )
    assert result.returncode == 1, result.stderr[-2000:]
    assert set(endpoint["failures_by_class"]) == {WRONG}
    assert 0 < endpoint["failures"] < endpoint["requests"]  # b.json's requests fail, a.json's pass


@pytest.mark.parametrize("mode", ["zero", "random"])
def test_input_data_zero_and_random_work_as_in_perf_analyzer(triton, tmp_path, mode):
    """Finding 4: `--input-data zero` answered 'no such file'."""
    result, endpoint = run_identity(triton, tmp_path, "TritonHttpUser", "--input-data", mode)
    assert result.returncode == 0, result.stderr[-2000:]
    assert endpoint["requests"] > 0 and endpoint["failures"] == 0


@pytest.mark.parametrize("batch", [1, 3])
def test_every_entry_of_a_long_input_file_is_sent(triton, tmp_path, batch):
    # perf_analyzer steps through every entry; the request pools must hold them all, not the
    # first few (pools used to keep 8 bodies per batch size whatever the file held).
    import dataclasses

    from locust.event import EventHook

    from loadtests.clients.http import HttpClient
    from loadtests.workloads import parse_batch_size
    from loadtests.workloads.endpoints import prepare_endpoint
    from loadtests.workloads.kinds import GENERIC

    path = tmp_path / "long.json"
    path.write_text(json.dumps({"data": [{"INPUT0": [float(i)] * 16} for i in range(30)]}))
    settings = Settings(model="identity", batch_size=parse_batch_size(str(batch)), input_data=(path,))
    client = HttpClient(http_target(triton.http_address), 10.0, EventHook())
    try:
        endpoint = prepare_endpoint(GENERIC, client, "identity", dataclasses.replace(settings))
    finally:
        client.close()
    bodies = endpoint.pools[batch]
    assert len(bodies) * batch >= 30
    sent = set()
    for request in bodies:
        values = np.frombuffer(request.wire.body[-batch * 16 * 4 :], dtype=np.float32).reshape(batch, 16)
        sent.update(int(row[0]) for row in values)
    assert sent == set(range(30))
