"""Fault drills: Triton killed, restarted and frozen mid-run, a worker killed, the master interrupted.

Each drill runs the suite as a user would (a `locust` process against a Triton started here on
free ports so it can be killed and frozen, handed on from drill to drill: DrillTritons), and asserts what a load test
must keep when things break: the run ends within 5 s of its `-t`, the run directory is
complete, the counts reconcile with Triton's, and the outage is on the record
(`summary.json`'s "faults", zero-throughput windows in `timeseries.csv`, the report).

Run them apart with `pytest -m drill`.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import pytest

from loadtests.server import TEST_REPOSITORY, LocalTriton, TritonPorts
from loadtests.server.launcher import _signal_group
from tests.helpers import REPO_ROOT, THROWAWAY_STOP_S, interruptible, model_stats, run_cli

pytestmark = pytest.mark.drill

# The promise under test: a run ends within this long after its -t, whatever the server does.
END_WITHIN_S = 5.0
# A worker's report in flight when it is killed (the master stamps it on arrival).
REPORT_TRANSIT_S = 0.25
USERS = 2


@pytest.fixture(scope="module")
def drill_repository(tmp_path_factory) -> Path:
    """Just the identity model: a Triton that starts (and restarts) in a few seconds."""
    repository = tmp_path_factory.mktemp("drill_repository")
    shutil.copytree(TEST_REPOSITORY / "identity", repository / "identity")
    return repository


class DrillTritons:
    """The drills' Triton, handed on from drill to drill: the one alive (started if the last drill
    left none), or the successor a drill brought up on the same ports after killing or stopping its
    predecessor (`restart`, as a pod restart would).

    Each drill compares Triton's counts before and after itself, or reads its own run's, so a
    server that served an earlier drill changes nothing a drill checks; the module saves a start
    and a graceful stop (which waits for the model to unload) per drill. Servers that are done with
    are killed and cleaned up at the module's end, when their stubs have long been reaped and
    LocalTriton.stop has nothing left to wait for."""

    def __init__(self, repository: Path, log_dir: Path) -> None:
        self.repository = repository
        self.log_dir = log_dir
        self.server: LocalTriton | None = None
        self.done: list[LocalTriton] = []

    def live(self) -> LocalTriton:
        """The current Triton, thawed and ready; a new one if it is gone."""
        if self.server is not None:
            _signal_group_safely(self.server, signal.SIGCONT)
            if self.server.process is not None and self.server.process.poll() is None and self.server.is_ready():
                return self.server
            self.discard(self.server)
        self.server = LocalTriton(
            [self.repository], log_file=self.log_dir / f"triton-{len(self.done)}.log", stop_timeout_s=THROWAWAY_STOP_S
        )
        self.server.start()
        return self.server

    def restart(self) -> LocalTriton:
        """The current Triton's successor (it is dead or stopped by now), which becomes current."""
        previous = self.server
        self.server = restart(previous)
        self.discard(previous)
        return self.server

    def discard(self, server: LocalTriton) -> None:
        """Done with `server`: killed now (nothing a drill checks depends on how it goes), cleaned up at the end."""
        _signal_group_safely(server, signal.SIGCONT)
        _signal_group_safely(server, signal.SIGKILL)
        self.done.append(server)
        if server is self.server:
            self.server = None

    def close(self) -> None:
        if self.server is not None:
            self.discard(self.server)
        for server in self.done:
            server.stop()


@pytest.fixture(scope="module")
def drill_tritons(drill_repository, tmp_path_factory):
    tritons = DrillTritons(drill_repository, tmp_path_factory.mktemp("drill_tritons"))
    yield tritons
    tritons.close()


@pytest.fixture
def drill_triton(drill_tritons):
    """The drills' Triton (DrillTritons): the drill may kill, stop or freeze it."""
    yield drill_tritons.live()
    if drill_tritons.server is not None:
        _signal_group_safely(drill_tritons.server, signal.SIGCONT)


def _signal_group_safely(server: LocalTriton, sig: signal.Signals) -> None:
    if server.process is not None and server.process.poll() is None:
        _signal_group(server.process.pid, sig)


def freeze(server: LocalTriton) -> None:
    """Freeze the tritonserver process (its HTTP/gRPC front ends hang), not its Python-backend
    stubs: stubs stopped in the middle of a shared-memory lock made Triton abort after the thaw
    (boost::interprocess::lock_exception, seen here), which is Triton's failure, not the drill's."""
    os.kill(server.process.pid, signal.SIGSTOP)


def thaw(server: LocalTriton) -> None:
    if server.process is not None and server.process.poll() is None:
        os.kill(server.process.pid, signal.SIGCONT)


def restart(server: LocalTriton) -> LocalTriton:
    """A new Triton on the same ports and repository (as a pod restart or a systemd restart would)."""
    fresh = LocalTriton(
        server.model_repositories,
        ports=server.ports,
        log_file=server.log_file.with_suffix(".2.log"),
        stop_timeout_s=THROWAWAY_STOP_S,
    )
    deadline = time.monotonic() + 30
    while True:
        try:
            fresh.start()
            return fresh
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)  # the old listening sockets may take a moment to go


