"""Conformance matrix: every Triton datatype x HTTP binary, HTTP JSON, gRPC x batching and non-batching
models x fixed and variable dims x random, zero and --input-data sources, through the suite's own
path (endpoints.prepare_endpoint, workloads/generic.py, the suite's clients and validator;
tests/conformance_probe.py), against a real local Triton that serves the conformance models
(models/conformance_repository, started by this module).

The tests here need a real Triton or a browser; the others, and this feature's account, are in
tests/unit/clients/test_conformance.py.
"""

from __future__ import annotations

import itertools
import json
import time
from pathlib import Path

import numpy as np
import pytest

from loadtests.server import LocalTriton
from models.conformance import CONFORMANCE_REPOSITORY, DATATYPES, model_name
from tests.helpers import THROWAWAY_STOP_S, model_stats, read_summary, run_cli, run_locust, triton_options

PROTOCOLS = ("http", "http_json", "grpc")
SOURCES = ("random", "zero", "input_data")
DIMS = ("FIXED", "VARIABLE")
VARIABLE_SHAPE = 5  # --shape VARIABLE:5 for generated data; the input-data files give [4]
# Refused on purpose, in pre-flight, with the reason the suite prints.
REFUSED = {
    ("BF16", None): "numpy has no bfloat16: the suite cannot generate or send BF16 tensors",
    ("FP16", "http_json"): "Triton refuses FP16 tensors in JSON ('receiving FP16 data via JSON is not supported')",
}

# Passed with a tolerance, for a reason outside the suite: Triton parses JSON numbers
# without full precision, so an FP64 sent as JSON can come back 1 unit in the last place off
# (measured: 0.9127555772777216 echoed as 0.9127555772777215; binary tensors are exact).
ULPS = {("FP64", "http_json"): 1}


@pytest.fixture(scope="module")
def conformance_triton(tmp_path_factory):
    """A Triton of the conformance models alone (models/conformance_repository): only this
    module needs their 28 Python stubs, so the session's Triton does not start them."""
    with LocalTriton(
        [CONFORMANCE_REPOSITORY],
        log_file=tmp_path_factory.mktemp("conformance") / "triton.log",
        stop_timeout_s=THROWAWAY_STOP_S,
    ) as server:
        yield server


def refusal(datatype: str, protocol: str) -> str | None:
    return REFUSED.get((datatype, None)) or REFUSED.get((datatype, protocol))


def file_values(datatype: str) -> tuple[list, list]:
    """Six FIXED and four VARIABLE values per entry, with each integer type's extremes."""
    if datatype == "BOOL":
        return [True, False, True, True, False, False], [False, True, False, True]
    if datatype == "BYTES":
        return ["a", "", "héllo", "x" * 40, "0", "tab\tand space"], ["", "q", "ünï", "zz"]
    if datatype.startswith(("FP", "BF")):
        return [0.5, -1.25, 0.0, 1024.0, -0.09375, 3.0], [0.1, -2.5, 65504.0 if datatype == "FP16" else 1e6, 7.0]
    info = np.iinfo(np.dtype(datatype.lower()))
    return [int(info.min), int(info.max), 0, 1, 2, int(info.max) - 1], [3, int(info.min), 5, int(info.max)]


def write_input_data(directory: Path, datatype: str) -> Path:
    """A perf_analyzer file: three entries (plain list for FIXED, content+shape for
    VARIABLE) and validation_data equal to them (the models are identities)."""
    fixed, variable = file_values(datatype)
    entries, expected = [], []
    for shift in range(3):
        f = fixed[shift:] + fixed[:shift]
        v = variable[shift:] + variable[:shift]
        entries.append({"FIXED": f, "VARIABLE": {"content": v, "shape": [len(v)]}})
        expected.append({"FIXED_OUT": f, "VARIABLE_OUT": v})
    path = directory / f"{datatype.lower()}.json"
    path.write_text(json.dumps({"data": entries, "validation_data": expected}))
    return path


def cells(directory: Path) -> list[dict]:
    out = []
    for datatype, protocol, batching, source in itertools.product(DATATYPES, PROTOCOLS, (True, False), SOURCES):
        cell = {
            "datatype": datatype,
            "model": model_name(datatype, batching),
            "protocol": protocol,
            "batching": batching,
            "source": source,
            "batch": "1,3" if batching else "1",
            "validate": True,
            "ulps": ULPS.get((datatype, protocol), 0),
        }
        if source == "input_data":
            cell["input_data"] = [str(write_input_data(directory, datatype))]
        else:
            cell["data_mode"] = source
            cell["shape"] = f"VARIABLE:{VARIABLE_SHAPE}"
        out.append(cell)
    return out


