"""The join of client records and Triton's traces, on trace files the bundled tritonserver wrote
(tests/unit/tracing/fixtures: three traces of identity over HTTP and over gRPC, captured here)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loadtests.run_format.attribution import PARTS
from loadtests.tracing.join import FAILED, INCOMPLETE, NO_RECORD, NO_TRACE, breakdown, join
from loadtests.tracing.receiver import OtlpReceiver
from loadtests.tracing.triton_file import RECEIVED, SENT, parse_entries, read_traces, trace_files

FIXTURES = Path(__file__).parent / "fixtures"


def fixture_traces(protocol: str):
    return parse_entries(json.loads((FIXTURES / f"triton_{protocol}.json").read_text()))


def client_record(trace_id: str, latency_us: float, failed: bool = False, end_s: float = 100.5) -> tuple:
    return (trace_id.encode(), "identity [http]", "identity", "http", "127.0.0.1:8000", latency_us, failed, end_s)


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_each_trace_has_its_request_id_and_every_timestamp(protocol):
    traces = fixture_traces(protocol)
    assert len(traces) == 3
    for trace in traces:
        assert len(trace.request_id) == 16 and trace.model == "identity"
        assert trace.first(RECEIVED) is not None and trace.first(SENT) is not None


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_the_parts_add_up_to_the_client_total_and_none_is_negative(protocol):
    trace = fixture_traces(protocol)[0]
    server_us = (trace.first(SENT) - trace.first(RECEIVED)) / 1e3
    client_us = server_us + 250.0
    parts = breakdown(trace, client_us)
    assert sum(parts[f"{part}_us"] for part in PARTS) == pytest.approx(client_us, abs=0.5)
    assert parts["network_client_us"] == pytest.approx(250.0, abs=0.1)
    assert parts["server_us"] == pytest.approx(server_us, abs=0.1)
    assert min(parts[f"{part}_us"] for part in PARTS) >= 0
    stamps = trace.timestamps
    assert parts["queue_us"] == pytest.approx((stamps["COMPUTE_START"] - stamps["QUEUE_START"]) / 1e3, abs=0.1)


def test_every_trace_of_the_run_is_joined_or_counted_with_why():
    http = fixture_traces("http")
    ids = [trace.request_id for trace in http]
    incomplete = http[2]
    del incomplete.timestamps["COMPUTE_START"]
    records = [client_record(ids[0], 5000.0), client_record(ids[2], 5000.0)]
    # Same process (prefix), no record; and a failed request of the run.
    lost = type(http[0])(ids[0][:6] + "ffffffffff", "identity", dict(http[0].timestamps))
    failed = type(http[0])(ids[0][:6] + "eeeeeeeeee", "identity", dict(http[0].timestamps))
    records.append(client_record(failed.request_id, 900.0, failed=True))
    other = type(http[0])("someone-else", "identity", dict(http[0].timestamps))
    rows, counts = join(records, [*http, lost, failed, other], started_at=100.0, steps=[])
    assert [row["trace_id"] for row in rows] == [ids[0]]
    assert counts == {"unjoined": {NO_RECORD: 2, INCOMPLETE: 1, FAILED: 1}, "other_clients": 1}
    assert rows[0]["end_s"] == 0.5 and rows[0]["client_us"] == 5000.0
    assert len(rows) + sum(counts["unjoined"].values()) == len(http) + 2


def test_steps_are_found_by_the_requests_end(tmp_path):
    trace = fixture_traces("http")[0]
    steps = [{"index": 0, "start_s": 0.0, "end_s": 2.0}, {"index": 1, "start_s": 2.0, "end_s": 4.0}]
    rows, _ = join([client_record(trace.request_id, 3000.0, end_s=103.0)], [trace], started_at=100.0, steps=steps)
    assert rows[0]["step"] == 1


def test_files_before_the_run_are_not_read(tmp_path):
    base = tmp_path / "trace.json"
    old = tmp_path / "trace.json.0"
    old.write_text((FIXTURES / "triton_http.json").read_text())
    before = trace_files(base)  # the run starts: a file of the previous run, flushed just now
    new = tmp_path / "trace.json.1"
    new.write_text((FIXTURES / "triton_grpc.json").read_text())
    traces, problems = read_traces(base, before)
    assert {t.request_id for t in traces} == {t.request_id for t in fixture_traces("grpc")}
    assert problems == []
    (tmp_path / "trace.json.2").write_text("[{")
    _, problems = read_traces(base, before)
    assert len(problems) == 1 and "trace.json.2" in problems[0]


def test_the_receiver_groups_tritons_three_spans_into_one_complete_trace():
    """tests/unit/tracing/fixtures/otlp_http.json: the three OTLP/HTTP JSON exports the bundled
    tritonserver sent for one HTTP request with a traceparent (compute, the model, InferRequest)."""
    receiver = OtlpReceiver("127.0.0.1", 0)  # not started: fed the exports directly
    for document in json.loads((FIXTURES / "otlp_http.json").read_text()):
        receiver.add(document)
    (trace,) = receiver.traces()
    assert trace.request_id == "0af7651916cd43dd8448eb211c80319c"[-16:] and trace.model == "identity"
    parts = breakdown(trace, client_us=(trace.first(SENT) - trace.first(RECEIVED)) / 1e3 + 100.0)
    assert parts is not None and parts["network_client_us"] == pytest.approx(100.0, abs=0.1)


def test_when_the_client_sampled_a_request_without_a_trace_is_counted():
    trace = fixture_traces("http")[0]
    records = [client_record(trace.request_id, 5000.0), client_record(trace.request_id[:6] + "0000000abc", 700.0)]
    records.append(client_record(trace.request_id[:6] + "0000000abd", 700.0, failed=True))
    rows, counts = join(records, [trace], started_at=100.0, steps=[], client_sampled=True)
    assert len(rows) == 1
    assert counts["unjoined"] == {NO_TRACE: 1, FAILED: 1}
    assert len(rows) + sum(counts["unjoined"].values()) == len(records)