def locust_command(server: LocalTriton, run_dir: Path, run_time_s: int, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "locust",
        "-f",
        "locustfile.py",
        "--headless",
        "-u",
        str(USERS),
        "-r",
        "20",
        "-t",
        f"{run_time_s}s",
        *server.options,
        "--server-stats-interval",
        "1",
        "--model",
        "identity",
        "--run-dir",
        str(run_dir),
        *extra,
    ]


def wait_for_run_start(run_dir: Path, process: subprocess.Popen, timeout_s: float = 60) -> float:
    """The run's start (Unix s), once its config.json exists."""
    deadline = time.monotonic() + timeout_s
    while not (run_dir / "config.json").exists():
        assert process.poll() is None, "locust exited before the run started"
        assert time.monotonic() < deadline, "the run did not start"
        time.sleep(0.05)
    while True:
        try:  # written in one go, but be sure it is complete
            config = json.loads((run_dir / "config.json").read_text())
            break
        except json.JSONDecodeError:
            assert time.monotonic() < deadline, "config.json incomplete"
            time.sleep(0.02)
    return datetime.fromisoformat(config["started_at"]).timestamp()


def sleep_until(start: float, at_s: float) -> None:
    time.sleep(max(0.0, start + at_s - time.time()))


def finish(process: subprocess.Popen, timeout_s: float = 120) -> tuple[float, str]:
    output, _ = process.communicate(timeout=timeout_s)
    return time.time(), output


def read_rows(path: Path) -> list[dict]:
    with path.open() as file:
        return list(csv.DictReader(file))


# The drills that break Triton under both protocols run their users side by side, USERS of each
# class in one run, and check each protocol's endpoint and time-series rows on their own.
BOTH_PROTOCOLS = ("TritonHttpUser", "TritonGrpcUser")


def by_protocol(summary: dict, rows: list[dict]) -> dict[str, tuple[dict, list[dict]]]:
    """Each protocol's endpoint in summary.json and its rows of timeseries.csv: both protocols there."""
    endpoints = {endpoint["protocol"]: endpoint for endpoint in summary["endpoints"]}
    assert sorted(endpoints) == ["grpc", "http"], summary["endpoints"]
    return {protocol: (e, [r for r in rows if r["protocol"] == protocol]) for protocol, e in endpoints.items()}


def run_drill(
    server: LocalTriton,
    run_dir: Path,
    run_time_s: int,
    actions: list[tuple[float, Callable[[], None]]],
    *extra: str,
    user_classes: tuple[str, ...] = ("TritonHttpUser",),
) -> tuple[float, float, str]:
    """Start a run (USERS users of each class), do each action at its time (s from the run start);
    returns (start, end, output)."""
    command = locust_command(server, run_dir, run_time_s, *extra)
    command[command.index("-u") + 1] = str(USERS * len(user_classes))
    command[command.index("--headless") : command.index("--headless")] = user_classes
    process = subprocess.Popen(
        command, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, stdin=subprocess.DEVNULL
    )
    try:
        start = wait_for_run_start(run_dir, process)
        for at_s, action in actions:
            sleep_until(start, at_s)
            action()
        end, output = finish(process)
    finally:
        if process.poll() is None:
            process.kill()
    return start, end, output


def assert_complete(run_dir: Path) -> dict:
    for name in ("config.json", "summary.json", "timeseries.csv", "server_stats.json", "server_metrics.csv"):
        assert (run_dir / name).exists(), name
    return json.loads((run_dir / "summary.json").read_text())


def log_drill(name: str, **numbers) -> None:
    """One line per drill (shown with `pytest -m drill -rP`): the figures of the drill table."""
    print(f"DRILL {name} " + json.dumps(numbers))


def assert_report_shows(run_dir: Path, *phrases: str) -> None:
    result = run_cli(["-m", "analysis", "report", str(run_dir)])
    assert result.returncode == 0, result.stderr[-2000:]
    text = (run_dir / "report.md").read_text()
    for phrase in phrases:
        assert phrase in text, phrase


