"""The requests that ended during the test's stop, named as such in summary.json and the report.

A closed-loop user always has one request in flight, so when the run time ends each of the
users has one; against a model that takes SLEEP_MS per request, each ends during the stop
grace (long enough here that none is cut). summary.json must count those (one per user, or
two for a user whose answer lands as the stop begins) as ended during the stop, keep them in
its totals (Triton's count is the summary's), and a master with a worker must say the same as
a single process.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest
import tritonclient.http as httpclient

from analysis.dataset import load
from analysis.findings import findings
from loadtests.server import LocalTriton, TritonPorts
from tests.helpers import (
    THROWAWAY_STOP_S,
    model_stats,
    model_stats_once_counted,
    read_summary,
    repository_of,
    run_against_triton,
    run_master_and_workers,
    serving,
    triton_options,
)

MODEL = "sleep"
SLEEP_MS = 300
USERS = 2
# The stop grace, long enough that no request of the model is cut on a busy host: the run waits
# for the requests, not for this.
GRACE = ["--stop-timeout", "60"]
OPTIONS = ["--model", MODEL, "--shape", "INPUT0:4", *GRACE]


@pytest.fixture(scope="module")
def slow_triton(tmp_path_factory):
    """A Triton of this module's own: the `sleep` model taking SLEEP_MS per request (8 instances)."""
    directory = tmp_path_factory.mktemp("slow_triton")
    repository = repository_of(directory / "models", MODEL)
    config = repository / MODEL / "config.pbtxt"
    config.write_text(config.read_text().replace('string_value: "20"', f'string_value: "{SLEEP_MS}"'))
    server = LocalTriton([repository], log_file=directory / "triton.log", stop_timeout_s=THROWAWAY_STOP_S)
    yield from serving(server)


def assert_one_per_user_ended_during_the_stop(endpoint: dict, served: int) -> None:
    """Each user's request in flight at the stop, and those alone, are labelled; all of them
    finished (none cut) and all are in the totals Triton counted: the requests that ended
    before the stop are the summary's requests less one per user."""
    assert endpoint["failures"] == 0, endpoint
    during = endpoint["ended_during_stop"]
    # Locust fires test_stopping one loop turn before it tells each user to stop: a response that
    # lands in that turn (a chance of about the turn's length in SLEEP_MS) is labelled, and its user
    # sends one more request, labelled too. So one per user, or two for a user caught that way.
    assert USERS <= during["requests"] <= 2 * USERS and during["failures"] == 0, during
    assert endpoint["requests"] == served, (endpoint["requests"], served)
    assert during["max_us"] <= endpoint["latency_us"]["max"]


def assert_the_duration_covers_every_request(run_dir: Path, endpoint: dict, triton) -> None:
    """The run's end (started_at + duration_s, the span throughput is over) comes after the last
    request it counts: after Triton's last execution ended (`last_inference`, taken when an
    execution's statistics are recorded, in whole milliseconds), which a client hears of later."""
    started_at = datetime.fromisoformat(json.loads((run_dir / "config.json").read_text())["started_at"])
    client = httpclient.InferenceServerClient(triton.http_address)
    try:
        last_ms = int(client.get_inference_statistics(MODEL)["model_stats"][0]["last_inference"])
    finally:
        client.close()
    ended_s = started_at.timestamp() + endpoint["duration_s"]
    assert ended_s + 0.001 >= last_ms / 1000, (ended_s, last_ms / 1000)  # duration_s is rounded to 1 ms


def test_a_single_process_names_the_requests_that_ended_during_the_stop(slow_triton, tmp_path):
    run = run_against_triton(
        slow_triton, tmp_path / "run", ["TritonHttpUser"], OPTIONS, models=(MODEL,), users=USERS, run_time="3s"
    )
    (endpoint,) = run.summary["endpoints"]
    assert_one_per_user_ended_during_the_stop(endpoint, run.served())
    assert_the_duration_covers_every_request(run.run_dir, endpoint, slow_triton)
    data = load(run.run_dir)
    (line,) = [line for line in findings(data) if "ended during the test's stop" in line]
    # The report's count is summary.json's: one per user, or two for a user caught as above.
    during = endpoint["ended_during_stop"]["requests"]
    assert line.startswith(f"{endpoint['name']}: {during} requests ended during the test's stop ("), line
    assert line.endswith("They are counted in every figure."), line
    assert ("which is the run's max latency" in line) == (
        endpoint["ended_during_stop"]["max_us"] == endpoint["latency_us"]["max"]
    ), line


def test_a_master_with_a_worker_names_them_as_a_single_process_does(slow_triton, tmp_path):
    run_dir: Path = tmp_path / "run"
    before = model_stats(slow_triton.http_address, MODEL)
    master = ["-u", str(USERS), "-r", str(USERS * 10), "-t", "3s", "--only-summary", "--expect-workers", "1"]
    master += ["TritonHttpUser", *triton_options(slow_triton), "--run-dir", str(run_dir), *OPTIONS]
    result = run_master_and_workers(master, ["TritonHttpUser"], TritonPorts.free().http, workers=1)
    assert result.returncode == 0, result.stdout[-3000:]
    summary = read_summary(run_dir)
    assert summary["load_generator"]["workers"] == 1
    (endpoint,) = summary["endpoints"]
    after = model_stats_once_counted(slow_triton.http_address, MODEL, before["requests"] + endpoint["requests"])
    assert_one_per_user_ended_during_the_stop(endpoint, after["requests"] - before["requests"])
    # The master's own stop came before its worker's users stopped (at -t's end it tells them
    # after its test_stop): the run ends when the last worker's users did, as in one process.
    assert_the_duration_covers_every_request(run_dir, endpoint, slow_triton)
