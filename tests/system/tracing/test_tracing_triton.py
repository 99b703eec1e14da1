"""--trace-sample against Tritons of this file's own (started with a trace file, tracing OFF): Triton's
traces joined to the client's timing, the tail's cause named, Triton's settings restored.

The tests here need a real Triton or a browser; the others, and this feature's account, are in
tests/unit/tracing/test_tracing_triton.py.
"""

from __future__ import annotations

import csv
import itertools
import os
import re
import signal
import subprocess
import sys

import pytest

from analysis.dataset import load
from analysis.diagnosis import diagnose
from analysis.report import build
from loadtests.run_format.hdr import new_histogram, summarise_us
from loadtests.server.launcher import LocalTriton, TritonPorts
from tests.helpers import (
    REPO_ROOT,
    THROWAWAY_STOP_S,
    interrupt_locust,
    model_stats,
    read_summary,
    repository_of,
    run_against_triton,
    run_master_and_workers,
    triton_options,
    wait_until_running,
)
from tests.unit.tracing.test_tracing_triton import CORRUPTED, tracing_fault_failures

# One instance, dynamic batching: a batch of 4 runs at once, a smaller one waits 50 ms in the queue.
SLOW = "batch4_queue_50ms"
# The bundled tritonserver crashes under tracing about once per 10,000-30,000 traced requests
# (docs/guides/tracing.md): these tests trace a Triton of their own, never the session's, and
# trace no more requests than they need.
USERS = 1
SAMPLE = "20%"
# 6 % of the requests wait the whole 50-ms delay: above p95 and above p99 are all such requests.
QUEUED_TAIL = "4:0.94,1:0.06"
# How that crash ends Triton: its signal handler's line for SIGSEGV, or for SIGABRT (after glibc's
# "free(): invalid pointer" or C++'s "terminate called ... std::length_error"). Seen here, all three
# in Triton's request handling; a test that fails for any other reason is not run again.
# A traced request's parts inside Triton, as traces.csv names them (with `_us`).
SERVER_PARTS = ("receive", "queue", "compute_input", "infer", "output", "send")
CRASHED = re.compile(r"^Signal \((?:11|6)\) received\.", re.M)
DEATH_WAIT_S = 10


def traced_run(server, run_dir, user_classes: list[str], options: list[str], **named):
    """run_against_triton, with the tracing fault's refused requests (if any) named and kept out:
    exit 0, or 1 when every failure is that fault. Returns the run and how many it excused."""
    run = run_against_triton(server, run_dir, user_classes, options, expect_exit=None, **named)
    output = run.result.stdout + run.result.stderr
    excused = tracing_fault_failures(run.summary, output)
    assert run.result.returncode == (1 if excused else 0), output[-3000:]
    if excused:
        print(f"{run_dir}: {excused} request(s) refused by Triton's fault under tracing ({CORRUPTED.pattern})")
    return run, excused


def crash_of(server: LocalTriton) -> str | None:
    """The crash's line in the Triton's log if it died of it, else None."""
    found = CRASHED.search(server.log_text())
    if found is None or server.process is None:
        return None
    try:
        server.process.wait(timeout=DEATH_WAIT_S)
    except subprocess.TimeoutExpired:
        return None  # the line, but Triton still runs: not that crash
    return found.group(0)


@pytest.fixture(scope="module")
def shared_traced_triton():
    """The traced Triton this file's tests take turns on, by (models, flags): one at a time, kept
    while the next test asks for the same (a start and a stop, 3 s or more, each one saves)."""
    current: dict[tuple, LocalTriton] = {}
    yield current
    for server in current.values():
        server.stop()


