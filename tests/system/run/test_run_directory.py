"""The run directory from real runs: complete, exact, the same single-process and distributed.

The tests here need a real Triton or a browser; the others, and this feature's account, are in
tests/unit/run/test_run_directory.py.
"""

from __future__ import annotations

import csv
import json
import re
import signal
import sys
from pathlib import Path

import pytest
from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogReader

from analysis import load_run
from loadtests.recording.histograms import new_histogram
from loadtests.server import TritonPorts
from tests.helpers import (
    REPO_ROOT,
    interrupt_locust,
    interruptible,
    model_stats,
    run_against_triton,
    run_locust,
    run_master_and_workers,
    triton_options,
)

RUN_FILES = ("config.json", "summary.json", "timeseries.csv", "server_stats.json", "server_metrics.csv")


def hdr_total(log: Path) -> int:
    reader = HistogramLogReader(str(log), new_histogram())
    total = HdrHistogram(1, 600_000_000, 3)
    while (interval := reader.get_next_interval_histogram()) is not None:
        total.add(interval)
    reader.close()
    return total.get_total_count()


def read_rows(path: Path) -> list[dict]:
    with path.open() as file:
        return list(csv.DictReader(file))


def assert_complete(run_dir: Path, model: str) -> dict:
    for name in RUN_FILES:
        assert (run_dir / name).exists(), name
    summary = json.loads((run_dir / "summary.json").read_text())
    (endpoint,) = summary["endpoints"]
    rows = read_rows(run_dir / "timeseries.csv")
    assert sum(int(r["requests"]) for r in rows) == endpoint["requests"]
    assert sum(int(r["inferences"]) for r in rows) == endpoint["inferences"]
    (log,) = (run_dir / "hdr").glob("*.hlog")
    assert hdr_total(log) == endpoint["requests"] - endpoint["failures"]
    config = json.loads((run_dir / "config.json").read_text())
    assert config["triton"]["server"]["name"] == "triton"
    assert config["triton"]["models"][model]["config"]["name"] == model
    return summary


def test_single_process_run_is_exact_at_sub_millisecond_latency(triton, tmp_path):
    run_dir = tmp_path / "run"
    before = model_stats(triton.http_address, "identity")
    result = run_locust(
        ["TritonGrpcUser"],
        [
            *triton_options(triton, server_stats_interval=1),
            "--model",
            "identity",
            "--batch-size",
            "1,2",
            "--run-dir",
            str(run_dir),
            "--csv",
            str(tmp_path / "locust"),
            "--html",
            str(tmp_path / "locust.html"),
        ],
        users=2,
        run_time="4s",
    )
    assert result.returncode == 0, result.stderr[-2000:]
    after = model_stats(triton.http_address, "identity")
    summary = assert_complete(run_dir, "identity")
    (endpoint,) = summary["endpoints"]
    assert endpoint["requests"] == after["requests"] - before["requests"]
    # Locust's own --csv files (what a Locust user reads first) hold every request too,
    # including those that completed after the run time ran out (locust#1806).
    aggregated = next(r for r in read_rows(tmp_path / "locust_stats.csv") if r["Name"] == "Aggregated")
    assert int(aggregated["Request Count"]) == endpoint["requests"]
    history = read_rows(tmp_path / "locust_stats_history.csv")
    assert int(history[-1]["Total Request Count"]) == endpoint["requests"]
    html = (tmp_path / "locust.html").read_text()  # Locust's --html report embeds its stats as JSON
    (html_count,) = re.findall(r'"name": "Aggregated", "num_failures": \d+, "num_requests": (\d+)', html)
    assert int(html_count) == endpoint["requests"]
    console = re.search(r"^\s+Aggregated\s+(\d+)\s", result.stdout + result.stderr, re.MULTILINE)
    assert console is not None and int(console.group(1)) == endpoint["requests"]  # the final console table
    latency = endpoint["latency_us"]
    assert 0 < latency["p50"] < latency["p99"] < 100_000  # microseconds, not collapsed to 0 or 1 ms
    server = summary["server"]["identity"]
    assert server["requests"] == endpoint["requests"]
    assert server["inferences"] == endpoint["inferences"]
    assert server["avg_batch"] >= 1.0
    components = server["queue_us"] + server["compute_input_us"] + server["compute_infer_us"]
    assert 0 < components + server["compute_output_us"] <= latency["mean"]
    assert "Exact latencies" in result.stdout
    assert summary["load_generator"]["workers"] == 0  # one process: no worker reports


