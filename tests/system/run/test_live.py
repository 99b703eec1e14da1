"""What a run shows while it runs: the Prometheus endpoint and the web UI's exact tab.

The tests here need a real Triton or a browser; the others, and this feature's account, are in
tests/unit/run/test_live.py.
"""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator

import pytest
import tritonclient.http as httpclient

from analysis import load_run
from loadtests.server import TritonPorts
from loadtests.triton_stats.metrics import parse
from tests.helpers import REPO_ROOT

# A busy 2-core machine can take many seconds to start a Locust process (imports, pre-flight):
# waits are on a condition with this deadline, never a fixed sleep or a fixed number of tries.
DEADLINE_S = 120


def get(url: str, timeout_s: float = DEADLINE_S) -> bytes:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                return response.read()
        except OSError:
            assert time.monotonic() < deadline, f"{url} never answered"
            time.sleep(0.2)


def poll_during_run(process: subprocess.Popen, url: str, until: Callable[[bytes], bool]) -> bytes:
    """GET `url` until `until(body)` holds, while the run is still going (the process alive when the
    answer was read), so what the test reads is a view of the run in progress, not its end."""
    deadline = time.monotonic() + DEADLINE_S
    while True:
        assert process.poll() is None, f"the run ended before {url} showed it under way"
        assert time.monotonic() < deadline, f"{url} did not show the run under way in {DEADLINE_S} s"
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                body = response.read()
        except OSError:
            body = None
        if body is not None and until(body):
            return body
        time.sleep(0.2)


@contextlib.contextmanager
def locust(*args: str) -> Iterator[subprocess.Popen]:
    """A Locust process that is killed if the test fails while it runs: Popen's own exit waits for
    it, and a master without -t would hold the test until pytest's timeout (600 s, seen at load 17)."""
    command = [sys.executable, "-m", "locust", "-f", "locustfile.py", *args]
    with subprocess.Popen(
        command, cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    ) as process:
        try:
            yield process
        finally:
            if process.poll() is None:
                process.kill()


def both_users_sending(body: bytes) -> bool:
    values = {(s.name, s.value) for s in parse(body.decode())}
    names = {name for name, value in values if value > 0}
    return ("triton_loadtest_users", 2) in values and "triton_loadtest_requests_total" in names


def test_prometheus_endpoint_serves_exact_numbers_during_the_run(triton, tmp_path):
    port = TritonPorts.free().http
    run_dir = tmp_path / "run"
    with locust(
        "--headless", "-u", "2", "-t", "6s", "TritonHttpUser", "--model", "identity", "--batch-size", "2",
        "--triton-http", triton.http_address, "--triton-metrics", triton.metrics_address,
        "--server-stats-interval", "1", "--prometheus-port", str(port), "--run-dir", str(run_dir),
    ) as process:  # fmt: skip
        # Scraped once both users run and requests were counted (not at a fixed time: a busy
        # machine can still be starting Locust 4 s in), while the 6-s run goes on.
        # ... and once Triton's side was read (its first statistics interval ends 1 s in, later
        # on a busy machine: scraped before it, the server gauges were once missing).
        body = poll_during_run(
            process,
            f"http://127.0.0.1:{port}/metrics",
            lambda body: both_users_sending(body) and b"triton_loadtest_server_avg_batch{" in body,
        )
        samples = parse(body.decode())
        _, stderr = process.communicate(timeout=60)
    assert process.returncode == 0, stderr[-2000:]
    by_name = {}
    for sample in samples:
        by_name.setdefault(sample.name, []).append(sample)
    (requests,) = by_name["triton_loadtest_requests_total"]
    assert requests.labels == {"endpoint": "identity [http]", "model": "identity", "protocol": "http"}
    (inferences,) = by_name["triton_loadtest_inferences_total"]
    assert inferences.value == 2 * requests.value > 0
    quantiles = {s.labels["quantile"]: s.value for s in by_name["triton_loadtest_latency_microseconds"]}
    assert 0 < quantiles["0.5"] <= quantiles["0.99"] <= quantiles["1"]
    assert by_name["triton_loadtest_users"][0].value == 2
    assert by_name["triton_loadtest_server_avg_batch"][0].labels == {"model": "identity"}
    # The scrape saw part of the run; the run directory has all of it.
    (endpoint,) = load_run(run_dir).endpoints.values()
    assert 0 < requests.value <= endpoint.requests


def web_ui_grpc_run(triton, port: int, model: str, run_time: str, run_dir) -> contextlib.AbstractContextManager:
    """A web UI run of 2 gRPC users that starts itself and quits 2 s after it ends."""
    return locust(
        "--web-host", "127.0.0.1", "--web-port", str(port), "--autostart", "--autoquit", "2",
        "-u", "2", "-t", run_time, "TritonGrpcUser", "--model", model,
        "--triton-grpc", triton.grpc_address, "--triton-http", triton.http_address,
        "--run-dir", str(run_dir),
    )  # fmt: skip


def exact_tab_has_requests(body: bytes) -> bool:
    tabs = [e for e in json.loads(body).get("extended_stats", []) if e["key"] == "triton-exact"]
    return any(row["requests"] > 0 for tab in tabs for row in tab["data"])


