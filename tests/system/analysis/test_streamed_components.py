"""A decoupled model's latency split as it really is: Triton's compute counts the model's execute
call only, so the time to its later responses is not the network's (the report said "Send/recv +
network is 99 % of the mean latency" for a model that spends 70 ms sending four responses)."""

from __future__ import annotations

import math

from analysis.dataset import load
from analysis.diagnosis import diagnose
from analysis.findings import findings
from analysis.report import write_report
from tests.helpers import run_against_triton


def test_a_streamed_endpoints_time_after_compute_is_named_streaming_not_network(triton, tmp_path):
    run = run_against_triton(triton, tmp_path / "run", ["TritonGrpcUser"], ["--model", "stream_gaps"], run_time="2s")
    [endpoint] = run.summary["endpoints"]
    stream = endpoint["stream"]
    data = load(run.run_dir)
    [row] = data.levels[endpoint["name"]].to_dict("records")
    # The part outside Triton's queue and compute moved, whole, to its own column.
    assert math.isnan(row["client_network_us"]) and math.isnan(row["network_us"])
    server = sum(row[key] for key in ("queue_us", "compute_input_us", "compute_infer_us", "compute_output_us"))
    assert row["streaming_us"] == endpoint["latency_us"]["mean"] - server
    # Most of it is the model's own timetable: from the first response to the final one.
    assert row["streaming_us"] >= stream["final_response_us"]["p50"] - stream["first_response_us"]["p50"]
    lines = findings(data)
    assert not any("send/recv + network is" in line.lower() for line in lines), lines
    [line] = [line for line in lines if "later responses" in line]
    assert "decoupled" in line and "execute" in line
    # The payload rule has no network share to judge, and says so.
    assert not [d for d in diagnose(data) if d.rule == "payload" and not hasattr(d, "reason")]
    html = write_report(run.run_dir).read_text()
    assert "later responses + send/recv + network (ms)" in html
