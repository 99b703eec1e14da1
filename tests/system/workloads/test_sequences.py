"""Sequence users against the real local Triton's `accumulator` (a running sum per correlation ID).

The proof that correlation IDs stay disjoint and state comes back right: every response's sum
equals what its user sent (else the failure "sequence state"), Triton rejects no request
(a request of an unknown or reused sequence would be refused), and the counts agree.
"""

from __future__ import annotations

import json
import random
import shutil

import tritonclient.http as httpclient
from locust.event import EventHook

from analysis.compare import write_comparison
from analysis.report import write_report
from loadtests.clients import Connections, open_client
from loadtests.clients.base import SequenceStep
from loadtests.config.batch_size import BatchSizeSpec
from loadtests.config.settings import Settings
from loadtests.server import TritonPorts
from loadtests.workloads.endpoints import prepare_endpoint
from loadtests.workloads.kinds import SEQUENCE
from loadtests.workloads.sequences import SEQUENCE_STATE, IdLayout, SequenceIds, SequenceSender, sequence_request
from tests.helpers import grpc_target, http_target, locust_request_counts, read_summary, run_cli, triton_options

MODEL = "accumulator"
WORKERS = 3


def triton_counts(http_address: str) -> dict[str, int]:
    """The accumulator's successful and failed requests so far (Triton's statistics)."""
    client = httpclient.InferenceServerClient(http_address)
    try:
        stats = client.get_inference_statistics(MODEL)["model_stats"][0]["inference_stats"]
    finally:
        client.close()
    return {"success": int(stats["success"]["count"]), "fail": int(stats["fail"]["count"])}


