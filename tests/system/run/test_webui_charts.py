"""The exact tab's charts and health line (issue 36, item 2): the run over time under the table,
per window the numbers timeseries.csv gets, and a line that says while the test runs what the
report's first line will say, then, once the report is written, the report's first screen.

Headless Chromium at 1,400 x 1,000 against the session's Triton. The checks are on counts,
equality with the run directory's files and the page's structure, not on times.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
import urllib.request
from collections.abc import Iterator

import pytest
from selenium.webdriver.common.by import By

from loadtests.run.webui_charts import CHARTS, ROUTE
from loadtests.server import LocalTriton, TritonPorts
from tests.helpers import (
    REPO_ROOT,
    model_stats,
    model_stats_once_counted,
    report_first_screen,
    triton_of,
    triton_options,
)
from tests.system.run.test_webui_browser import (  # noqa: F401  (fixtures)
    browser,
    chromium,
    click_button,
    header_value,
    launch,
    open_exact_tab,
    pytestmark,
    screenshot,
    start,
    wait_for,
    web_ui,
)
from tests.system.run.test_webui_live_tab import overflow_px

ENDPOINT = "identity [http]"


def charts(driver) -> dict:
    """The charts section as a reader sees it: {shown, health, titles, points per line, layout}."""
    return driver.execute_script(
        """
        const section = document.getElementById('suite-live');
        if (!section || !section.isConnected) return {shown: false};
        const table = [...document.querySelectorAll('table')].find(t => t.innerText.includes('Server avg batch'));
        const lines = {};
        for (const line of section.querySelectorAll('[data-suite-line]')) {
          const key = line.closest('[data-suite-chart]').getAttribute('data-suite-chart');
          const name = key + ':' + line.getAttribute('data-suite-line');
          lines[name] = (lines[name] || 0) + Number(line.getAttribute('data-suite-points'));
        }
        return {
          shown: section.getBoundingClientRect().height > 0,
          below_table: !!table && section.getBoundingClientRect().top >= table.getBoundingClientRect().bottom,
          health: section.querySelector('[data-suite-health]').innerText,
          final: section.getAttribute('data-suite-final'),
          titles: [...section.querySelectorAll('figcaption')].map(e => e.innerText),
          lines,
        };
        """
    )


def series(url: str) -> dict:
    with urllib.request.urlopen(url.rstrip("/") + ROUTE + "?after=0", timeout=10) as response:
        return json.loads(response.read())


def timeseries_rows(run_dir) -> dict[float, dict]:
    with (run_dir / "timeseries.csv").open() as file:
        return {float(row["time_s"]): row for row in csv.DictReader(file) if row["endpoint"] == ENDPOINT}


def test_the_tab_draws_the_run_over_time_and_a_health_line_then_the_reports_first_screen(web_ui, browser):  # noqa: F811
    browser.get(web_ui.url)
    start(browser, users=2)
    open_exact_tab(browser)

    def drawn() -> dict:
        view = charts(browser)
        lines = view.get("lines", {})
        enough = lines.get(f"throughput:{ENDPOINT}", 0) >= 3 and lines.get(f"latency:{ENDPOINT} p99", 0) >= 3
        # Triton's interval and the load generator's CPU come with later windows than the first.
        return view if enough and lines.get("batch:identity", 0) and lines.get("cpu:load generator", 0) else {}

    view = wait_for(drawn, f"the charts never drew 3 windows of the run: {charts(browser)}")
    assert view["shown"] and view["below_table"]
    assert view["titles"] == [title for _key, title in CHARTS]
    assert "server_times:identity queue" in view["lines"]
    assert not [name for name in view["lines"] if name.startswith("failures:")]  # none failed: nothing drawn
    assert view["health"].startswith("So far: Healthy: ") and "none failed" in view["health"]
    # The run so far, judged by the report's rules: its headline and first diagnosis under the outcome.
    judged = wait_for(
        lambda: [line for line in charts(browser)["health"].splitlines()[1:] if line.startswith("identity: ")],
        f"the health line never gave the run so far's headline: {charts(browser)['health']}",
    )
    assert "over the whole run" in judged[0]
    assert overflow_px(browser) <= 0, overflow_px(browser)
    screenshot(browser, "webui-live-charts.png", height=1000, width=1400)

    # Another of Locust's tabs: the section goes (and the page stops asking); back: it is there.
    browser.find_element(By.XPATH, "//*[@role='tab' and contains(., 'Statistics')]").click()
    wait_for(lambda: not charts(browser)["shown"], "the charts stayed on Locust's Statistics tab")
    open_exact_tab(browser)
    wait_for(lambda: charts(browser)["shown"], "the charts did not come back with the exact tab")

    click_button(browser, "STOP")
    report = web_ui.run_dir / "report.md"
    wait_for(report.exists, "the test's report was never written")
    screen = report_first_screen(report.read_text())
    assert screen[0].startswith("Healthy: ") and len(screen) >= 2
    wait_for(
        lambda: charts(browser)["health"] == "\n".join(screen) and charts(browser)["final"] == "true",
        f"the health line never showed the report's first screen {screen}: {charts(browser)}",
    )
    screenshot(browser, "webui-charts-after-stop.png", height=1000, width=1400)

    # Every point is the window timeseries.csv holds, to the request and the microsecond.
    answer, rows = series(web_ui.url), timeseries_rows(web_ui.run_dir)
    assert answer["final"] and answer["run"] == str(web_ui.run_dir)
    points = [point for point in answer["points"] if ENDPOINT in point["endpoints"]]
    assert [point["t"] for point in points] == sorted(rows) and len(points) >= 3
    for point in points:
        row, cell = rows[point["t"]], point["endpoints"][ENDPOINT]
        assert cell["requests"] == int(row["requests"]) and cell["inferences"] == int(row["inferences"])
        assert sum(cell["failures"].values()) == int(row["failures"])
        assert cell["infer_per_s"] == float(row["throughput_infer_per_s"])
        if row["p99_us"]:
            assert (cell["p50_us"], cell["p99_us"]) == (float(row["p50_us"]), float(row["p99_us"]))
        else:
            assert cell["p50_us"] is None and cell["p99_us"] is None
    summary = json.loads((web_ui.run_dir / "summary.json").read_text())
    (endpoint,) = summary["endpoints"]
    assert "late_worker_windows" not in summary  # one process: every request is in a window
    assert sum(point["endpoints"][ENDPOINT]["requests"] for point in points) == endpoint["requests"]


@pytest.fixture
def own_triton(tmp_path) -> Iterator[LocalTriton]:
    """A Triton of the test's own with `sleep_10ms_single` alone. A storm of client timeouts
    (requests abandoned while the model still works on them, hundreds a second) corrupted the
    bundled tritonserver's heap: `malloc(): unaligned tcache chunk detected`, Signal 6, minutes
    later, under other tests; it is kept off the session's Triton."""
    yield from triton_of(tmp_path, "sleep_10ms_single")