@pytest.fixture
def traced_triton(tmp_path, tmp_path_factory, shared_traced_triton):
    """traced_triton(body, models, extra_args, shared): body(server, directory) on a Triton of
    `models` (none: an empty repository) with tracing flags, its log beside it: the one an earlier
    test of the file left with the same models and flags (shared, the default: a run's traces are
    the trace files it adds), else a new one (about 2 s to start). When the test fails and that
    Triton died of the bundled tritonserver's crash under tracing (CRASHED in its log), the body
    runs once more on a fresh Triton; any other failure, or a second crash, fails the test (the
    fault short of a crash is excused by `traced_run`, not rerun). A Triton a test failed on is
    stopped, never shared on."""

    runs = itertools.count(1)

    def server_for(key: tuple, shared: bool) -> LocalTriton:
        kept = shared_traced_triton.get(key)
        if shared and kept is not None and kept.process is not None and kept.process.poll() is None:
            return kept
        for server in shared_traced_triton.values():
            server.stop()  # one traced Triton at a time
        shared_traced_triton.clear()
        models, extra_args = key
        directory = tmp_path_factory.mktemp("traced-triton")
        repository = repository_of(directory / "models", *models)
        repository.mkdir(parents=True, exist_ok=True)
        server = LocalTriton(
            [repository], log_file=directory / "triton.log", extra_args=extra_args, stop_timeout_s=THROWAWAY_STOP_S
        )
        server.start()
        if shared:
            shared_traced_triton[key] = server
        return server

    def run(body, models=("identity",), extra_args=(), shared=True):
        number = next(runs)
        key = (tuple(models), tuple(extra_args))
        for attempt in (1, 2):
            server = server_for(key, shared)
            try:
                return body(server, tmp_path / f"run{number}-attempt{attempt}")
            except Exception:
                crash = crash_of(server)
                shared_traced_triton.pop(key, None)
                server.stop()
                if crash is None or attempt == 2:
                    raise
                print(f"Triton failed under tracing ({crash}; {server.log_file}): once more on a fresh one")
            finally:
                if not shared:
                    server.stop()
        return None

    return run


def traced_rows(run_dir) -> list[dict]:
    with open(run_dir / "traces.csv", newline="") as file:
        return list(csv.DictReader(file))


def check_reconciled(run, model: str, rate: int = 5, excused: int = 0) -> dict:
    """Every trace of the run joined or counted with why; the rows are the joined requests; Triton
    traced one in `rate` of the requests it counted (and of the `excused` ones it refused, which
    it may have traced too); the bands agree with HDR's percentiles."""
    summary = run.summary
    traces = summary["traces"]
    (endpoint,) = summary["endpoints"]
    assert traces["joined"] + sum(traces["unjoined"].values()) == traces["traces"]
    assert traces["client_requests"] == endpoint["requests"]
    assert traces["other_clients"] == 0 and traces["problems"] == []
    assert traces["triton_rate"] == rate
    assert abs(traces["traces"] - run.served(model) / rate) <= 1 + excused
    rows = traced_rows(run.run_dir)
    assert len(rows) == traces["joined"] > 0
    histogram = new_histogram()
    for row in rows:
        histogram.record_value(round(float(row["client_us"])))
    hdr = summarise_us(histogram)
    block = traces["endpoints"][endpoint["name"]]
    for key in ("p50", "p95", "p99"):
        exact = block[f"{key}_us"]
        assert histogram.get_lowest_equivalent_value(int(hdr[key])) <= round(exact) <= hdr[key]
    return block


@pytest.mark.parametrize("user", ["TritonHttpUser", "TritonGrpcUser"])
def test_the_tail_is_put_down_to_its_known_cause_and_the_control_is_not(traced_triton, user):
    def body(server, directory):
        before = server.control().trace_setting(SLOW)
        options = ["--model", SLOW, "--trace-sample", SAMPLE, "--batch-size"]
        slow, excused = traced_run(
            server, directory / "slow", [user], [*options, QUEUED_TAIL], models=(SLOW,), users=USERS
        )
        control, control_excused = traced_run(
            server, directory / "control", [user], [*options, "4"], models=(SLOW,), users=USERS
        )
        block = check_reconciled(slow, SLOW, excused=excused)
        assert block["cause"] == "queue", block
        assert "of their time in queue" in block["sentence"]
        assert block["bands"][block["band"]]["share"]["queue"] > 0.5 > block["bands"]["median"]["share"]["queue"]
        control_block = check_reconciled(control, SLOW, excused=control_excused)
        assert control_block["cause"] != "queue", control_block
        # The report's section and the diagnosis read the attribution.
        (tail,) = [item for item in diagnose(load(slow.run_dir)) if item.rule == "tail"]
        assert tail.model == SLOW and tail.evidence.startswith(block["sentence"])
        assert not [i for i in diagnose(load(control.run_dir)) if i.rule == "tail" and "queue" in i.evidence]
        text = build(load(slow.run_dir)).markdown()
        assert "## What made the slow requests slow" in text and block["sentence"][1:] in text
        assert server.control().trace_setting(SLOW) == before  # restored: tracing OFF again

    traced_triton(body, models=(SLOW,))


