"""The join: the client's traced requests and Triton's traces, after the run, where both are.

On the master (or single process), at the end of the run: the workers' client records came
with their reports, Triton's file is read here. Every trace of this run's requests (its id
starts with one of the run's processes' prefixes) is joined or counted as unjoined with why:

- `failed on the client`: the client counted the request as failed (timeout, cut at the stop, ...);
- `no client record`: no process of the run reported the id (a worker's report was lost);
- `incomplete trace`: Triton's trace lacks a timestamp the breakdown needs;
- `no trace from Triton` (OpenTelemetry only): the client sampled it, its spans never arrived.

From Triton's file, which requests are traced is Triton's choice (one in `trace_rate`);
`expected_traces` (client requests / rate) says how many to expect. In OpenTelemetry mode the
client samples (a traceparent on one request in N) and every sampled request is accounted for.
Traces of other clients are counted apart.

    block = join_run(switch, records, run_dir, started_at, steps)   # summary.json's "traces"
"""

from __future__ import annotations

import csv
import itertools
import time
from collections import Counter
from pathlib import Path

from loadtests.clients.trace_ids import ID_WIDTH, PREFIX_WIDTH
from loadtests.run_format.attribution import PARTS, attribute
from loadtests.run_format.files import TRACES_CSV
from loadtests.tracing.client_log import FIELDS
from loadtests.tracing.switch import TraceSwitch
from loadtests.tracing.triton_file import RECEIVED, SENT, ServerTrace, new_files, read_traces

NEEDED = ("QUEUE_START", "COMPUTE_START", "COMPUTE_INPUT_END", "COMPUTE_OUTPUT_START", "COMPUTE_END")
FAILED, NO_RECORD, INCOMPLETE = "failed on the client", "no client record", "incomplete trace"
NO_TRACE = "no trace from Triton"  # OpenTelemetry: the client sampled it, Triton's spans never came
# OpenTelemetry: Triton's span processor exports every bsp_schedule_delay (5 s by default).
OTLP_WAIT_S = 8.0
# After the settings are restored, Triton writes what it held: wait until no new file comes.
FLUSH_POLL_S = 0.2
FLUSH_WAIT_S = 3.0
COLUMNS = ("trace_id", "endpoint", "model", "protocol", "replica", "step", "end_s", "client_us", "server_us") + tuple(
    f"{part}_us" for part in PARTS
)


def breakdown(trace: ServerTrace, client_us: float) -> dict[str, float] | None:
    """The client total split into PARTS (µs, adding up to it), or None if a timestamp is missing."""
    stamps = trace.timestamps
    received, sent = trace.first(RECEIVED), trace.first(SENT)
    if received is None or sent is None or any(name not in stamps for name in NEEDED):
        return None
    # Triton's steps can overlap (gRPC's response may be sent before COMPUTE_END): each edge is
    # kept between the one before it and the send, so no part is negative and they still add up.
    edges = [received]
    for name in NEEDED:
        edges.append(min(max(stamps[name], edges[-1]), sent))
    edges.append(sent)
    parts = dict(zip(PARTS[:-1], ((b - a) / 1e3 for a, b in itertools.pairwise(edges)), strict=True))
    server_us = (sent - received) / 1e3
    parts["network_client"] = client_us - server_us
    return {**{f"{part}_us": round(value, 1) for part, value in parts.items()}, "server_us": round(server_us, 1)}


def _text(value) -> str:
    return value.decode("ascii") if isinstance(value, bytes) else str(value)


def _step_of(end_s: float, steps: list[dict]) -> int | None:
    for step in steps:
        if step["start_s"] <= end_s <= step["end_s"]:
            return step["index"]
    return None


def join(
    records: list, traces: list[ServerTrace], started_at: float, steps: list[dict], client_sampled: bool = False
) -> tuple[list[dict], dict]:
    """The joined rows and the counts (unjoined by reason, other clients' traces); with
    `client_sampled`, a record without a trace is unjoined too."""
    clients = {_text(r[0]): dict(zip(FIELDS, r, strict=True)) for r in records}
    prefixes = {trace_id[:PREFIX_WIDTH] for trace_id in clients}
    rows, unjoined, others = [], Counter(), 0
    for trace in traces:
        trace_id = trace.request_id
        if len(trace_id) != ID_WIDTH or trace_id[:PREFIX_WIDTH] not in prefixes:
            others += 1
            continue
        client = clients.get(trace_id)
        if client is None or client["failed"]:
            unjoined[NO_RECORD if client is None else FAILED] += 1
            continue
        parts = breakdown(trace, client["latency_us"])
        if parts is None:
            unjoined[INCOMPLETE] += 1
            continue
        end_s = round(client["end_s"] - started_at, 3)
        row = {key: client[key] for key in ("endpoint", "model", "protocol", "replica")}
        row.update(trace_id=trace_id, step=_step_of(end_s, steps), end_s=end_s)
        row["client_us"] = round(client["latency_us"], 1)
        rows.append({**row, **parts})
    if client_sampled:
        traced = {trace.request_id for trace in traces}
        for trace_id, client in clients.items():
            if trace_id not in traced:
                unjoined[FAILED if client["failed"] else NO_TRACE] += 1
    return rows, {"unjoined": dict(unjoined), "other_clients": others}