def test_failures_are_drawn_by_class_and_the_health_line_says_the_run_is_failing(own_triton, browser, tmp_path):  # noqa: F811
    # Every request of a 10-ms model under a 2-ms timeout fails as a timeout: no latency to draw.
    options = ["TritonHttpUser", "--model", "sleep_10ms_single", "--shape", "INPUT0:16", "--request-timeout", "0.002"]
    with launch(tmp_path, [*options, *triton_options(own_triton, 1)]) as ui:
        browser.get(ui.url)
        start(browser, users=1)
        open_exact_tab(browser)

        def failing() -> dict:
            view = charts(browser)
            return view if view.get("lines", {}).get("failures:timeout", 0) >= 2 else {}

        view = wait_for(failing, f"the failures chart never drew the timeouts: {charts(browser)}")
        assert view["health"].startswith("So far: Failed: every one of "), view["health"]
        assert "timeout" in view["health"]
        # While the test runs, the failures rule names the cause and the next step (judged on the run so far).
        wait_for(
            lambda: (
                "Requests failed: sleep_10ms_single" in charts(browser)["health"]
                and "--request-timeout" in charts(browser)["health"]
            ),
            f"the health line never gave the failures' diagnosis: {charts(browser)['health']}",
        )
        assert not [name for name in view["lines"] if name.startswith("latency:")]  # no success, no latency
        click_button(browser, "STOP")
        wait_for((ui.run_dir / "summary.json").exists, "the run never wrote summary.json")
    summary = json.loads((ui.run_dir / "summary.json").read_text())
    (endpoint,) = summary["endpoints"]
    assert endpoint["requests"] == endpoint["failures"] > 0