def test_one_in_n_is_traced_and_the_rest_is_not_counted_as_lost(traced_triton):
    def body(server, directory):
        options = ["--model", "identity", "--trace-sample", "10%"]
        run, excused = traced_run(
            server, directory / "run", ["TritonHttpUser"], options, models=("identity",), users=USERS
        )
        traces = run.summary["traces"]
        check_reconciled(run, "identity", rate=10, excused=excused)
        rate = f"{100 * traces['join_rate']:.1f} %"
        note = f"Traces (--trace-sample 10%): {traces['joined']} of {traces['traces']} traces joined (join rate {rate};"
        assert note in run.result.stdout

    traced_triton(body)


@pytest.mark.parametrize(
    ("options", "error"),
    [
        (["--trace-sample", "5"], "error: --trace-sample '5' is not a percentage such as 1% or 100%"),
        (
            ["--trace-sample", "1%", "--trace-file", "/nonexistent/traces/trace.json"],
            "error: --trace-sample: Triton's trace file /nonexistent/traces/trace.json cannot be read on this "
            "machine (no directory /nonexistent/traces); give --trace-file with the path where it is readable here",
        ),
    ],
)
def test_refused_before_any_load_with_triton_untouched(traced_triton, options, error):
    def body(server, directory):
        before = server.control().trace_setting("identity")
        run = run_against_triton(
            server,
            directory / "run",
            ["TritonHttpUser"],
            ["--model", "identity", *options],
            models=("identity",),
            expect_exit=2,
        )
        assert [line for line in run.result.stderr.splitlines() if line.startswith("error:")] == [error]
        assert run.after == run.before and run.summary is None
        assert server.control().trace_setting("identity") == before

    traced_triton(body)


def test_ctrl_c_restores_tritons_trace_settings_and_joins_what_ran(traced_triton):
    def body(server, directory):
        run_dir = directory / "run"
        before = server.control().trace_setting("identity")
        command = [sys.executable, "-m", "locust", "-f", "locustfile.py", "--headless", "-u", str(USERS), "-t", "60s"]
        command += ["TritonGrpcUser", *triton_options(server), "--model", "identity", "--run-dir", str(run_dir)]
        command += ["--trace-sample", SAMPLE]

        def tracing_is_on() -> None:
            assert server.control().trace_setting("identity")["trace_level"] == ["TIMESTAMPS"]  # on for the run

        interrupt_locust(command, run_dir, while_running=tracing_is_on)
        assert server.control().trace_setting("identity") == before
        traces = read_summary(run_dir)["traces"]
        assert traces["joined"] > 0
        # A request cut by Ctrl-C is reported as failed: its trace, if any, is counted as such.
        assert set(traces["unjoined"]) <= {"failed on the client"}
        assert traces["joined"] + sum(traces["unjoined"].values()) == traces["traces"]

    traced_triton(body)