def write_csv(path: Path, rows: list[dict]) -> None:
    with open(path, "w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=COLUMNS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(sorted(rows, key=lambda row: row["end_s"]))


def wait_for_flush(switch: TraceSwitch) -> None:
    """Until no new trace file has appeared for one poll (at most FLUSH_WAIT_S)."""
    deadline = time.monotonic() + FLUSH_WAIT_S
    seen = -1
    while time.monotonic() < deadline:
        count = len(new_files(switch.trace_file, switch.files_before))
        if count == seen:
            return
        seen = count
        time.sleep(FLUSH_POLL_S)


def wait_for_spans(switch: TraceSwitch, records: list) -> None:
    """OpenTelemetry: until every sampled request that succeeded has a complete trace (at most OTLP_WAIT_S)."""
    expected = {_text(record[0]) for record in records if not record[6]}
    deadline = time.monotonic() + OTLP_WAIT_S
    while time.monotonic() < deadline:
        complete = {trace.request_id for trace in switch.receiver.traces() if breakdown(trace, 0.0) is not None}
        if expected <= complete:
            return
        time.sleep(FLUSH_POLL_S)


def attribution_by(rows: list[dict], key: str) -> dict:
    groups: dict = {}
    for row in rows:
        groups.setdefault(row[key], []).append(row)
    return {str(name): attribute(group) for name, group in groups.items() if name is not None}


def closing_note(block: dict) -> str:
    """The run's closing line about its traces: how many joined, the join rate, why the rest did not."""
    unjoined = "; ".join(f"{n} {reason}" for reason, n in sorted(block["unjoined"].items())) or "none"
    rate = f"{100 * block['join_rate']:.1f} %" if block["join_rate"] is not None else "n/a"
    line = (
        f"Traces (--trace-sample {block['sample']}): {block['joined']} of {block['traces']} traces joined "
        f"(join rate {rate}; about {block['expected_traces']} expected); unjoined: {unjoined}"
    )
    return "\n".join([line, *(f"warning: {problem}" for problem in block["problems"])])


def join_run(switch: TraceSwitch, records: list, run_dir: Path, started_at: float, steps: list[dict]) -> dict:
    """Restore Triton's settings, read its traces, join, write traces.csv; summary.json's "traces"."""
    problems = switch.restore()
    otlp = switch.receiver is not None
    if otlp:
        wait_for_spans(switch, records)
        traces, unreadable = switch.receiver.traces(), list(switch.receiver.rejected)
    else:
        wait_for_flush(switch)
        traces, unreadable = read_traces(switch.trace_file, switch.files_before)
    rows, counts = join(records, traces, started_at, steps, client_sampled=otlp)
    write_csv(run_dir / TRACES_CSV, rows)
    ours = len(rows) + sum(n for reason, n in counts["unjoined"].items() if reason != NO_TRACE)
    denominator = len(records) if otlp else ours  # every sampled request, or every trace of the run
    block = {
        "sample": switch.sample.text,
        "triton_rate": switch.sample.triton_rate,
        "sampled_by": "client" if otlp else "triton",
        "trace_file": switch.where,
        "client_requests": len(records),
        "expected_traces": len(records) if otlp else round(len(records) / switch.sample.triton_rate),
        "traces": ours,
        "joined": len(rows),
        **counts,
        "join_rate": round(len(rows) / denominator, 4) if denominator else None,
        "problems": problems + unreadable,
        "endpoints": attribution_by(rows, "endpoint"),
    }
    if steps:
        by_endpoint = {name: [row for row in rows if row["endpoint"] == name] for name in block["endpoints"]}
        block["steps"] = {name: attribution_by(group, "step") for name, group in by_endpoint.items()}
    return block