def test_sigint_mid_run_leaves_a_complete_run_directory(triton, tmp_path):
    run_dir = tmp_path / "run"
    before = model_stats(triton.http_address, "identity")
    command = [sys.executable, "-m", "locust", "-f", "locustfile.py", "--headless", "-u", "2", "-t", "60s"]
    command += [
        "TritonHttpUser",
        *triton_options(triton, server_stats_interval=1),
        "--model",
        "identity",
        "--run-dir",
        str(run_dir),
    ]
    interrupt_locust(command, run_dir, after_s=3)
    summary = assert_complete(run_dir, "identity")
    (endpoint,) = summary["endpoints"]
    after = model_stats(triton.http_address, "identity")
    # Ctrl-C can land in the middle of a request: it is counted as "interrupted" (the server
    # may or may not have received it); every other request is accounted for exactly.
    interrupted = endpoint["failures_by_class"].get("interrupted", 0)
    assert set(endpoint["failures_by_class"]) <= {"interrupted"}
    completed = endpoint["requests"] - interrupted
    assert completed > 0
    assert completed <= after["requests"] - before["requests"] <= endpoint["requests"]


def test_master_and_two_workers_merge_exactly(triton, tmp_path):
    port = TritonPorts.free().http
    run_dir = tmp_path / "run"
    before = model_stats(triton.http_address, "identity")
    master = run_master_and_workers(
        ["--expect-workers", "2", "-u", "4", "-r", "4", "-t", "5s", "--csv", str(tmp_path / "locust")]
        + [
            "TritonGrpcUser",
            *triton_options(triton, server_stats_interval=1),
            "--model",
            "identity",
            "--batch-size",
            "1,3",
        ]
        + ["--run-dir", str(run_dir)],
        ["TritonGrpcUser"],
        port,
    )
    assert master.returncode == 0, master.stdout[-3000:]
    summary = assert_complete(run_dir, "identity")
    (endpoint,) = summary["endpoints"]
    after = model_stats(triton.http_address, "identity")
    # What the workers sent, as Locust's own master aggregated it from their reports:
    aggregated = next(r for r in read_rows(tmp_path / "locust_stats.csv") if r["Name"] == "Aggregated")
    assert endpoint["requests"] == int(aggregated["Request Count"]) > 0
    assert endpoint["requests"] == after["requests"] - before["requests"]
    assert endpoint["inferences"] == after["inferences"] - before["inferences"]
    assert endpoint["inferences"] > endpoint["requests"]  # the batch SPEC reached the workers
    assert summary["load_generator"]["cpu_s"] > 0
    assert summary["load_generator"]["workers"] == 2  # both workers' reports merged
    assert load_run(run_dir).endpoints["identity [grpc]"].requests == endpoint["requests"]
    # The master counts users per class from its workers' reports (its own greenlets are none).
    by_class = [(r["users"], r["users_by_class"]) for r in read_rows(run_dir / "timeseries.csv") if r["users_by_class"]]
    assert by_class and all(cell == f"TritonGrpcUser={users}" for users, cell in by_class), by_class
    assert ("4", "TritonGrpcUser=4") in by_class


def test_a_second_headless_run_into_a_used_run_dir_is_refused_before_any_load(triton, tmp_path):
    run_dir = tmp_path / "run"
    first = run_locust(["TritonHttpUser"], [*triton_options(triton), "--model", "identity", "--run-dir", str(run_dir)])
    assert first.returncode == 0, first.stderr[-2000:]
    measured = {path: path.read_bytes() for path in run_dir.rglob("*") if path.is_file()}
    before = model_stats(triton.http_address, "identity")
    second = run_locust(["TritonHttpUser"], [*triton_options(triton), "--model", "identity", "--run-dir", str(run_dir)])
    assert second.returncode == 2
    errors = [line for line in second.stderr.splitlines() if line.startswith("error:")]
    assert errors == [
        f"error: --run-dir {run_dir} already holds a run (it has config.json, summary.json, timeseries.csv, hdr); "
        "give a new directory, or leave --run-dir out for runs/<UTC time>-<classes>"
    ]
    assert model_stats(triton.http_address, "identity") == before
    assert {path: path.read_bytes() for path in run_dir.rglob("*") if path.is_file()} == measured


SLOW_TEST_START = """
import sys

import gevent
from locust import events


@events.test_start.add_listener
def load_a_dataset(**_kwargs):
    print("loading a dataset", file=sys.stderr, flush=True)
    gevent.sleep({sleep_s})  # a user's own setup at the start of the test
"""