def test_with_two_workers_the_master_joins_both_workers_requests(traced_triton):
    """Workers ship their traced requests with their reports; the master joins them with the file."""

    def body(server, directory):
        port = TritonPorts.free().http
        run_dir = directory / "run"
        before = model_stats(server.http_address, "identity")
        options = ["--expect-workers", "2", "-u", "2", "-r", "2", "-t", "4s", "TritonHttpUser"]
        options += [*triton_options(server), "--model", "identity", "--run-dir", str(run_dir), "--trace-sample", "20%"]
        # Paced, not flat out: 80 traced requests rather than 460 (two flat-out workers once crashed
        # Triton and hung two requests in the retry, in one CI run; the fault grows with the traces).
        options += ["--traffic", "constant", "--rate", "100"]
        master = run_master_and_workers(options, ["TritonHttpUser"], port)
        assert master.returncode == 0, master.stdout[-3000:]
        served = model_stats(server.http_address, "identity")["requests"] - before["requests"]
        summary = read_summary(run_dir)
        traces = summary["traces"]
        assert summary["load_generator"]["workers"] == 2
        assert traces["client_requests"] == summary["endpoints"][0]["requests"] == served
        assert traces["joined"] + sum(traces["unjoined"].values()) == traces["traces"]
        assert traces["unjoined"] == {} and traces["other_clients"] == 0
        assert abs(traces["traces"] - served / 5) <= 1
        prefixes = {row["trace_id"][:6] for row in traced_rows(run_dir)}
        assert len(prefixes) == 2  # both workers' requests joined

    traced_triton(body)


def test_a_stepped_run_is_attributed_per_step(traced_triton):
    def body(server, directory):
        options = ["--model", "identity", "--trace-sample", SAMPLE, "--load-shape", "steps"]
        options += ["--shape-args", "targets=1;1,step_s=2"]
        run, _ = traced_run(server, directory / "run", ["TritonHttpUser"], options, run_time=None)
        traces = run.summary["traces"]
        (name,) = traces["endpoints"]
        by_step = traces["steps"][name]
        assert set(by_step) == {"0", "1"}
        rows = traced_rows(run.run_dir)
        assert {step: block["requests"] for step, block in by_step.items()} == {
            step: sum(row["step"] == step for row in rows) for step in ("0", "1")
        }
        assert sum(block["requests"] for block in by_step.values()) <= traces["joined"]

    traced_triton(body)


def test_opentelemetry_traces_reach_the_suites_receiver_and_every_sampled_request_is_joined(traced_triton):
    """Triton in opentelemetry mode exporting to the suite's OTLP/HTTP receiver: the client samples
    (a traceparent on one request in N), so every sampled request is joined or counted, and each
    joined request's parts come from Triton's spans: every request is sent alone, so each waits
    the model's whole 50-ms batching delay in Triton's queue.

    HTTP only: in this mode the bundled tritonserver crashed under the suite's gRPC requests in 2
    of 11 runs of this test (after about 35 traced requests; bench/performance-log.md has the
    measurements); the gRPC traceparent's bytes are checked in tests/clients/test_trace_ids.py."""
    receiver = f"127.0.0.1:{TritonPorts.free().http}"
    otel = ["--trace-config=mode=opentelemetry", f"--trace-config=opentelemetry,url={receiver}/v1/traces"]
    otel.append("--trace-config=opentelemetry,bsp_schedule_delay=500")

    def body(server, directory):
        before = server.control().trace_setting(SLOW)
        # What a request sent alone waits in Triton's queue: the model's whole batching delay.
        delay_us = int(server.control().model_config(SLOW)["dynamic_batching"]["max_queue_delay_microseconds"])
        options = ["--model", SLOW, "--batch-size", "1", "--trace-sample", SAMPLE]
        options += ["--trace-receiver", receiver]
        run, _ = traced_run(server, directory / "run", ["TritonHttpUser"], options, models=(SLOW,), users=USERS)
        assert server.control().trace_setting(SLOW) == before
        traces = run.summary["traces"]
        (endpoint,) = run.summary["endpoints"]
        assert traces["sampled_by"] == "client"
        assert abs(traces["client_requests"] - endpoint["requests"] / 5) <= 1
        assert traces["joined"] + sum(traces["unjoined"].values()) == traces["client_requests"]
        assert traces["joined"] >= traces["client_requests"] - 1  # a request cut at the stop, at most
        rows = traced_rows(run.run_dir)
        assert len(rows) == traces["joined"] > 0
        for row in rows:
            # Not which part dominated the tail (fresh62: a host stall put 187 ms into one request's
            # infer part, and the tail had no single cause): the parts themselves, read from the
            # spans. Triton's own parts add up to its time, and with the network to the client's.
            parts = [float(row[f"{part}_us"]) for part in SERVER_PARTS]
            assert sum(parts) == pytest.approx(float(row["server_us"]), abs=0.5), row
            server_and_network = float(row["server_us"]) + float(row["network_client_us"])
            assert server_and_network == pytest.approx(float(row["client_us"]), abs=0.5), row
            assert float(row["queue_us"]) >= delay_us, row  # a slow host only adds to it

    traced_triton(body, models=(SLOW,), extra_args=otel)


