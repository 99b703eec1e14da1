"""Issue 25's findings, tried as a new user would: each typed command, its exit code, its one `error:`
line, and the numbers it promises (checked against Triton's own statistics).

The tests here need a real Triton or a browser; the others, and this feature's account, are in
tests/unit/run/test_first_hour.py.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

# Imported when collected, before any test file imports ssl (selenium's urllib3): importing
# locust patches the standard library for gevent, and ssl patched after its import recurses.
from loadtests.clients.control import TritonControl
from loadtests.clients.control_grpc import open_control
from tests.helpers import (
    REPO_ROOT,
    grpc_target,
    locust_request_counts,
    read_summary,
    run_cli,
    run_locust,
)
from tests.refusals.run.test_first_hour import counted
from tests.unit.run.test_first_hour import MODEL


# -- 1. a gRPC-only target keeps its server-side numbers --------------------------------------------
@pytest.mark.parametrize("http_option", ["none", "closed"], ids=["only-grpc-given", "http-does-not-answer"])
def test_grpc_only_target_reads_triton_statistics_over_grpc(triton, tmp_path, http_option, held_ports):
    run_dir = tmp_path / "run"
    http = [] if http_option == "none" else ["--triton-http", f"127.0.0.1:{held_ports.http}"]
    options = ["--triton-grpc", triton.grpc_address, "--triton-metrics", triton.metrics_address, *http]
    result, requests = counted(
        triton,
        lambda: run_locust(
            ["TritonGrpcUser"], [*options, "--model", MODEL, "--run-dir", str(run_dir)], users=1, run_time="2s"
        ),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    summary = read_summary(run_dir)
    assert requests > 0
    assert summary["server"][MODEL]["requests"] == requests, summary["server"]
    assert sum(e["requests"] for e in summary["endpoints"]) == requests


# -- 3. a Locust user's habits -------------------------------------------------------------------
def test_locust_host_option_is_the_triton_http_address(triton, tmp_path):
    run_dir = tmp_path / "run"
    options = ["-H", f"http://{triton.http_address}", "--triton-metrics", triton.metrics_address]
    result, requests = counted(
        triton,
        lambda: run_locust(
            ["TritonHttpUser"], [*options, "--model", MODEL, "--run-dir", str(run_dir)], users=1, run_time="2s"
        ),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert requests > 0
    assert sum(e["requests"] for e in read_summary(run_dir)["endpoints"]) == requests


# -- 4. --csv with --json-file -----------------------------------------------------------------------
def test_csv_with_json_file_keeps_the_counts(triton, tmp_path):
    run_dir, prefix = tmp_path / "run", tmp_path / "locust"
    extra = ["--csv", str(prefix), "--json-file", str(tmp_path / "stats"), "--run-dir", str(run_dir)]
    result = run_locust(["TritonHttpUser"], [*triton.options, "--model", MODEL, *extra], users=1, run_time="2s")
    assert result.returncode == 0, result.stderr[-3000:]
    exact = {e["model"]: e["requests"] for e in read_summary(run_dir)["endpoints"]}
    locust = {name: count for (_type, name), count in locust_request_counts(prefix).items()}
    assert exact and all(count > 0 for count in exact.values())
    assert locust == exact


def test_unstable_sweep_level_fails_the_exit_code(triton, tmp_path):
    run_dir = tmp_path / "sweep"
    # Stable means three windows whose throughput and p95 agree within --stability-percentage:
    # at 0 % they must be equal, which three 0.2-s windows never are, so the level ends unstable.
    argv = ["-m", "loadtests", "sweep", "-m", MODEL, "--concurrency-range", "1:1", "--max-trials", "3"]
    argv += ["--stability-percentage", "0"]
    argv += ["--measurement-interval", "200", "--triton-http", triton.http_address]
    argv += ["--triton-grpc", triton.grpc_address, "--triton-metrics", triton.metrics_address]
    result = run_cli([*argv, "--run-dir", str(run_dir)], timeout=240)
    import json

    levels = json.loads((run_dir / "sweep.json").read_text())["levels"]
    assert levels and not all(level["stable"] for level in levels), levels
    assert result.returncode not in (0, 2), (result.returncode, result.stderr[-2000:])
    assert "unstable" in result.stderr
    # The per-level table is the sweep's; a whole-run row would mix its levels.
    assert "Exact latencies" not in result.stdout
    assert "Inferences/Second vs. Client p95 Batch Latency" in result.stdout


# -- 7. the console ----------------------------------------------------------------------------
def test_console_shows_throughput_exact_table_last_and_the_report_command(triton, tmp_path):
    run_dir = tmp_path / "run"
    command = [sys.executable, "-m", "locust", "-f", "locustfile.py", "--headless", "--only-summary", "-u", "1"]
    command += ["-t", "2s", "TritonHttpUser", *triton.options, "--model", MODEL, "--run-dir", str(run_dir)]
    # One stream, as a terminal shows it: Locust's table goes to stderr, the suite's to stdout.
    result = subprocess.run(command, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = result.stdout
    assert result.returncode == 0, out[-3000:]
    [endpoint] = read_summary(run_dir)["endpoints"]
    exact_at = out.rfind("Exact latencies")
    locust_at = out.rfind("Aggregated")
    assert 0 <= locust_at < exact_at, "Locust's rounded table comes after the exact one"
    header = next(line for line in out[exact_at:].splitlines() if line.startswith("Endpoint"))
    row = next(line for line in out[exact_at:].splitlines() if line.startswith(endpoint["name"]))
    cells = dict(zip(header.split()[1:], row[len(endpoint["name"]) :].split(), strict=False))
    assert float(cells["req/s"]) == pytest.approx(endpoint["throughput_rps"], abs=0.05)
    assert float(cells["infer/s"]) == pytest.approx(endpoint["throughput_infer_per_s"], abs=0.05)
    assert f"python -m analysis report {run_dir}" in out


def test_a_run_from_another_directory_and_its_printed_report_command_work_there(triton, tmp_path):
    # A user keeps their runs in their own directory: the locustfile is named by its path and the
    # report command the console prints is typed in that same directory.
    locustfile = str(REPO_ROOT / "locustfile.py")
    command = [sys.executable, "-m", "locust", "-f", locustfile, "--headless", "--only-summary", "-u", "1", "-t", "2s"]
    command += ["TritonHttpUser", *triton.options, "--model", MODEL]
    result = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]
    printed = re.search(r"report: (python -m analysis report \S+)", result.stdout).group(1)
    report = subprocess.run([sys.executable, *printed.split()[1:]], cwd=tmp_path, capture_output=True, text=True)
    assert report.returncode == 0, report.stderr[-3000:]
    [run_dir] = (tmp_path / "runs").iterdir()
    assert (run_dir / "report.html").is_file()
    options = [sys.executable, "-m", "loadtests", "options"]
    options = subprocess.run(options, cwd=tmp_path, capture_output=True, text=True)
    assert options.returncode == 0 and "--triton-http" in options.stdout, options.stderr[-3000:]


def test_grpc_statistics_read_as_http_reads_them(triton):
    run_locust(["TritonGrpcUser"], [*triton.options, "--model", MODEL], users=1, run_time="1s")
    over_http = TritonControl(triton.http_address).statistics([MODEL])[MODEL]
    over_grpc = open_control(grpc_target(triton.grpc_address)).statistics([MODEL])[MODEL]
    for version, entry in over_http.items():
        grpc_entry = over_grpc[version]
        assert grpc_entry["inference_count"] == entry["inference_count"] > 0
        assert grpc_entry["execution_count"] == entry["execution_count"]
        for stage in ("success", "queue", "compute_input", "compute_infer", "compute_output"):
            assert grpc_entry["inference_stats"][stage] == entry["inference_stats"][stage], stage
