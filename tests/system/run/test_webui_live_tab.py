"""The "Triton (exact)" tab at 1,400 px (issue 36, finding 3): only the columns that apply to the
run (no streaming columns for a model that does not stream, no Late/Dropped in closed loop), no
horizontal scroll, Triton's own columns in view, and the throughput now and over the run.

Headless Chromium at 1,400 x 1,000 against the session's Triton.
"""

from __future__ import annotations

import json

from selenium.webdriver.remote.webdriver import WebDriver

from tests.system.run.test_webui_browser import (  # noqa: F401  (fixtures)
    EXACT_TAB,
    browser,
    chromium,
    click_button,
    exact_rows,
    finished_rows,
    header_text,
    open_exact_tab,
    pytestmark,
    screenshot,
    start,
    wait_for,
    web_ui,
)

LATENCIES = ["p50 ms", "p90 ms", "p95 ms", "p99 ms", "p99 95 % interval ms", "max ms", "mean ms"]
SERVER = ["Server avg batch", "Server queue ms", "Server compute infer ms"]
CLOSED_LOOP_LIVE = ["Endpoint", "Requests", "Failures", "Inferences", "Infer/s now", "Infer/s run"]
CLOSED_LOOP_LIVE += [*LATENCIES, *SERVER, "Run directory"]


def shown_headers(driver: WebDriver) -> list[str]:
    """The exact table's column headers a person sees (hidden ones left out)."""
    return driver.execute_script(
        """
        const table = [...document.querySelectorAll('table')].find(t => t.innerText.includes(arguments[0]));
        if (!table) return [];
        return [...table.querySelectorAll('thead th')]
            .filter(th => getComputedStyle(th).display !== 'none' && th.getBoundingClientRect().width > 0)
            .map(th => th.innerText.trim());
        """,
        EXACT_TAB,
    )


def overflow_px(driver: WebDriver) -> int:
    """How far the page or any box around the exact table scrolls sideways (0: it fits)."""
    return driver.execute_script(
        """
        const table = [...document.querySelectorAll('table')].find(t => t.innerText.includes(arguments[0]));
        let most = document.documentElement.scrollWidth - document.documentElement.clientWidth;
        for (let box = table; box; box = box.parentElement) {
            most = Math.max(most, box.scrollWidth - box.clientWidth);
        }
        const right = table.getBoundingClientRect().right;
        return Math.max(most, Math.ceil(right - document.documentElement.clientWidth));
        """,
        EXACT_TAB,
    )


def test_exact_tab_shows_the_columns_that_apply_and_fits_at_1400_px(web_ui, browser):  # noqa: F811 (fixtures)
    browser.get(web_ui.url)
    assert browser.get_window_size()["width"] == 1400
    start(browser, users=2)
    open_exact_tab(browser)

    def live_with_server() -> list[dict[str, str]]:
        rows = exact_rows(browser)
        running = [r for r in rows if float(r.get("Infer/s now") or 0) > 0 and float(r.get("Infer/s run") or 0) > 0]
        return rows if rows and running == rows and all(r.get("Server avg batch") for r in rows) else []

    wait_for(live_with_server, f"the tab never showed a running endpoint with Triton's numbers: {exact_rows(browser)}")
    wait_for(lambda: shown_headers(browser) == CLOSED_LOOP_LIVE, f"the tab's columns: {shown_headers(browser)}")
    assert overflow_px(browser) <= 0, overflow_px(browser)
    screenshot(browser, "webui-live-tab.png", height=600, width=1400)

    click_button(browser, "STOP")
    summary_path = web_ui.run_dir / "summary.json"
    wait_for(summary_path.exists, "the run never wrote summary.json")
    (final,) = finished_rows(browser)
    wait_for(lambda: header_text(browser, "Status") == "STOPPED", "Locust's header never said STOPPED")
    (endpoint,) = json.loads(summary_path.read_text())["endpoints"]
    # After the test only the whole test's rate: summary.json's, each rounded once from one quotient.
    assert final["Infer/s now"] == ""
    assert abs(float(final["Infer/s run"]) - endpoint["throughput_infer_per_s"]) <= 0.05 + 0.0005
    assert "Infer/s now" not in wait_for(
        lambda: (h := shown_headers(browser)) and "Infer/s now" not in h and h, "Infer/s now stayed shown"
    )
    assert overflow_px(browser) <= 0, overflow_px(browser)