def test_sequences_from_a_master_and_three_workers(triton, tmp_path):
    """HTTP and gRPC sequence users on 3 workers at once: no ID collides, every sum is right."""
    run_dir, port = tmp_path / "run", str(TritonPorts.free().http)
    before = triton_counts(triton.http_address)
    # A fixed, short length: every worker's users start their sequences in step, so IDs that
    # were not disjoint across workers would meet in Triton within the first sequences.
    result = run_cli(
        [
            "-m", "locust", "-f", "locustfile.py", "--headless", "--only-summary",
            "-u", "12", "-r", "120", "-t", "5s", "TritonSequenceHttpUser", "TritonSequenceGrpcUser",
            *triton_options(triton), "--model", MODEL, "--sequence-length", "4", "--run-dir", str(run_dir),
            "--processes", str(WORKERS), "--master-bind-port", port, "--master-port", port,
            "--csv", str(tmp_path / "locust"),
        ],
        timeout=180,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    after = triton_counts(triton.http_address)
    summary = read_summary(run_dir)
    endpoints = {e["name"]: e for e in summary["endpoints"]}
    assert set(endpoints) == {f"{MODEL} [http]", f"{MODEL} [grpc]"}
    for endpoint in endpoints.values():
        assert endpoint["failures_by_class"] == {}, endpoint["failures_by_class"]
        assert endpoint["sequences_failed"] == 0
        assert endpoint["sequences_completed"] > 10 * WORKERS, endpoint
        # Every sequence ended: completed, or cut short by the stop (its last request flagged end).
        assert endpoint["sequences_completed"] + endpoint["sequences_ended_early"] == endpoint["sequences_started"]
        assert endpoint["sequences_ended_early"] <= 12
    # Triton refused none of them (a collision or a lost sequence is an error there) and
    # counted exactly what the client did.
    assert after["fail"] - before["fail"] == 0
    assert after["success"] - before["success"] == sum(e["requests"] for e in endpoints.values())
    assert summary["server"][MODEL]["requests"] == after["success"] - before["success"]
    # Locust's own table on the master (the closing END requests of failed sequences included)
    # counts what the suite and Triton counted.
    locust_rows = locust_request_counts(tmp_path / "locust")
    assert locust_rows == {(e["protocol"], MODEL): e["requests"] for e in endpoints.values()}
    check_report_sections(run_dir, endpoints, tmp_path)


def check_report_sections(run_dir, endpoints: dict[str, dict], tmp_path) -> None:
    """The report and the comparison show this run's sequence counts per endpoint; a run without
    sequence users (the same directory with the sequences_* keys taken out) has no such section."""
    plain = tmp_path / "plain"
    shutil.copytree(run_dir, plain)
    summary = json.loads((plain / "summary.json").read_text())
    for entry in summary["endpoints"]:
        for key in [k for k in entry if k.startswith("sequences_")]:
            del entry[key]
    (plain / "summary.json").write_text(json.dumps(summary))
    write_report(run_dir)
    write_report(plain)
    write_comparison([run_dir, plain], ["seq", "plain"], tmp_path / "compare")
    report = (run_dir / "report.md").read_text()
    compared = (tmp_path / "compare" / "compare.md").read_text()
    assert "## Sequences" in report and "## Sequences" in compared
    assert "Sequences" not in (plain / "report.md").read_text()
    for name, e in endpoints.items():
        counts = [e[f"sequences_{key}"] for key in ("started", "completed", "failed", "ended_early")]
        row = " | ".join(str(n) for n in [*counts, e["requests"]])
        assert f"| {name} | {row} |" in report, report
        assert f"| seq: {name} | {row} |" in compared
        assert f"plain: {name}" not in compared.split("## Sequences")[1].split("##")[0]


def _sender(client, endpoint, ids: SequenceIds, seed: int) -> SequenceSender:
    return SequenceSender(client, endpoint, ids, BatchSizeSpec.parse("6"), random.Random(seed), lambda: False)


def test_a_sequence_that_fails_midway_is_ended_and_counted(triton):
    """What the disjoint ID ranges prevent (server#3103): two generators with the same IDs corrupt
    each other's sums, and the check names it instead of counting wrong answers as successes.
    Here another generator restarts this sequence's ID after its 2nd request (on cue, not by
    the luck of two greenlets' timing): the 3rd response's sum is wrong, the sequence counts
    as failed, and one END request closes it on Triton at once."""
    settings = Settings(
        triton_http=http_target(triton.http_address), triton_grpc=grpc_target(triton.grpc_address), model=MODEL
    )
    ids = SequenceIds(IdLayout(), worker=2**31 - 1, slot=7)  # IDs no other test uses
    target = SequenceIds(ids.layout, ids.worker, ids.slot).next()  # the ID of the sender's first sequence
    seen: list[dict] = []
    event, quiet = EventHook(), EventHook()
    connections = Connections()
    client, other = open_client("grpc", settings, event, connections), open_client("http", settings, quiet, connections)
    try:
        endpoint = prepare_endpoint(SEQUENCE, client, MODEL, settings)
        other_endpoint = prepare_endpoint(SEQUENCE, other, MODEL, settings)

        def on_request(exception=None, context=None, **_):
            seen.append(context._asdict())  # the client's RequestOutcome
            if len(seen) == 2:  # the colliding generator's START, between this user's 2nd and 3rd request
                step = SequenceStep(target, start=True, end=False)
                assert other.infer(sequence_request(other, other_endpoint, step, 100, None)) is None

        event.add_listener(on_request)
        failure = _sender(client, endpoint, ids, seed=1).run_one()
        # Closed on Triton: a request without START for this ID is now refused.
        closed = other.infer(sequence_request(other, other_endpoint, SequenceStep(target, False, True), 0, None))
    finally:
        client.close()
        other.close()
    assert failure is not None and failure.name == SEQUENCE_STATE
    assert [r["failure"] for r in seen] == [None, None, SEQUENCE_STATE, None]
    # Started once and failed once; the closing END (4th) counts as a request, not as a sequence.
    assert [r["sequence_started"] for r in seen] == [True, False, False, False]
    assert [r["sequence_outcome"] for r in seen] == [None, None, "failed", None]
    assert closed is not None and closed.name == "invalid request: HTTP 400", closed