def test_a_master_with_two_workers_draws_their_merged_windows(triton, browser, tmp_path):  # noqa: F811
    """The web UI on a master (as on Kubernetes): the points are the workers' windows merged, equal
    to timeseries.csv; the final row, summary.json and Triton count the same requests."""
    master_port = TritonPorts.free().http
    common = ["TritonHttpUser", "--model", "identity"]
    options = [*common, "--master", "--master-bind-port", str(master_port), "--expect-workers", "2"]
    with launch(tmp_path, [*options, *triton_options(triton, 1)]) as ui:
        worker = [sys.executable, "-m", "locust", "-f", "locustfile.py", "--worker", "--master-port", str(master_port)]
        workers = [
            subprocess.Popen([*worker, *common], cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
            for _ in range(2)
        ]
        try:
            before = model_stats(triton.http_address, "identity")
            browser.get(ui.url)
            wait_for(lambda: header_value(browser, "Workers") == 2, "the two workers never connected")
            start(browser, users=4)
            open_exact_tab(browser)
            # Windows close in bursts on a master (as workers' reports come in): the CPU of the
            # processes is drawn once half a window of wall time has passed between two closes.
            wait_for(
                lambda: (
                    charts(browser).get("lines", {}).get(f"throughput:{ENDPOINT}", 0) >= 3
                    and charts(browser)["lines"].get("cpu:load generator", 0) >= 1
                ),
                f"the master's charts never drew 3 windows and the CPU: {charts(browser)}",
            )
            click_button(browser, "STOP")
            wait_for((ui.run_dir / "summary.json").exists, "the run never wrote summary.json")
            wait_for(lambda: charts(browser).get("final") == "true", "the charts never took the final windows")
            answer = series(ui.url)
        finally:
            for process in workers:
                process.terminate()
                process.wait(timeout=60)
    summary = json.loads((ui.run_dir / "summary.json").read_text())
    (endpoint,) = summary["endpoints"]
    assert summary["load_generator"]["workers"] == 2
    # A request still in flight when a worker's stop grace ran out is cut and counted "interrupted"
    # (seen: 4 of 13,256 on a host stalled for 6 s); Triton may or may not have counted it.
    cut = endpoint["failures_by_class"].get("interrupted", 0)
    assert endpoint["failures"] == cut, endpoint["failures_by_class"]
    counted = model_stats_once_counted(triton.http_address, "identity", before["requests"] + endpoint["requests"])
    assert endpoint["requests"] - cut <= counted["requests"] - before["requests"] <= endpoint["requests"]
    rows = timeseries_rows(ui.run_dir)
    points = [point for point in answer["points"] if ENDPOINT in point["endpoints"]]
    assert [point["t"] for point in points] == sorted(rows)
    for point in points:
        assert point["endpoints"][ENDPOINT]["requests"] == int(rows[point["t"]]["requests"])
    # A worker's report that came after its window was written is in the totals, not in a window.
    in_windows = sum(int(row["requests"]) for row in rows.values())
    assert in_windows <= endpoint["requests"]
    assert in_windows == endpoint["requests"] or summary.get("late_worker_windows")
