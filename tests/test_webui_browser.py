"""Locust's web UI in a real browser (headless Chromium): what an interactive user sees.

Each test starts `locust -f locustfile.py` with the web UI against the session's Triton and
drives the page through Selenium and Debian's chromedriver. With
TRITON_LOADTEST_SCREENSHOTS=docs/images the tests also save the screenshots the docs show.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement

from loadtests.server import TritonPorts
from tests.helpers import REPO_ROOT, model_stats, triton_options

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
pytestmark = pytest.mark.skipif(
    not (CHROMIUM.exists() and CHROMEDRIVER.exists()),
    reason="needs Debian's chromium and chromium-driver (bash tests/install_browser.sh)",
)
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1400,1000",
)
SCREENSHOTS = os.environ.get("TRITON_LOADTEST_SCREENSHOTS", "")
# Generous: the machine is shared, and each wait ends as soon as its condition holds.
WAIT_S = 60.0
EXACT_TAB = "Server avg batch"  # a header only the "Triton (exact)" table has
INFER_PER_S = "Infer/s (now / run)"  # the last window while running, the whole run when finished


@dataclass
class WebUI:
    url: str
    run_dir: Path
    log: Path


@pytest.fixture
def web_ui(triton, tmp_path) -> Iterator[WebUI]:
    """The suite's web UI, as `locust -f locustfile.py` starts it (no --web-host: the default)."""
    port = TritonPorts.free().http
    run_dir, log = tmp_path / "run", tmp_path / "locust.log"
    command = [sys.executable, "-m", "locust", "-f", "locustfile.py", "TritonHttpUser", "--model", "identity"]
    command += [*triton_options(triton, 1), "--web-port", str(port), "--run-dir", str(run_dir)]
    with log.open("w") as output:
        process = subprocess.Popen(command, cwd=REPO_ROOT, stdout=output, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    try:
        wait_for(lambda: _answers(url), f"{url} never answered")
        yield WebUI(url, run_dir, log)
    finally:
        process.terminate()
        process.wait(timeout=60)


@pytest.fixture
def browser() -> Iterator[WebDriver]:
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    with tempfile.TemporaryDirectory(prefix="chromium-") as profile:
        options.add_argument(f"--user-data-dir={profile}")
        driver = webdriver.Chrome(options=options, service=Service(str(CHROMEDRIVER)))
        try:
            yield driver
        finally:
            driver.quit()


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2):
            return True
    except OSError:
        return False


def wait_for(condition: Callable[[], object], message: str, timeout: float = WAIT_S):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(message)


def screenshot(driver: WebDriver, name: str, height: int = 700, focus: WebElement | None = None) -> None:
    """Save the page (wide enough for the whole exact table) when TRITON_LOADTEST_SCREENSHOTS is set."""
    if SCREENSHOTS:
        driver.set_window_size(1900, height)
        if focus is not None:
            driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", focus)
        time.sleep(0.5)  # let the page lay out at the new size
        driver.save_screenshot(str(Path(SCREENSHOTS) / name))
        driver.set_window_size(1400, 1000)


def page_text(driver: WebDriver) -> str:
    return driver.find_element(By.TAG_NAME, "body").text


def click_button(driver: WebDriver, label: str) -> None:
    button = wait_for(
        lambda: [b for b in driver.find_elements(By.TAG_NAME, "button") if b.is_displayed() and b.text == label],
        f"no {label} button in:\n{page_text(driver)}",
    )[0]
    button.click()


def open_custom_parameters(driver: WebDriver) -> None:
    click_button(driver, "Custom parameters")
    # The accordion opens with an animation: wait until its last field is shown too.
    wait_for(lambda: driver.find_element(By.NAME, "window").is_displayed(), "the suite's options never showed")


def fill(driver: WebDriver, name: str, value: str) -> None:
    field = driver.find_element(By.NAME, name)
    field.send_keys(Keys.CONTROL, "a")
    field.send_keys(value)


def start(driver: WebDriver, users: int) -> None:
    fill(driver, "userCount", str(users))
    fill(driver, "spawnRate", str(users))
    driver.find_element(By.XPATH, "//button[@type='submit']").click()


def exact_rows(driver: WebDriver) -> list[dict[str, str]]:
    """The "Triton (exact)" table as {header: cell} per endpoint row (empty if not shown)."""
    return driver.execute_script(
        """
        const table = [...document.querySelectorAll('table')].find(t => t.innerText.includes(arguments[0]));
        if (!table) return [];
        const headers = [...table.querySelectorAll('thead th')].map(cell => cell.innerText.trim());
        return [...table.querySelectorAll('tbody tr')].map(row => Object.fromEntries(
            [...row.querySelectorAll('td')].map((cell, i) => [headers[i], cell.innerText.trim()])));
        """,
        EXACT_TAB,
    )


def header_value(driver: WebDriver, label: str) -> float:
    """A number in Locust's green header (RPS, Users, ...), by its label; -1 if not shown."""
    text = driver.execute_script(
        """
        const label = [...document.querySelectorAll('header *')].find(e => e.innerText === arguments[0]);
        return label && label.nextElementSibling ? label.nextElementSibling.innerText : '';
        """,
        label,
    )
    try:
        return float(text.replace(",", "").rstrip("%"))
    except ValueError:
        return -1.0


def open_exact_tab(driver: WebDriver) -> None:
    tab = wait_for(
        lambda: driver.find_elements(By.XPATH, "//*[@role='tab' and contains(., 'Triton (exact)')]"),
        "no Triton (exact) tab",
    )[0]
    tab.click()


def latencies_ms(row: dict[str, str]) -> list[float]:
    return [float(row[f"{key} ms"]) for key in ("p50", "p90", "p95", "p99", "max")]