def test_triton_killed_and_restarted_mid_run(drill_triton, drill_tritons, tmp_path):
    """Over HTTP and gRPC at once (USERS users each)."""
    run_dir = tmp_path / "run"
    before = model_stats(drill_triton.http_address, "identity")
    seen: dict = {}

    def kill() -> None:
        read_started = time.perf_counter()  # Triton counts at some instant of the request
        seen["before_kill"] = model_stats(drill_triton.http_address, "identity")
        _signal_group(drill_triton.process.pid, signal.SIGKILL)
        seen["kill_read_gap_s"] = time.perf_counter() - read_started
        seen["killed_at"] = time.time()
        drill_triton.process.wait()

    def bring_back() -> None:
        seen["restart_at"] = time.time()  # nothing can answer before this
        drill_tritons.restart()
        seen["ready_at"] = time.time()  # after start() saw it ready: it may have answered a little earlier

    # Back 7 s before -t: a restart that takes four times its usual 1.7 s still leaves whole windows.
    run_time_s = 13
    actions = [(2, kill), (6, bring_back)]
    start, end, output = run_drill(drill_triton, run_dir, run_time_s, actions, user_classes=BOTH_PROTOCOLS)
    after = model_stats(drill_triton.http_address, "identity")
    assert end - start <= run_time_s + END_WITHIN_S, output[-3000:]
    summary = assert_complete(run_dir)
    protocols = by_protocol(summary, read_rows(run_dir / "timeseries.csv"))
    users = USERS * len(protocols)
    # Triton over both lifetimes: the old server up to the kill, the new one from zero.
    triton_total = seen["before_kill"]["requests"] - before["requests"] + after["requests"]
    successes = sum(endpoint["requests"] - endpoint["failures"] for endpoint, _ in protocols.values())
    # Exact but for the instant between reading the old server's count and killing it (requests
    # completing then are the client's, not in triton_total), and the requests in flight at the
    # kill (Triton may have counted them; the client saw a reset).
    rate = successes / run_time_s
    race = int(rate * seen["kill_read_gap_s"] * 3) + users
    assert successes - race <= triton_total <= successes + users, (summary["endpoints"], triton_total, race)
    outage_s = seen["ready_at"] - seen["killed_at"]
    killed_s, ready_s = seen["killed_at"] - start, seen["ready_at"] - start
    restart_s = seen["restart_at"] - start
    for protocol, (endpoint, rows) in protocols.items():
        failures = endpoint["failures_by_class"]
        assert set(failures) <= {"connection refused", "connection reset", "connection error"}, (protocol, failures)
        # While Triton was down, users backed off: at most about 10 failures/s per user, not thousands.
        cut = failures.get("connection reset", 0) + failures.get("connection refused", 0)
        assert 0 < cut <= USERS * outage_s * 15 + 50, (protocol, cut, outage_s)
        # The outage is in the time series: windows with failures and no success between kill and
        # return. Whole windows between the kill and the start of the restart: the new Triton
        # answers as soon as it listens, which can be before start() has seen it ready (ready_at),
        # so a window ending before ready_at may hold successes (a full-suite run found one). Kill
        # at 2 s, restart at 6 s: at least one whole 1-s window lies in between (two when the kill
        # is on time).
        outage = [r for r in rows if killed_s + 1 <= float(r["time_s"]) and float(r["time_s"]) + 1 <= restart_s]
        assert outage and all(float(r["throughput_infer_per_s"]) == 0 for r in outage), (protocol, rows)
        # ... and the clients came back within about a second of Triton (gRPC's reconnect backoff is capped).
        back = [r for r in rows if float(r["time_s"]) >= killed_s and int(r["inferences"]) > 0]
        assert back and float(back[0]["time_s"]) <= ready_s + 1.5, (protocol, ready_s, back[:2])
    # The restart is on the record, and the server section covers both lifetimes.
    (restart_fault,) = summary["faults"]["server_restarts"]
    assert restart_fault["after_s"] <= seen["killed_at"] - start + 1.5
    server = summary["server"]["identity"]
    # The server watch's last snapshot of the old server may fall between the read above and the
    # kill (a full run found 2 more than triton_total): the same race as the lower bound.
    assert after["requests"] < server["requests"] <= triton_total + race
    log_drill(
        "restart", ended_after_t_s=round(end - start - run_time_s, 2), client_successes=successes,
        triton_both_lifetimes=triton_total, summary_server=server["requests"], outage_s=round(outage_s, 1),
        failures={protocol: endpoint["failures_by_class"] for protocol, (endpoint, _) in protocols.items()},
    )  # fmt: skip
    assert_report_shows(run_dir, "Triton restarted")