def test_a_triton_that_dies_during_a_traced_run_is_named_in_the_closing_note(tmp_path):
    """Triton killed in the middle of a traced run, as the bundled tritonserver's crash under tracing
    does: the run says that Triton stopped, not only that its trace settings were not restored."""
    run_dir = tmp_path / "run"
    with LocalTriton(
        [repository_of(tmp_path / "models", "identity")],
        log_file=tmp_path / "triton.log",
        stop_timeout_s=THROWAWAY_STOP_S,
    ) as server:
        command = [sys.executable, "-m", "locust", "-f", "locustfile.py", "--headless", "-u", "1", "-t", "5s"]
        command += ["TritonHttpUser", *triton_options(server), "--model", "identity", "--run-dir", str(run_dir)]
        command += ["--trace-sample", SAMPLE]
        with subprocess.Popen(
            command, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        ) as process:
            wait_until_running(run_dir, after_s=1)
            os.killpg(server.process.pid, signal.SIGKILL)  # no goodbye, like a crash
            output, _ = process.communicate(timeout=120)
    traces = read_summary(run_dir)["traces"]
    (problem,) = traces["problems"]
    assert problem.startswith("Triton could not be reached when the traced run ended"), problem
    assert f"warning: {problem}" in output


def test_only_a_crash_under_tracing_gets_a_second_run(traced_triton):
    """The fixture's rerun: once after that crash's line in Triton's log (Triton's own handler
    writes it on a SIGSEGV), never after another failure, and a second crash fails the test."""
    calls = []

    def crash(server) -> None:
        os.kill(server.process.pid, signal.SIGSEGV)
        server.process.wait(timeout=DEATH_WAIT_S)
        raise AssertionError("connection refused")  # what a run against it fails with

    def crashes_once(server, directory):
        calls.append(directory)
        if len(calls) == 1:
            crash(server)
        return server.control().server_ready()

    assert traced_triton(crashes_once, models=(), shared=False) is True and len(calls) == 2
    calls.clear()

    def crashes_twice(server, directory):
        calls.append(directory)
        crash(server)

    with pytest.raises(AssertionError, match="connection refused"):
        traced_triton(crashes_twice, models=(), shared=False)
    assert len(calls) == 2
    calls.clear()

    def fails(server, directory):
        calls.append(directory)
        os.killpg(server.process.pid, signal.SIGKILL)  # dead, but not of that crash
        raise AssertionError("a bug")

    with pytest.raises(AssertionError, match="a bug"):
        traced_triton(fails, models=(), shared=False)
    assert len(calls) == 1
    calls.clear()

    # The same fault short of a crash is not run again: `traced_run` excuses it (below).
    refusal = "first 'invalid request: HTTP 400' failure: [request id: 5dee55] unknown request input name INPUT0"

    def refused(server, directory):
        calls.append(directory)
        raise AssertionError(refusal)

    with pytest.raises(AssertionError, match="unknown request input name INPUT0"):
        traced_triton(refused, models=(), shared=False)
    assert len(calls) == 1
    calls.clear()

    # Shared, as the other tests run: the Triton that crashed is not handed on, the fresh one is.
    servers = []

    def crashes_on_the_first(server, directory):
        servers.append(server)
        if len(servers) == 1:
            crash(server)
        return server

    fresh = traced_triton(crashes_on_the_first, models=())
    assert len(servers) == 2 and fresh is servers[1] is not servers[0] and servers[0].process is None
    assert traced_triton(lambda server, directory: server, models=()) is fresh