def test_web_ui_tab_shows_exact_percentiles(triton, tmp_path):
    port = TritonPorts.free().http
    with web_ui_grpc_run(triton, port, "identity", "6s", tmp_path / "run") as process:
        page = get(f"http://127.0.0.1:{port}/").decode()
        stats = json.loads(poll_during_run(process, f"http://127.0.0.1:{port}/stats/requests", exact_tab_has_requests))
        _, stderr = process.communicate(timeout=60)
    assert process.returncode == 0, stderr[-2000:]
    assert "Triton (exact)" in page and "triton-exact" in page
    # The suite's options are in the web UI's form (Locust's "extra_options").
    for option in ("triton_grpc", "batch_size", "validate_responses", "request_timeout"):
        assert f'"{option}"' in page, option
    (tab,) = [entry for entry in stats["extended_stats"] if entry["key"] == "triton-exact"]
    (row,) = tab["data"]
    assert row["endpoint"] == "identity [grpc]"
    assert row["requests"] > 0 and row["failures"] == 0
    assert 0 < row["p50_ms"] <= row["p99_ms"] <= row["max_ms"]
    # Not streamed: no time to first response, no gaps (empty cells, not 0 ms).
    assert [row[key] for key in STREAM_CELLS] == ["", "", "", ""]


STREAM_CELLS = ("ttfr_p50_ms", "ttfr_p99_ms", "gap_p50_ms", "gap_p99_ms")


def streamed_rows_timed(body: bytes) -> bool:
    tabs = [e for e in json.loads(body).get("extended_stats", []) if e["key"] == "triton-exact"]
    return any(row["requests"] > 0 and row["gap_p50_ms"] != "" for tab in tabs for row in tab["data"])


def test_web_ui_tab_shows_a_streamed_endpoints_first_response_and_gaps(triton, tmp_path):
    """stream_slow over gRPC: the live tab's ttfr/gap cells are the model's timetable while the run
    goes. The tab is read as soon as a request has ended: its medians are of a request or two, so
    the model is stream_gaps ten times slower (models/test_repository/README.md), against which a
    stall of the host (80 ms seen beside two shards) is noise, and the checks keep half a gap."""
    config = httpclient.InferenceServerClient(triton.http_address).get_model_config("stream_slow")
    params = {key: float(value["string_value"]) for key, value in config["parameters"].items()}
    port = TritonPorts.free().http
    with web_ui_grpc_run(triton, port, "stream_slow", "4s", tmp_path / "run") as process:
        stats = json.loads(poll_during_run(process, f"http://127.0.0.1:{port}/stats/requests", streamed_rows_timed))
        _, stderr = process.communicate(timeout=60)
    assert process.returncode == 0, stderr[-2000:]
    (tab,) = [entry for entry in stats["extended_stats"] if entry["key"] == "triton-exact"]
    (row,) = tab["data"]
    assert row["endpoint"] == "stream_slow [grpc]"
    first_ms, gap_ms = params["first_ms"], params["gap_ms"]
    # Timed as each response arrives: the first before the model sends its second (first + gap),
    # the gaps within half a gap of the model's (responses read together would show gaps near 0).
    assert first_ms * 0.999 <= row["ttfr_p50_ms"] < first_ms + gap_ms, row
    assert row["ttfr_p50_ms"] <= row["ttfr_p99_ms"], row
    assert row["gap_p50_ms"] == pytest.approx(gap_ms, abs=gap_ms / 2), row
    assert row["gap_p50_ms"] <= row["gap_p99_ms"]
    # The final request: the response at the end of the stream (at least the whole timetable).
    assert row["p50_ms"] >= (first_ms + (params["responses"] - 1) * gap_ms) * 0.999


def listening_addresses(port: int) -> set[str]:
    """The local addresses of the sockets listening on `port` (Linux /proc/net/tcp and tcp6)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as file:
            next(file)  # header
            for line in file:
                local, state = line.split()[1], line.split()[3]
                address, port_hex = local.split(":")
                if state != "0A" or int(port_hex, 16) != port:  # 0A: LISTEN
                    continue
                if len(address) == 8:  # IPv4, little-endian
                    found.add(socket.inet_ntop(socket.AF_INET, bytes.fromhex(address)[::-1]))
                else:  # IPv6: four little-endian 32-bit words
                    words = b"".join(bytes.fromhex(address[i : i + 8])[::-1] for i in range(0, 32, 8))
                    found.add(socket.inet_ntop(socket.AF_INET6, words))
    return found


def test_web_ui_and_master_port_listen_on_loopback_unless_told_otherwise(triton):
    web, master = TritonPorts.free().http, TritonPorts.free().http
    common = ["--master", "--master-bind-port", str(master), "TritonHttpUser", "--model", "identity"]
    with locust(*common, "--web-port", str(web), "--triton-http", triton.http_address) as process:
        get(f"http://127.0.0.1:{web}/")
        web_addresses, master_addresses = listening_addresses(web), listening_addresses(master)
        process.terminate()
        process.communicate(timeout=60)
    assert web_addresses == {"127.0.0.1"}
    assert master_addresses == {"127.0.0.1"}
    # --web-host still decides (here: every interface).
    with locust(
        *common, "--web-port", str(web), "--web-host", "0.0.0.0", "--triton-http", triton.http_address
    ) as process:
        get(f"http://127.0.0.1:{web}/")
        web_addresses = listening_addresses(web)
        process.terminate()
        process.communicate(timeout=60)
    assert web_addresses == {"0.0.0.0"}