def test_a_restart_the_counters_miss_is_found_from_the_clients_answers(drill_triton, drill_tritons, tmp_path):
    """Statistics read every 10 s from a Triton started just before the run: killed at 5 s, so the
    snapshot at 10 s fails, and started again at 11 s; by the snapshot at 20 s the new server has
    counted more than the old one had at 0 s, so its counter went up (fresh53's drill, where the
    first snapshot after the restart came late). The client's answers in between show the loss."""
    _signal_group(drill_triton.process.pid, signal.SIGKILL)
    drill_triton.process.wait()
    fresh = drill_tritons.restart()  # counts from zero: the old server's count stays below the new one's
    counted_before_run = model_stats(fresh.http_address, "identity")["requests"]
    run_dir = tmp_path / "run"
    seen: dict = {}

    def kill() -> None:
        seen["before_kill"] = model_stats(fresh.http_address, "identity")["requests"]
        _signal_group(fresh.process.pid, signal.SIGKILL)
        fresh.process.wait()

    def bring_back() -> None:
        seen["server"] = drill_tritons.restart()

    run_time_s = 20
    actions = [(5, kill), (11, bring_back)]
    extra = ("--server-stats-interval", "10")
    start, end, output = run_drill(fresh, run_dir, run_time_s, actions, *extra, user_classes=BOTH_PROTOCOLS)
    after = model_stats(seen["server"].http_address, "identity")["requests"]
    summary = assert_complete(run_dir)
    assert end - start <= run_time_s + END_WITHIN_S, output[-3000:]
    # The premise: every snapshot the run took counted more than the one before (the new server's
    # count passed the old one's at the run's first snapshot), so no counter went down; and the
    # old server counted requests after that first snapshot, which a restart loses.
    lines = (run_dir / "server_snapshots.jsonl").read_text().splitlines()
    counts = [json.loads(line)["models"]["identity"]["1"]["inference_stats"]["success"]["count"] for line in lines]
    assert counts == sorted(counts) and counts[0] < seen["before_kill"], (counts, seen)
    assert counts[0] >= counted_before_run and counts[-1] <= after, (counts, counted_before_run, after)
    requests = summary["server"]["identity"]["requests"]
    log_drill(
        "restart_counters_miss", old_server_at_kill=seen["before_kill"], new_server=after, summary_server=requests,
        restarts=summary["faults"]["server_restarts"],
    )  # fmt: skip
    (restart_fault,) = summary["faults"]["server_restarts"]
    assert restart_fault["found_by"] == "client answers", restart_fault
    assert restart_fault["after_s"] < 5 < 11 < restart_fault["before_s"], restart_fault
    # Counted from zero over the span: the new server's count at the run's last snapshot, exactly
    # (the rise from the first snapshot would leave out what the old server had counted there).
    assert requests == counts[-1], (requests, counts)
    assert_report_shows(run_dir, "; found because Triton counted fewer requests than the client had answers for)")


# What a Triton stopping gracefully (SIGTERM) may answer: calls in flight cancelled, then "unknown
# model" while it unloads, then a closed port (docs/reference/failures.md, "server stopping").
STOPPING_NAMES = {
    "server stopping: gRPC CANCELLED",
    "server stopping: gRPC NOT_FOUND",
    "server stopping: HTTP 400",
    "server stopping: HTTP 404",
    # grpc-core refuses new streams while Triton shuts its gRPC server down (a full run: 32 of 118).
    "unavailable: gRPC UNAVAILABLE",
    "connection refused",
    "connection reset",
}


def test_triton_stopped_gracefully_mid_run(drill_triton, drill_tritons, tmp_path):
    """Over HTTP and gRPC at once (USERS users each). Found: SIGTERM then restart mid-run gave
    ~36,000 `gRPC NOT_FOUND` in about a second, no back-off, and the outage read as "unknown model"
    failures."""
    run_dir = tmp_path / "run"
    seen: dict = {}

    def stop() -> None:
        seen["stopped_at"] = time.time()
        drill_triton.process.send_signal(signal.SIGTERM)  # tritonserver itself, as Kubernetes does
        drill_triton.process.wait(timeout=60)

    def bring_back() -> None:
        drill_tritons.restart()
        seen["ready_at"] = time.time()

    # Held open by HTTP keep-alive, Triton takes up to its 5-s exit timeout to go (the stop action
    # waits for that): back from 7 s at the latest, 4 s before -t.
    run_time_s = 11
    actions = [(2, stop), (5, bring_back)]
    start, end, output = run_drill(drill_triton, run_dir, run_time_s, actions, user_classes=BOTH_PROTOCOLS)
    assert end - start <= run_time_s + END_WITHIN_S, output[-3000:]
    protocols = by_protocol(assert_complete(run_dir), read_rows(run_dir / "timeseries.csv"))
    outage_s = seen["ready_at"] - seen["stopped_at"]
    ready_s = seen["ready_at"] - start
    for protocol, (endpoint, rows) in protocols.items():
        failures = endpoint["failures_by_class"]
        assert failures and set(failures) <= STOPPING_NAMES, (protocol, failures)
        # Counted, not hammered: users back off from a stopping server as from a closed port.
        assert sum(failures.values()) <= USERS * outage_s * 15 + 50, (protocol, failures, outage_s)
        # ... and the run went on once Triton was back: its failures stopped, answers came after
        # them. (Not "after ready_s": the new Triton answers as soon as it listens, before start()
        # sees it ready. In one run it listened at 10.1 s, answered in the window from 9.3 s, and
        # start() saw it ready only after the last window began, at 10.3 s.)
        last_failed = max((r for r in rows if int(r["failures"]) > 0), key=lambda r: float(r["time_s"]))
        answered_after = [r for r in rows if float(r["time_s"]) >= float(last_failed["time_s"])]
        assert any(int(r["inferences"]) > 0 for r in answered_after), (protocol, ready_s, rows)
    failures = {protocol: endpoint["failures_by_class"] for protocol, (endpoint, _) in protocols.items()}
    log_drill("graceful-stop", failures=failures, outage_s=round(outage_s, 1))


