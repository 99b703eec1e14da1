"""What the web UI's page reads while the suite finishes a test it stopped.

Locust's page polls /stats/requests every 2 s while the test spawns or runs, and stops polling
at the first answer in any other state (stopping, cleanup, stopped), keeping what it shows.
Locust sets that state before the suite has finished the run (closed its windows, read
Triton's final statistics, written summary.json): an answer in that gap left the Triton (exact)
tab on the live numbers, or blank, for good (stop 43's CI: the report link never came, at 60 s).
So the first answer that lets the page stop must carry the suite's final numbers, and Locust's
own table in it must count the same requests.

- Single process, Triton frozen at STOP: the gap lasts the statistics' timeout (5 s), so the
  order is fixed whatever the host's speed; the requests in flight are cut at the stop grace.
- A master and a worker: the worker's requests since its last periodic report (every 3 s)
  reach Locust's table with its final report, before the suite's numbers are final.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator

import pytest

from loadtests.server import LocalTriton, TritonPorts
from tests.helpers import REPO_ROOT, model_stats_once_counted, triton_of
from tests.system.run.test_drills import freeze, thaw
from tests.system.run.test_webui_browser import WebUI, launch, wait_for

RUNNING_STATES = ("spawning", "running")
COMMON = ["TritonHttpUser", "--model", "identity"]


def post(url: str, fields: dict | None = None) -> dict:
    data = urllib.parse.urlencode(fields or {}).encode()
    with urllib.request.urlopen(url, data=data, timeout=120) as response:
        return json.loads(response.read())


def stats(url: str) -> dict:
    with urllib.request.urlopen(url + "stats/requests", timeout=120) as response:
        return json.loads(response.read())


def exact_rows(answer: dict) -> list[dict]:
    (table,) = answer["extended_stats"]
    return table["data"]


@pytest.fixture
def own_triton(tmp_path) -> Iterator[LocalTriton]:
    """A Triton of the test's own (one test freezes it): `identity` alone."""
    yield from triton_of(tmp_path, "identity")


@contextlib.contextmanager
def workers(count: int, master_port: int, options: list[str]):
    command = [sys.executable, "-m", "locust", "-f", "locustfile.py", "--worker", "--master-port", str(master_port)]
    started = [
        subprocess.Popen([*command, *options], cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        for _ in range(count)
    ]
    try:
        yield
    finally:
        for process in started:
            process.terminate()
            process.wait(timeout=60)


def start_then_stop(web_ui: WebUI, at_stop=lambda: None, after_stop=lambda: None) -> tuple[list[tuple], dict, dict]:
    """Start 2 users, STOP once requests are counted, read every answer the page would get up to
    the first that lets it stop polling. Returns [(state, exact rows)], that last answer and the
    run's only endpoint in summary.json."""
    assert post(web_ui.url + "swarm", {"user_count": 2, "spawn_rate": 2})["success"]
    # Locust keeps its part of the answer up to 2 s (a cache): its state, then the suite's rows.
    wait_for(lambda: stats(web_ui.url)["state"] == "running", "Locust never said running")
    # A master has no row until a worker's first report (every 3 s), though Locust says running.
    wait_for(lambda: any(row["requests"] > 0 for row in exact_rows(stats(web_ui.url))), "no request was counted")
    at_stop()
    try:
        stopping = threading.Thread(target=post, args=(web_ui.url + "stop",), daemon=True)
        stopping.start()
        answers = []
        while True:
            answer = stats(web_ui.url)
            answers.append((answer["state"], exact_rows(answer)))
            if answer["state"] not in RUNNING_STATES:
                break
            time.sleep(0.02)
    finally:
        after_stop()
    stopping.join(timeout=120)
    (endpoint,) = json.loads((web_ui.run_dir / "summary.json").read_text())["endpoints"]
    return answers, answer, endpoint


def assert_final(web_ui: WebUI, answers: list[tuple], last: dict, endpoint: dict) -> None:
    """The answer that lets the page stop: the suite's final row, and Locust's table, as summary.json."""
    rows = exact_rows(last)
    assert [row["run_dir"] for row in rows] == [f"{web_ui.run_dir} (finished)"], [
        (state, [row["run_dir"] for row in rows]) for state, rows in answers
    ]
    assert [(row["requests"], row["failures"]) for row in rows] == [(endpoint["requests"], endpoint["failures"])]
    (locust_total,) = [row for row in last["stats"] if row["name"] == "Aggregated"]
    assert (locust_total["num_requests"], locust_total["num_failures"]) == (endpoint["requests"], endpoint["failures"])


def test_triton_frozen_at_stop_the_page_is_told_stopped_with_the_final_numbers(own_triton, tmp_path):
    with launch(tmp_path, [*COMMON, *own_triton.options]) as web_ui:
        answers, last, endpoint = start_then_stop(web_ui, lambda: freeze(own_triton), lambda: thaw(own_triton))
    assert endpoint["failures_by_class"].get("interrupted", 0) > 0, endpoint  # cut at the stop grace
    # Those ended during the stop (frozen from before it to after its grace): named as such.
    assert endpoint["ended_during_stop"]["failures"] == endpoint["failures_by_class"]["interrupted"], endpoint
    assert_final(web_ui, answers, last, endpoint)


def test_a_masters_page_is_told_stopped_with_every_workers_last_requests_in_locusts_table(own_triton, tmp_path):
    master_port = TritonPorts.free().http
    options = [*COMMON, *own_triton.options, "--master", "--master-bind-port", str(master_port)]
    options += ["--expect-workers", "1"]
    with launch(tmp_path, options) as web_ui, workers(1, master_port, COMMON):
        wait_for(lambda: stats(web_ui.url).get("worker_count") == 1, "the worker never connected")
        answers, last, endpoint = start_then_stop(web_ui)
    assert endpoint["failures"] == 0, endpoint
    assert_final(web_ui, answers, last, endpoint)
    # The Triton of this test alone: it counted every request Locust's table and the tab show.
    assert (
        model_stats_once_counted(own_triton.http_address, "identity", endpoint["requests"])["requests"]
        == (endpoint["requests"])
    )