def test_form_shows_the_suites_options_and_the_triton_address_as_host(web_ui, browser, triton):
    browser.get(web_ui.url)
    open_custom_parameters(browser)
    for name in ("tritonHttp", "tritonGrpc", "model", "batchSize", "runDir", "slo", "traffic", "rate"):
        assert browser.find_element(By.NAME, name).is_displayed(), name
    assert browser.find_element(By.NAME, "tritonHttp").get_attribute("value") == triton.http_address
    text = page_text(browser)
    # Locust's Host field is for HTTP users' base URL, which the suite does not use: not shown,
    # and no "Please provide one" hint; the header names the Triton the run will load.
    assert "Please provide one" not in text
    assert not [field for field in browser.find_elements(By.NAME, "host") if field.is_displayed()]
    assert f"http://{triton.http_address}" in text
    screenshot(browser, "webui-form.png", height=1300)


def test_exact_tab_live_final_after_stop_and_a_new_directory_per_run(web_ui, browser, triton):
    before = model_stats(triton.http_address, "identity")
    browser.get(web_ui.url)
    start(browser, users=2)
    open_exact_tab(browser)
    (live,) = wait_for(
        lambda: [row for row in exact_rows(browser) if float(row.get(INFER_PER_S) or 0) > 0],
        "the Triton (exact) tab never showed a running endpoint's throughput",
    )
    assert live["Endpoint"] == "identity [http]" and live["Failures"] == "0" and int(live["Requests"]) > 0
    p50, p90, p95, p99, top = latencies_ms(live)
    assert 0 < p50 <= p90 <= p95 <= p99 <= top
    assert 0 < float(live["mean ms"]) <= top
    assert live["Run directory"] == str(web_ui.run_dir)
    # Locust's own header counts requests per second over its last seconds, so it reads 0 for
    # the first ~3 s of a run: the page a user reads (and the docs' picture) shows both running.
    wait_for(lambda: header_value(browser, "RPS") > 0, "Locust's header RPS stayed 0 while requests ran")
    screenshot(browser, "webui-exact-tab.png")

    click_button(browser, "STOP")
    summary_path = web_ui.run_dir / "summary.json"
    wait_for(summary_path.exists, "the first run never wrote summary.json")
    summary = json.loads(summary_path.read_text())
    (endpoint,) = summary["endpoints"]
    time.sleep(4)  # several of the page's polls after the stop: the numbers must stay
    (final,) = wait_for(lambda: exact_rows(browser), "the Triton (exact) tab went blank after STOP")
    assert int(final["Requests"]) == endpoint["requests"] > int(live["Requests"])
    latency = endpoint["latency_us"]
    assert float(final["p95 ms"]) == round(latency["p95"] / 1000, 3)
    assert float(final["mean ms"]) == round(latency["mean"] / 1000, 3)
    assert float(final[INFER_PER_S]) == round(endpoint["throughput_infer_per_s"], 1)
    # Triton's side over the whole test; summary.json keeps 3 decimals, the tab 2 (batch) and µs in ms,
    # so the two may differ by one unit in the tab's last digit.
    server = summary["server"]["identity"]
    assert float(final["Server avg batch"]) == pytest.approx(server["avg_batch"], abs=0.01)
    assert float(final["Server compute infer ms"]) == pytest.approx(server["compute_infer_us"] / 1000, abs=0.001)
    assert final["Run directory"] == f"{web_ui.run_dir} (finished)"
    # Locust's own Statistics tab (the JSON the page renders it from) and Triton agree with it too.
    with urllib.request.urlopen(web_ui.url.rstrip("/") + "/stats/requests", timeout=5) as response:
        locust_stats = json.loads(response.read())
    (aggregated,) = [row for row in locust_stats["stats"] if row["name"] == "Aggregated"]
    assert aggregated["num_requests"] == endpoint["requests"]
    assert model_stats(triton.http_address, "identity")["requests"] - before["requests"] == endpoint["requests"]
    screenshot(browser, "webui-after-stop.png")

    first = {name: (web_ui.run_dir / name).read_bytes() for name in ("config.json", "summary.json", "timeseries.csv")}
    click_button(browser, "NEW")
    browser.find_element(By.XPATH, "//button[@type='submit']").click()  # the same form, Run Dir pre-filled
    second_dir = web_ui.run_dir.with_name(f"{web_ui.run_dir.name}-2")
    wait_for(
        lambda: [row for row in exact_rows(browser) if row["Run directory"] == str(second_dir)],
        f"the second run's tab never named {second_dir}",
    )
    click_button(browser, "STOP")
    wait_for((second_dir / "summary.json").exists, "the second run never wrote summary.json")
    for name, content in first.items():
        assert (web_ui.run_dir / name).read_bytes() == content, f"the first run's {name} was overwritten"
    assert (
        json.loads((second_dir / "config.json").read_text())["started_at"]
        > json.loads(first["config.json"])["started_at"]
    )


def test_unknown_model_shows_the_error_in_the_form(web_ui, browser, triton):
    before = model_stats(triton.http_address, "identity")
    browser.get(web_ui.url)
    open_custom_parameters(browser)
    fill(browser, "model", "no_such_model")
    start(browser, users=2)
    alert = wait_for(
        lambda: [a for a in browser.find_elements(By.CSS_SELECTOR, "[role=alert]") if "no_such_model" in a.text],
        "the unknown model's error never showed in the page",
    )[0]
    assert alert.text.startswith("error: ")
    screenshot(browser, "webui-error.png", focus=alert)
    assert "RUNNING" not in page_text(browser)
    assert not web_ui.run_dir.exists()  # no run started
    assert model_stats(triton.http_address, "identity") == before