def test_triton_frozen_mid_run(drill_triton, tmp_path):
    run_dir = tmp_path / "run"
    before = model_stats(drill_triton.http_address, "identity")

    # Frozen from 2 s to 9 s, then 3 s to catch up before -t (two requests, one statistics snapshot):
    # the 1-s windows starting from 3.5 s to 7.5 s (4 or 5 of them; one may be lost to the freeze's
    # own delays) lie inside the freeze.
    freeze_s, thaw_s = 2, 9
    run_time_s = thaw_s + 3
    start, end, output = run_drill(
        drill_triton,
        run_dir,
        run_time_s,
        [(freeze_s, lambda: freeze(drill_triton)), (thaw_s, lambda: thaw(drill_triton))],
    )
    after = model_stats(drill_triton.http_address, "identity")
    assert end - start <= run_time_s + END_WITHIN_S, output[-3000:]
    summary = assert_complete(run_dir)
    (endpoint,) = summary["endpoints"]
    # Nothing failed (the default request timeout outlasts the freeze): every request counted once.
    assert endpoint["failures"] == 0
    assert endpoint["requests"] == after["requests"] - before["requests"] == summary["server"]["identity"]["requests"]
    rows = read_rows(run_dir / "timeseries.csv")
    frozen = [r for r in rows if freeze_s + 1.5 <= float(r["time_s"]) <= thaw_s - 1.5]
    assert len(frozen) >= thaw_s - freeze_s - 4 and all(int(r["requests"]) == 0 for r in frozen), rows
    assert all(r["p50_us"] == "" for r in frozen)  # no latency measured, not a latency of 0
    log_drill(
        "frozen-mid-run", ended_after_t_s=round(end - start - run_time_s, 2), client_requests=endpoint["requests"],
        triton=after["requests"] - before["requests"], zero_windows=len(frozen),
    )  # fmt: skip


def test_triton_frozen_across_the_end_of_the_run(drill_triton, tmp_path):
    run_dir = tmp_path / "run"
    before = model_stats(drill_triton.http_address, "identity")

    # Frozen for the run's last 5 s: a statistics snapshot times out (5 s) before the end.
    run_time_s = 7
    try:
        start, end, output = run_drill(
            drill_triton, run_dir, run_time_s, [(2, lambda: freeze(drill_triton))], "--request-timeout", "60"
        )
    finally:
        thaw(drill_triton)
    assert end - start <= run_time_s + END_WITHIN_S, output[-3000:]
    summary = assert_complete(run_dir)
    (endpoint,) = summary["endpoints"]
    # The requests in flight when the run ended were cut at the stop grace and counted.
    assert endpoint["failures_by_class"] == {"interrupted": USERS}, endpoint
    assert summary["faults"]["server_unreachable"], summary["faults"]
    # Thawed: Triton finishes what it had received.
    deadline = time.monotonic() + 20
    while not drill_triton.is_ready():
        assert drill_triton.process.poll() is None, "Triton died after the thaw: " + drill_triton.log_text()[-2000:]
        assert time.monotonic() < deadline, "Triton not ready 20 s after the thaw"
        time.sleep(0.2)
    time.sleep(1.0)
    after = model_stats(drill_triton.http_address, "identity")
    completed = endpoint["requests"] - USERS
    assert completed <= after["requests"] - before["requests"] <= endpoint["requests"]
    log_drill(
        "frozen-across-end", ended_after_t_s=round(end - start - run_time_s, 2), client_requests=endpoint["requests"],
        interrupted=USERS, triton=after["requests"] - before["requests"],
    )  # fmt: skip


