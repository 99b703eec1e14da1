"""The suite's report from the web UI (issue 36, finding 5): when a test started there stops, its
run directory gets the report `python -m analysis report DIR` writes, the exact tab links to it,
and Locust's web app serves it with its images; Locust's own report download keeps working.

Headless Chromium against the session's Triton.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request

from selenium.webdriver.common.by import By

from tests.helpers import triton_options
from tests.system.run.test_webui_browser import (  # noqa: F401  (fixtures)
    EXACT_TAB,
    browser,
    chromium,
    click_button,
    exact_rows,
    header_text,
    launch,
    open_exact_tab,
    pytestmark,
    screenshot,
    start,
    wait_for,
    wait_running,
    web_ui,
)


def report_link(driver):
    """The exact tab's link to the suite's report ([] until the report is written)."""
    return driver.execute_script(
        """
        const table = [...document.querySelectorAll('table')].find(t => t.innerText.includes(arguments[0]));
        return table ? [...table.querySelectorAll('tbody [data-suite-link]')] : [];
        """,
        EXACT_TAB,
    )


def status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def test_stop_writes_the_report_and_the_tab_links_to_it(web_ui, browser):  # noqa: F811 (fixtures)
    browser.get(web_ui.url)
    start(browser, users=2)
    wait_running(browser, 1)
    click_button(browser, "STOP")
    (link,) = wait_for(
        lambda: report_link(browser), f"the exact tab never linked to the report: {exact_rows(browser)}"
    )[:1]
    wait_for(lambda: header_text(browser, "Status") == "STOPPED", "Locust's header never said STOPPED")
    screenshot(browser, "webui-report-link.png", height=600, width=1400)
    summary = json.loads((web_ui.run_dir / "summary.json").read_text())
    (row,) = exact_rows(browser)
    assert int(row["Requests"]) == summary["endpoints"][0]["requests"]
    assert (web_ui.run_dir / "report.html").exists() and (web_ui.run_dir / "report.md").exists()
    href = web_ui.url.rstrip("/") + link.get_attribute("data-suite-link")
    assert link.get_attribute("role") == "link" and "/triton-report/" in href

    link.click()  # a new tab, as Locust's own report opens
    wait_for(lambda: len(browser.window_handles) == 2, "the report never opened")
    browser.switch_to.window(browser.window_handles[1])
    try:
        wait_for(lambda: "Load test report" in browser.title, f"the report page's title: {browser.title!r}")
        text = browser.find_element(By.TAG_NAME, "body").text
        assert str(web_ui.run_dir) in text and "Diagnosis" in text
        images = browser.find_elements(By.TAG_NAME, "img")
        assert images and all(browser.execute_script("return arguments[0].naturalWidth", i) > 0 for i in images)
        screenshot(browser, "webui-report.png", height=1000, width=1400)
    finally:
        browser.close()
        browser.switch_to.window(browser.window_handles[0])

    # The run directory's own files are served (the plots), nothing outside it; Locust's report still works.
    base = href.rsplit("/", 1)[0]
    assert status(f"{base}/summary.json") == 200
    assert status(f"{base}/..%2F..%2Fetc%2Fpasswd") == 404
    assert status(web_ui.url.rstrip("/") + "/triton-report/9/report.html") == 404
    assert status(web_ui.url.rstrip("/") + "/stats/report") == 200


def test_a_test_that_ends_on_its_run_time_gets_its_report_too(triton, browser, tmp_path):  # noqa: F811 (fixtures)
    """-t given to the web UI fills the form's run time: the test ends by itself, and its report is linked."""
    with launch(tmp_path, ["TritonHttpUser", "--model", "identity", *triton_options(triton, 1), "-t", "3s"]) as ui:
        browser.get(ui.url)
        start(browser, users=1)
        open_exact_tab(browser)
        (link,) = wait_for(lambda: report_link(browser), "the exact tab never linked to the report")[:1]
        assert status(ui.url.rstrip("/") + link.get_attribute("data-suite-link")) == 200
    summary = json.loads((ui.run_dir / "summary.json").read_text())
    assert summary["endpoints"][0]["requests"] > 0 and (ui.run_dir / "report.html").exists()