def probe(triton, cell_list: list[dict]) -> list[dict]:
    spec = {"http": triton.http_address, "grpc": triton.grpc_address, "cells": cell_list}
    result = run_cli(["-m", "tests.conformance_probe", json.dumps(spec)], timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_bytes_inputs_over_grpc_through_the_suites_client(triton, tmp_path):
    """Finding 1: BYTES over gRPC sent an 8-byte pointer (serialize_byte_tensor(...).tobytes())."""
    data = tmp_path / "text.json"
    data.write_text(
        json.dumps(
            {
                "data": [{"text": ["stressed"]}, {"text": ["héllo"]}],
                "validation_data": [{"reversed": ["desserts"]}, {"reversed": ["olléh"]}],
            }
        )
    )
    base = {"model": "text_reverse", "protocol": "grpc", "batch": "1,2", "validate": True}
    results = probe(triton, [{**base, "data_mode": "random"}, {**base, "input_data": [str(data)]}])
    for result in results:
        assert result["error"] is None
        assert result["requests"] > 0
        assert result["failures"] == {}, result["failures"]


def test_datatype_protocol_batching_matrix(conformance_triton, tmp_path):
    triton = conformance_triton
    all_cells = cells(tmp_path)
    before = {c["model"]: model_stats(triton.http_address, c["model"]) for c in all_cells}
    started = time.monotonic()
    results = probe(triton, all_cells)
    elapsed = time.monotonic() - started

    passed = refused = 0
    problems = []
    for cell, result in zip(all_cells, results, strict=True):
        where = f"{cell['model']} {cell['protocol']} {cell['source']}"
        reason = refusal(cell["datatype"], cell["protocol"])
        if reason is not None:
            # Refused in pre-flight: one line naming the datatype, and nothing sent.
            if result["error"] is None or cell["datatype"] not in result["error"] or result["requests"]:
                problems.append(f"{where}: expected a pre-flight refusal ({reason}), got {result}")
            refused += len(DIMS)
            continue
        if result["error"] is not None or result["failures"] or result["requests"] == 0:
            problems.append(f"{where}: {result}")
            continue
        if result["checked"] != sorted(DIMS) or result["mismatches"]:
            problems.append(f"{where}: checked {result['checked']}, mismatched {result['mismatches']}")
            continue
        passed += len(DIMS)
    assert not problems, "\n".join(problems)

    cell_count = len(all_cells) * len(DIMS)
    assert passed + refused == cell_count
    print(f"conformance matrix: {cell_count} cells, {passed} passed, {refused} refused, {elapsed:.1f} s")

    for model in {c["model"] for c in all_cells if refusal(c["datatype"], "grpc") is not None}:
        assert model_stats(triton.http_address, model) == before[model], f"{model}: refused, yet counted"
    sent = sum(r["requests"] for r in results)
    counted = sum(model_stats(triton.http_address, m)["requests"] - before[m]["requests"] for m in before)
    assert counted == sent


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_bf16_model_is_refused_before_any_request(conformance_triton, protocol):
    triton = conformance_triton
    before = model_stats(triton.http_address, "echo_bf16")
    [result] = probe(triton, [{"model": "echo_bf16", "protocol": protocol, "shape": "VARIABLE:2"}])
    assert result["error"] is not None and "BF16" in result["error"] and "FIXED" in result["error"]
    assert result["requests"] == 0
    assert model_stats(triton.http_address, "echo_bf16") == before


@pytest.mark.parametrize("user_class", ["TritonGrpcUser", "TritonHttpUser"])
def test_bytes_model_under_locust_has_no_failures(triton, tmp_path, user_class):
    """Finding 1 as a user meets it: a BYTES model under the generic Locust user, validated."""
    before = model_stats(triton.http_address, "text_reverse")
    run_dir = tmp_path / "run"
    result = run_locust(
        [user_class],
        [*triton_options(triton), "--model", "text_reverse", "--batch-size", "1,4", "--validate-responses"]
        + ["--run-dir", str(run_dir)],
        users=2,
        run_time="2s",
    )
    assert result.returncode == 0, result.stderr[-2000:]
    (endpoint,) = read_summary(run_dir)["endpoints"]
    assert endpoint["failures"] == 0 and endpoint["requests"] > 0
    assert model_stats(triton.http_address, "text_reverse")["requests"] - before["requests"] == endpoint["requests"]