def start_distributed(server: LocalTriton, run_dir: Path, run_time_s: int, users: int = 4):
    """A master and two workers on loopback, as the Kubernetes manifests run them."""
    port = TritonPorts.free().http
    master_command = locust_command(server, run_dir, run_time_s, "--batch-size", "1,2")
    master_command[master_command.index("-u") + 1] = str(users)
    master_command.insert(master_command.index("--headless"), "TritonHttpUser")
    master_command += ["--master", "--master-bind-host", "127.0.0.1", "--master-bind-port", str(port)]
    master_command += ["--expect-workers", "2"]
    master = subprocess.Popen(
        master_command,
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=interruptible,
    )
    worker_command = [sys.executable, "-m", "locust", "-f", "locustfile.py", "--worker", "--master-host", "127.0.0.1"]
    worker_command += ["--master-port", str(port), "TritonHttpUser"]
    workers = [
        subprocess.Popen(worker_command, cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(2)
    ]
    return master, workers


def run_distributed_drill(server: LocalTriton, run_dir: Path, run_time_s: int, at_s: float, action):
    """A master and two workers; `action(workers)` at `at_s` into the run. The master must exit 0:
    (start, end, its output, what `action` returned)."""
    master, workers = start_distributed(server, run_dir, run_time_s)
    try:
        start = wait_for_run_start(run_dir, master)
        sleep_until(start, at_s)
        done = action(workers)
        end, output = finish(master)
        workers[1].wait(timeout=60)
    finally:
        for process in [master, *workers]:
            if process.poll() is None:
                process.kill()
    assert master.returncode == 0, output[-3000:]
    return start, end, output, done


def test_a_worker_killed_mid_run(drill_triton, tmp_path):
    run_dir = tmp_path / "run"
    before = model_stats(drill_triton.http_address, "identity")

    def kill(workers) -> float:
        workers[0].kill()
        return time.time()

    # Killed at 4 s (a report of it in by then: workers report every 3 s), noticed up to 6 s later
    # (asserted below; 5 s on a busy host), then 3 whole windows of 4 users again before -t: the
    # windows from 2 s after the loss to the run's last whole one, 12-15 s at the latest.
    run_time_s = 16
    start, end, output, killed = run_distributed_drill(drill_triton, run_dir, run_time_s, 4, kill)
    killed_s = killed - start
    assert end - start <= run_time_s + END_WITHIN_S, output[-3000:]
    summary = assert_complete(run_dir)
    (endpoint,) = summary["endpoints"]
    after = model_stats(drill_triton.http_address, "identity")
    faults = summary["faults"]
    (lost,) = faults["workers_lost"]
    assert killed_s < lost["lost_at_s"] <= killed_s + 6
    # The master stamps a report when it arrives: one the worker sent just before the kill can
    # land a moment after this process read its clock (seen: 6.008 against 6.0075).
    assert lost["last_report_s"] <= killed_s + REPORT_TRANSIT_S and lost["users"] == 2 and lost["users_respawned"]
    # The client count misses what the lost worker never reported; the estimate fills the gap,
    # bounded by what its 2 users can send between its last report and its death.
    estimate = faults["unreported_requests_estimate"]["identity"]
    triton_delta = after["requests"] - before["requests"]
    # The server section is Triton's own count over the run (read here independently), and the
    # client's count falls short of it by about what 2 of the 4 users sent between the dead
    # worker's last report and the kill (the estimate is that difference, so it is bounded here
    # by the time it covers, not compared with itself).
    assert summary["server"]["identity"]["requests"] == triton_delta
    unreported_s = killed_s - lost["last_report_s"]
    per_user_rps = endpoint["requests"] / (run_time_s * 4)
    assert 0 < estimate <= 2 * per_user_rps * (unreported_s + 1.0) * 2, (estimate, unreported_s, per_user_rps)
    # Its users were started again on the other worker: 4 users after the loss, as before.
    rows = read_rows(run_dir / "timeseries.csv")
    assert [int(r["users"]) for r in rows if float(r["time_s"]) >= lost["lost_at_s"] + 2][:3] == [4, 4, 4], rows
    assert "lost" in output
    log_drill(
        "worker-killed", ended_after_t_s=round(end - start - run_time_s, 2), client_requests=endpoint["requests"],
        lost_estimate=estimate, triton=triton_delta, lost_at_s=lost["lost_at_s"], killed_at_s=round(killed_s, 2),
    )  # fmt: skip
    assert_report_shows(run_dir, "lost")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_master_interrupted(drill_triton, tmp_path, sig):
    run_dir = tmp_path / "run"
    before = model_stats(drill_triton.http_address, "identity")
    master, workers = start_distributed(drill_triton, run_dir, 60)
    try:
        start = wait_for_run_start(run_dir, master)
        sleep_until(start, 2)
        sent_at = time.time()
        master.send_signal(sig)
        end, output = finish(master)
        for worker in workers:
            worker.wait(timeout=30)
    finally:
        for process in [master, *workers]:
            if process.poll() is None:
                process.kill()
    assert end - sent_at <= END_WITHIN_S, output[-3000:]
    summary = assert_complete(run_dir)
    (endpoint,) = summary["endpoints"]
    assert summary["faults"]["workers_lost"] == []
    after = model_stats(drill_triton.http_address, "identity")
    interrupted = endpoint["failures_by_class"].get("interrupted", 0)
    assert set(endpoint["failures_by_class"]) <= {"interrupted"}
    assert endpoint["requests"] - interrupted <= after["requests"] - before["requests"] <= endpoint["requests"]
    log_drill(
        f"master-{sig.name}", ended_after_signal_s=round(end - sent_at, 2), client_requests=endpoint["requests"],
        interrupted=interrupted, triton=after["requests"] - before["requests"],
    )  # fmt: skip


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_single_process_interrupted(drill_triton, tmp_path, sig):
    run_dir = tmp_path / "run"
    before = model_stats(drill_triton.http_address, "identity")
    process = subprocess.Popen(
        [*locust_command(drill_triton, run_dir, 60), "TritonGrpcUser"],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=interruptible,
    )
    try:
        start = wait_for_run_start(run_dir, process)
        sleep_until(start, 2)
        sent_at = time.time()
        process.send_signal(sig)
        end, output = finish(process)
    finally:
        if process.poll() is None:
            process.kill()
    assert end - sent_at <= END_WITHIN_S, output[-3000:]
    summary = assert_complete(run_dir)
    (endpoint,) = summary["endpoints"]
    after = model_stats(drill_triton.http_address, "identity")
    interrupted = endpoint["failures_by_class"].get("interrupted", 0)
    assert set(endpoint["failures_by_class"]) <= {"interrupted"}
    assert endpoint["requests"] - interrupted <= after["requests"] - before["requests"] <= endpoint["requests"]
    log_drill(
        f"single-{sig.name}", ended_after_signal_s=round(end - sent_at, 2), client_requests=endpoint["requests"],
        interrupted=interrupted, triton=after["requests"] - before["requests"],
    )  # fmt: skip


def sleep_model_triton(tmp_path: Path, sleep_ms: int, instances: int) -> LocalTriton:
    """A Triton of its own (started) serving the test repository's `sleep` model, each execution
    `sleep_ms` long on `instances` instances; the drill hands it to drill_tritons.discard."""
    repository = tmp_path / "repository"
    shutil.copytree(TEST_REPOSITORY / "sleep", repository / "sleep")
    config = repository / "sleep" / "config.pbtxt"
    slow = config.read_text().replace('string_value: "20"', f'string_value: "{sleep_ms}"')
    config.write_text(slow.replace("count: 8", f"count: {instances}"))
    server = LocalTriton([repository], log_file=tmp_path / "triton.log", stop_timeout_s=THROWAWAY_STOP_S)
    server.start()
    return server


def test_a_healthy_slow_model_is_not_cut_at_the_end(drill_tritons, tmp_path):
    # Each request takes 5 s: at -t (7 s) every user has one in flight with 3 s to go, more than
    # the 2-s grace a frozen server gets. The grace follows the slowest success seen (twice it),
    # so these finish and count as successes instead of "interrupted" failures.
    # One instance per user (not sleep's 8): Triton starts and stops 6 Python stubs fewer.
    server = sleep_model_triton(tmp_path, sleep_ms=5000, instances=USERS)
    run_dir = tmp_path / "run"
    try:
        before = model_stats(server.http_address, "sleep")
        command = locust_command(server, run_dir, 7, "--shape", "INPUT0:4")
        command[command.index("--model") + 1] = "sleep"
        command.insert(command.index("--headless"), "TritonHttpUser")
        result = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
        after = model_stats(server.http_address, "sleep")
    finally:
        drill_tritons.discard(server)
    assert result.returncode == 0, result.stderr[-3000:]
    (endpoint,) = assert_complete(run_dir)["endpoints"]
    assert endpoint["failures_by_class"] == {}, endpoint
    assert endpoint["requests"] == after["requests"] - before["requests"] == 2 * USERS


def test_triton_killed_under_streamed_requests(drill_tritons, tmp_path):
    """A decoupled model's streams (gRPC ModelStreamInfer, HTTP generate_stream; USERS users each,
    in one run) cut by a Triton kill: the requests in flight that had responses fail as "stream
    broken: connection reset", the rest as connection failures; every request the client sent is
    counted once, the successes are Triton's, and the run ends on time."""
    repository = tmp_path / "repository"
    shutil.copytree(TEST_REPOSITORY / "stream_gaps", repository / "stream_gaps")
    config = repository / "stream_gaps" / "config.pbtxt"
    # Long streams (20 responses 50 ms apart, about 1 s): at the kill every user is mid-stream.
    slow = config.read_text().replace(
        '"responses" value: { string_value: "4"', '"responses" value: { string_value: "20"'
    )
    config.write_text(slow.replace('"gap_ms" value: { string_value: "20"', '"gap_ms" value: { string_value: "50"'))
    run_dir, seen = tmp_path / "run", {}
    server = LocalTriton([repository], log_file=tmp_path / "triton.log", stop_timeout_s=THROWAWAY_STOP_S)
    server.start()
    try:
        before = model_stats(server.http_address, "stream_gaps")

        def kill() -> None:
            seen["before_kill"] = model_stats(server.http_address, "stream_gaps")
            _signal_group(server.process.pid, signal.SIGKILL)
            server.process.wait()

        # Killed after about two streams per user; what follows (refused reconnections) needs no time.
        run_time_s = 4
        actions = [(2.5, kill)]
        start, end, output = run_drill(
            server, run_dir, run_time_s, actions, "--model", "stream_gaps", user_classes=BOTH_PROTOCOLS
        )
    finally:
        drill_tritons.discard(server)
    assert end - start <= run_time_s + END_WITHIN_S, output[-3000:]
    protocols = by_protocol(assert_complete(run_dir), [])
    successes = broken = 0
    for protocol, (endpoint, _) in protocols.items():
        failures = endpoint["failures_by_class"]
        assert failures.get("stream broken: connection reset", 0) == USERS, (protocol, failures)
        # After the kill: reconnections refused, or (a killed process's socket still closing on a
        # busy host, seen under `make check`) a connection that never answers, cut by the run's stop.
        after_kill = {"connection refused", "connection reset", "interrupted"}
        assert set(failures) <= {"stream broken: connection reset", *after_kill}, (protocol, failures)
        assert endpoint["stream"]["requests"] == endpoint["requests"] - endpoint["failures"] > 0, (protocol, endpoint)
        successes += endpoint["requests"] - endpoint["failures"]
        broken += failures["stream broken: connection reset"]
    # Nothing lost: Triton counts a decoupled request when the model's execute() returns (at its
    # start, responses still to come), so what it counted before the kill is the client's successes
    # plus the streams the kill broke; less by at most one request per user, sent between the
    # read of Triton's count and the kill (counted by Triton after the read).
    counted = seen["before_kill"]["requests"] - before["requests"]
    users = USERS * len(protocols)
    assert successes + broken - users <= counted <= successes + broken, (counted, successes, broken)
    log_drill(
        "stream-kill", ended_after_t_s=round(end - start - run_time_s, 2), client_successes=successes,
        failures={protocol: endpoint["failures_by_class"] for protocol, (endpoint, _) in protocols.items()},
    )  # fmt: skip


# The frozen load generator's model: one instance, one request at a time, each this long.
SERVED_ONE_AT_A_TIME_MS = 200


def pause(process: subprocess.Popen, seconds: float) -> tuple[float, float]:
    """Freeze a process of the load generator (SIGSTOP) for `seconds`: (from, to) in Unix s."""
    frozen = time.time()
    os.kill(process.pid, signal.SIGSTOP)
    try:
        time.sleep(seconds)
    finally:
        os.kill(process.pid, signal.SIGCONT)
    return frozen, time.time()


def stall_of_the_freeze(summary: dict, start: float, frozen: tuple[float, float]) -> dict:
    """The stall summary.json names where the freeze was: one stall that covers it, to the meter's
    0.1-s wake-ups. A busy host may add stalls of its own, elsewhere or right beside the freeze
    (seen once at a load average of 24: the host held the worker from 0.29 s, the freeze from
    2.05 s, one stall of 4.2 s), so the stall may begin before the freeze or end after it; and
    another process may stall during it (seen in a fresh clone's make test: the frozen worker
    1.83-4.04 s over a freeze 2.00-3.55 s, its peer 2.80-4.10 s), which does not cover it."""
    from_s, to_s = frozen[0] - start, frozen[1] - start
    stalls = summary["faults"]["load_generator_stalled"]
    covering = [s for s in stalls if s["from_s"] <= from_s + 0.3 and s["to_s"] >= to_s - 0.1]
    assert len(covering) == 1, (stalls, from_s, to_s)
    (stall,) = covering
    assert stall["s"] == pytest.approx(stall["to_s"] - stall["from_s"], abs=0.002)
    return stall


def test_the_load_generator_frozen_mid_run_is_a_fault_of_the_run(drill_tritons, tmp_path):
    """A process that gets no CPU sends nothing and times its stall into its requests: the run says so.

    The model serves one request at a time and takes 200 ms over it, so whenever the freeze comes
    Triton holds one of the two users' requests: it is timed with the freeze inside. (On the drills'
    identity model, answered in under a millisecond, a freeze once came while both users were
    between requests, and no request held it: fresh86, longest latency 262 ms under a 2.0-s stall.)
    The client would have to run for 200 ms between reading one answer and sending the next request
    for the freeze to find none in flight."""
    server = sleep_model_triton(tmp_path, sleep_ms=SERVED_ONE_AT_A_TIME_MS, instances=1)
    run_dir = tmp_path / "run"
    command = locust_command(server, run_dir, 6, "--shape", "INPUT0:4")
    command[command.index("--model") + 1] = "sleep"
    command.insert(command.index("--headless"), "TritonHttpUser")
    process = subprocess.Popen(
        command, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, stdin=subprocess.DEVNULL
    )
    try:
        start = wait_for_run_start(run_dir, process)
        sleep_until(start, 2)
        frozen = pause(process, 2.0)
        _, output = finish(process)
    finally:
        if process.poll() is None:
            process.kill()
        drill_tritons.discard(server)
    assert process.returncode == 0, output[-3000:]
    summary = assert_complete(run_dir)
    stall = stall_of_the_freeze(summary, start, frozen)
    assert stall["process"] == "local"
    assert f"warning: The load generator stalled for {stall['s']:.1f} s from {stall['from_s']:.1f} s" in output
    # The request Triton held at the freeze was timed with it inside: without the freeze the longest
    # takes two executions (its own and the other user's): 0.40 s, 0.47 s at most in a run here, far
    # from the stall's 2 s.
    (endpoint,) = summary["endpoints"]
    assert endpoint["failures"] == 0, endpoint
    assert endpoint["latency_us"]["max"] >= (stall["s"] - 0.3) * 1e6, (endpoint["latency_us"], stall)
    assert_report_shows(run_dir, "The load generator stalled for")


def test_a_frozen_worker_is_named_by_the_master(drill_triton, tmp_path):
    """A worker's stalls reach the master with its reports; its peer and the master had none."""
    run_dir = tmp_path / "run"
    start, _, output, frozen = run_distributed_drill(drill_triton, run_dir, 6, 2, lambda w: pause(w[0], 1.5))
    summary = assert_complete(run_dir)
    stall = stall_of_the_freeze(summary, start, frozen)
    assert stall["process"] not in ("local", "master") and summary["load_generator"]["workers"] == 2
    assert f"warning: Worker {stall['process']} stalled for" in output