def test_a_slow_test_start_delays_the_run_time_and_never_cuts_it(triton, tmp_path):
    """-t is the load's time: it starts once the test_start listeners (a locustfile's own setup,
    the suite reading Triton) have ended. Locust counts it from the test's start, listeners
    included: a 2-s run whose start took longer sent nothing (fresh71; fresh78 with 4 s)."""
    setup = tmp_path / "slow_setup.py"
    setup.write_text(SLOW_TEST_START.format(sleep_s=3))
    run = run_against_triton(
        triton,
        tmp_path / "run",
        ["TritonHttpUser"],
        ["--model", "identity", "--html", str(tmp_path / "locust_{u}u_{t}s.html")],
        models=("identity",),
        users=1,
        run_time="1s",
        locustfile=f"locustfile.py,{setup}",
    )
    (endpoint,) = run.summary["endpoints"]
    assert endpoint["requests"] == run.served() > 0, endpoint
    # From the directory's start, which comes before the timer: never shorter than -t.
    assert endpoint["duration_s"] >= 1.0, endpoint
    log = run.result.stderr
    assert "Run time limit set to 1 seconds, from the start of load" in log, log[-2000:]
    assert "No run time limit set" not in log, log[-2000:]
    # Timing -t changes nothing the run reads from its options: config.json keeps -t, and the
    # endpoint prepared by the pre-flight is the one the users send on (once, not again at the
    # test's start with the settings read anew), so config.json says what its requests carry.
    config = json.loads((run.run_dir / "config.json").read_text())
    assert config["options"]["run_time"] == 1, config["options"]
    assert log.count("prepared identity [http]") == 1, log[-3000:]
    # Locust's --html file name reads -t ({t}) as the run ends, from its own options.
    assert (tmp_path / "locust_1u_1s.html").is_file(), sorted(path.name for path in tmp_path.iterdir())


def test_a_test_interrupted_inside_its_test_start_is_one_error_not_a_silent_exit_0(triton, tmp_path):
    """Ctrl-C while the test_start listeners still run: Locust stops the test by killing them, no
    user starts; that exited 0 with no run directory and no word."""
    import subprocess

    setup = tmp_path / "slow_setup.py"
    setup.write_text(SLOW_TEST_START.format(sleep_s=60))
    run_dir = tmp_path / "run"
    command = [sys.executable, "-m", "locust", "-f", f"locustfile.py,{setup}", "--headless", "-u", "1", "-t", "5s"]
    command += ["TritonHttpUser", *triton_options(triton), "--model", "identity", "--run-dir", str(run_dir)]
    before = model_stats(triton.http_address, "identity")
    with subprocess.Popen(
        command, cwd=REPO_ROOT, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, preexec_fn=interruptible
    ) as process:
        lines = []
        for line in process.stderr:  # until the listener runs: an event, not a time
            lines.append(line)
            if "loading a dataset" in line:
                break
        process.send_signal(signal.SIGINT)
        _, rest = process.communicate(timeout=60)
    output = "".join(lines) + rest
    errors = [line for line in output.splitlines() if line.startswith("error:")]
    assert process.returncode == 2, output[-2000:]
    assert errors == [
        "error: the test stopped before its run began: its test_start listeners (the suite reading Triton's "
        "models and statistics, or the locustfile's own) had not finished, so no user started and nothing "
        "was sent"
    ], output[-2000:]
    assert model_stats(triton.http_address, "identity") == before
    assert not run_dir.exists()


def test_a_web_ui_quit_before_any_test_says_nothing_of_a_stopped_test():
    """Locust fires test_stop when a web UI that never ran a test quits (Ctrl-C): no test_start
    fired, so there is no stopped test to speak of (a newcomer's first `locust -f locustfile.py`,
    closed again, said that a test had stopped before its run began)."""
    import subprocess
    import time
    import urllib.request

    port = TritonPorts.free().http
    command = [sys.executable, "-m", "locust", "-f", "locustfile.py", "--web-host", "127.0.0.1"]
    command += ["--web-port", str(port)]
    with subprocess.Popen(
        command, cwd=REPO_ROOT, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, preexec_fn=interruptible
    ) as process:
        # Until the web UI answers: Locust serves only once its main greenlet waits, after it has
        # installed its signal handling (an event, not a time).
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5).close()
                break
            except OSError:
                time.sleep(0.1)
        process.send_signal(signal.SIGINT)
        _, output = process.communicate(timeout=60)
    assert "Starting web interface" in output, output
    assert process.returncode == 0, output
    assert "stopped before its run began" not in output, output


def test_bytes_sent_and_received_per_endpoint(triton, tmp_path):
    # identity: FP32 [16] in and out, batch 2 -> 2 x 16 x 4 = 128 payload bytes each way; the
    # gRPC request adds its protobuf framing (names, shapes), the response too.
    run_dir = tmp_path / "run"
    result = run_locust(
        ["TritonGrpcUser"],
        [*triton_options(triton), "--model", "identity", "--batch-size", "2", "--run-dir", str(run_dir)],
        users=1,
        run_time="2s",
    )
    assert result.returncode == 0, result.stderr[-2000:]
    (endpoint,) = json.loads((run_dir / "summary.json").read_text())["endpoints"]
    per_request = endpoint["bytes_sent"] / endpoint["requests"]
    assert 128 < per_request < 128 + 200, endpoint
    assert endpoint["bytes_sent"] % endpoint["requests"] == 0  # one prepared body, sent every time
    assert 128 < endpoint["bytes_received"] / endpoint["requests"] < 128 + 200
    assert endpoint["bytes_sent_per_s"] == pytest.approx(endpoint["bytes_sent"] / endpoint["duration_s"], rel=1e-3)
