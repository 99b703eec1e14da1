"""Locust's web UI in a real browser (headless Chromium): what an interactive user sees.

Each test starts `locust -f locustfile.py` with the web UI against the session's Triton and
drives the page through Selenium and Debian's chromedriver. With
TRITON_LOADTEST_SCREENSHOTS=docs/images the tests also save the screenshots the docs show.
"""

from __future__ import annotations

import contextlib
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
from selenium.webdriver.support.select import Select

from loadtests.server import TEST_REPOSITORY, LocalTriton, TritonPorts
from loadtests.server.serve import model_control_args
from tests.helpers import REPO_ROOT, THROWAWAY_STOP_S, model_stats, triton_options
from tests.tls_support import TlsProxy, make_pki

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
INFER_PER_S = "Infer/s run"  # inferences / time since the test started; when finished, the whole test


@dataclass
class WebUI:
    url: str
    run_dir: Path
    log: Path


@contextlib.contextmanager
def launch(tmp_path: Path, options: list[str]) -> Iterator[WebUI]:
    """The suite's web UI, as `locust -f locustfile.py OPTIONS` starts it (no --web-host: the default)."""
    port = TritonPorts.free().http
    run_dir, log = tmp_path / "run", tmp_path / "locust.log"
    command = [sys.executable, "-m", "locust", "-f", "locustfile.py", *options]
    command += ["--web-port", str(port), "--run-dir", str(run_dir)]
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
def web_ui(triton, tmp_path) -> Iterator[WebUI]:
    with launch(tmp_path, ["TritonHttpUser", "--model", "identity", *triton_options(triton, 1)]) as ui:
        yield ui


@pytest.fixture(scope="module")
def chromium() -> Iterator[WebDriver]:
    """One headless Chromium for the file's tests (a start each saved): each test's web UI is on
    a port of its own, so a page of another origin, and `browser` leaves it on a blank page."""
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


@pytest.fixture
def browser(chromium) -> Iterator[WebDriver]:
    yield chromium
    chromium.delete_all_cookies()
    chromium.get("about:blank")
    chromium.set_window_size(1400, 1000)


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


def screenshot(
    driver: WebDriver, name: str, height: int = 700, focus: WebElement | None = None, width: int = 1900
) -> None:
    """Save the page (wide enough for the whole exact table) when TRITON_LOADTEST_SCREENSHOTS is set."""
    if SCREENSHOTS:
        driver.set_window_size(width, height)
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
    """The suite's options in view: the page opens Locust's "Custom parameters" accordion itself
    when it draws the form (loadtests/run/webui.py), so nothing is clicked here (a click would
    close it). It opens with an animation: wait until its last field (the options listing's
    last, loadtests/options/groups.py) is shown too."""
    last = "junit"
    wait_for(
        lambda: [field for field in driver.find_elements(By.NAME, last) if field.is_displayed()],
        "the suite's options never showed (the page did not open the Custom parameters)",
    )


def fill(driver: WebDriver, name: str, value: str) -> None:
    field = driver.find_element(By.NAME, name)
    field.send_keys(Keys.CONTROL, "a")
    field.send_keys(value)


def submit(driver: WebDriver) -> None:
    """Click the form's START as a user would, once the form has settled: the suite opens the
    "Custom parameters" accordion each time the form is drawn, which moves the button down (in
    NEW's dialog, thousands of pixels); a click aimed before that landed on the field that took
    its place (ElementClickIntercepted, seen right after NEW). Settled: scrolled into view, the
    same place twice in a row, and the button itself under its centre."""
    button = driver.find_element(By.XPATH, "//button[@type='submit']")
    settled = """
        arguments[0].scrollIntoView({block: 'center'});
        const rect = arguments[0].getBoundingClientRect();
        const under = document.elementFromPoint(rect.x + rect.width / 2, rect.y + rect.height / 2);
        return [rect.x, rect.y, !!under && arguments[0].contains(under)];
    """
    last = []

    def steady() -> bool:
        nonlocal last
        now = driver.execute_script(settled, button)
        same, last = now == last, now
        return same and now[2]

    wait_for(steady, "the form's START button never settled under its own centre")
    button.click()


def start(driver: WebDriver, users: int) -> None:
    fill(driver, "userCount", str(users))
    fill(driver, "spawnRate", str(users))
    submit(driver)


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


def header_text(driver: WebDriver, label: str) -> str:
    """What Locust's green header shows under `label` (Status, RPS, Users, ...); "" if not shown."""
    return driver.execute_script(
        """
        const label = [...document.querySelectorAll('header *')].find(e => e.innerText === arguments[0]);
        return label && label.nextElementSibling ? label.nextElementSibling.innerText : '';
        """,
        label,
    )


def header_value(driver: WebDriver, label: str) -> float:
    """A number in Locust's green header (RPS, Users, ...), by its label; -1 if not shown."""
    try:
        return float(header_text(driver, label).replace(",", "").rstrip("%"))
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
    # The tab shows the whole run's rate to 0.1 and summary.json to 0.001, each rounded once from
    # the same quotient: 4432.6548 shows as 4432.7 and 4432.655; rounding 4432.655 again gives 4432.6.
    assert abs(float(final[INFER_PER_S]) - endpoint["throughput_infer_per_s"]) <= 0.05 + 0.0005
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
    submit(browser)  # the same form, Run Dir pre-filled
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


# -- the newest options through the form: --header, --balance, --mix ---------------------------
SECRET = "s3cr3t-bearer-token-9c1e"  # a literal --header value: must appear in no page


def wait_running(driver: WebDriver, endpoints: int) -> list[dict[str, str]]:
    """The exact tab once `endpoints` rows show throughput (the tab opened first)."""
    open_exact_tab(driver)

    def running() -> list[dict[str, str]]:
        rows = [row for row in exact_rows(driver) if float(row.get(INFER_PER_S) or 0) > 0]
        return rows if len(rows) >= endpoints else []

    return wait_for(running, f"the Triton (exact) tab never showed {endpoints} running endpoints")


def finished_rows(driver: WebDriver) -> list[dict[str, str]]:
    """The tab's final rows once it shows them (all marked finished: one snapshot).

    Locust marks a test STOPPED, and its page stops polling, before it fires test_stop, where
    the suite writes summary.json and the final rows: when that takes longer than Locust's last
    poll (seen once on a busy host), the tab keeps the last live rows until the page is loaded
    again, as a reader who reloads it sees (docs/guides/web-ui.md). The test reloads it then."""

    def finished() -> list[dict[str, str]]:
        return [r for r in exact_rows(driver) if r["Run directory"].endswith("(finished)")]

    try:
        return wait_for(finished, "not yet", timeout=15)
    except AssertionError:
        driver.refresh()
        open_exact_tab(driver)
        return wait_for(finished, "the Triton (exact) tab never showed the finished run")


def stop_and_read(driver: WebDriver, ui: WebUI) -> tuple[dict, list[dict[str, str]]]:
    """STOP, then summary.json and the tab's final rows (all marked finished: one snapshot)."""
    click_button(driver, "STOP")
    summary_path = ui.run_dir / "summary.json"
    wait_for(summary_path.exists, "the run never wrote summary.json")
    rows = finished_rows(driver)
    # Locust's header polls on its own: a picture taken before it says STOPPED mixes the two states.
    wait_for(lambda: header_text(driver, "Status") == "STOPPED", "Locust's header never said STOPPED")
    return json.loads(summary_path.read_text()), rows


def check_every_request_carried_the_header(
    triton, proxy: TlsProxy, before: dict, summary: dict, row: dict, refused_before: int = 0
) -> None:
    """One endpoint, no failure; its count is the tab's and Triton's; the proxy saw the header on
    each request since START (`refused_before`: those it refused before START)."""
    (endpoint,) = summary["endpoints"]
    requests = model_stats(triton.http_address, "identity")["requests"] - before["requests"]
    assert endpoint["failures"] == 0 and int(row["Requests"]) == endpoint["requests"] == requests > 0
    assert proxy.counts.without_header == refused_before and proxy.counts.with_header > requests


def test_a_literal_header_is_redacted_in_the_form_and_sent_by_the_run_it_starts(triton, browser, tmp_path):
    """The form shows `X-Api-Key: <redacted>` (in a password field); Start with it as shown sends
    the real value on every request (a TLS proxy that refuses requests without it sees them all)."""
    pki = make_pki(tmp_path / "pki")
    proxy = TlsProxy(triton.http_address, pki, ("X-Api-Key", SECRET), mode="http")
    options = ["TritonHttpUser", "--model", "identity", "--triton-http", f"https://{proxy.address}"]
    options += ["--triton-grpc", triton.grpc_address, "--triton-metrics", triton.metrics_address]
    options += ["--server-stats-interval", "1", "--ssl-ca", str(pki.ca), "--header", f"X-Api-Key: {SECRET}"]
    before = model_stats(triton.http_address, "identity")
    try:
        with launch(tmp_path, options) as ui:
            browser.get(ui.url)
            open_custom_parameters(browser)
            field = browser.find_element(By.NAME, "header")
            assert field.get_attribute("type") == "password"
            assert field.get_attribute("value") == "X-Api-Key: <redacted>"
            # The eye shows the text: what a user sees, for the docs' picture.
            field.find_element(By.XPATH, "./ancestor::div[contains(@class, 'MuiInputBase-root')]//button").click()
            screenshot(browser, "webui-header.png", height=520, focus=field, width=1100)
            start(browser, users=2)
            wait_running(browser, 1)
            summary, (row,) = stop_and_read(browser, ui)
            pages = browser.page_source
        log = ui.log.read_text()
    finally:
        proxy.close()
    check_every_request_carried_the_header(triton, proxy, before, summary, row)
    assert SECRET not in pages and SECRET not in log
    assert "X-Api-Key: <redacted>" in (ui.run_dir / "config.json").read_text()


def test_a_header_typed_in_the_form_keeps_its_commas_as_on_the_command_line(triton, browser, tmp_path):
    """`X-Api-Key: tok,en` typed in the form is one header whose value holds a comma, as
    `--header "X-Api-Key: tok,en"` is; a comma before the next `Name:` starts another header.
    A TLS proxy that refuses requests without the exact value sees every request with it."""
    value = "tok,en"
    pki = make_pki(tmp_path / "pki")
    proxy = TlsProxy(triton.http_address, pki, ("X-Api-Key", value), mode="http")
    options = ["TritonHttpUser", "--model", "identity", "--triton-http", f"https://{proxy.address}"]
    options += ["--triton-grpc", triton.grpc_address, "--triton-metrics", triton.metrics_address]
    # A header on the command line: the form's field holds a list, the value Locust splits at commas.
    options += ["--server-stats-interval", "1", "--ssl-ca", str(pki.ca), "--header", "X-Other: 1"]
    before = model_stats(triton.http_address, "identity")
    try:
        with launch(tmp_path, options) as ui:
            browser.get(ui.url)
            open_custom_parameters(browser)
            # The page asks Triton for the Model field's suggestions (run/webui_models.py) with the
            # command line's header, which lacks the key: the proxy refuses that one request.
            wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, "datalist[data-suite-answered]"), "no answer")
            refused = proxy.counts.without_header
            assert refused == 1
            fill(browser, "header", f"X-Api-Key: {value}, X-Other: 2")
            start(browser, users=2)

            def form_errors() -> list[str]:
                return [a.text for a in browser.find_elements(By.CSS_SELECTOR, "[role=alert]") if "error:" in a.text]

            tab = "//*[@role='tab' and contains(., 'Triton (exact)')]"
            wait_for(lambda: form_errors() or browser.find_elements(By.XPATH, tab), "the test neither ran nor failed")
            assert not form_errors(), form_errors()
            wait_running(browser, 1)
            summary, (row,) = stop_and_read(browser, ui)
    finally:
        proxy.close()
    check_every_request_carried_the_header(triton, proxy, before, summary, row, refused_before=refused)
    headers = json.loads((ui.run_dir / "config.json").read_text())["options"]["header"]
    assert headers == ["X-Api-Key: <redacted>", "X-Other: <redacted>"]


def test_balance_chosen_in_the_form_spreads_the_run_over_two_replicas(triton, browser, tmp_path):
    """--balance pin-user picked in the form: 4 users, 2 on each of two Tritons; the tab's row
    equals the sum of both Tritons' counts, each replica's count its Triton's."""
    second = LocalTriton(
        [TEST_REPOSITORY],
        log_file=tmp_path / "second.log",
        extra_args=model_control_args("explicit", ["identity"]),
        stop_timeout_s=THROWAWAY_STOP_S,
    )
    with second:
        servers = (triton, second)
        options = ["TritonHttpUser", "--model", "identity", "--server-stats-interval", "1"]
        for flag, address in (("http", "http_address"), ("grpc", "grpc_address"), ("metrics", "metrics_address")):
            options += [f"--triton-{flag}", ",".join(getattr(s, address) for s in servers)]
        before = [model_stats(s.http_address, "identity")["requests"] for s in servers]
        with launch(tmp_path, options) as ui:
            browser.get(ui.url)
            open_custom_parameters(browser)
            balance = browser.find_element(By.NAME, "balance")
            Select(balance).select_by_value("pin-user")
            screenshot(browser, "webui-balance.png", height=520, focus=balance, width=1100)
            start(browser, users=4)
            wait_running(browser, 1)
            summary, (row,) = stop_and_read(browser, ui)
        after = [model_stats(s.http_address, "identity")["requests"] for s in servers]
    assert json.loads((ui.run_dir / "config.json").read_text())["options"]["balance"] == "pin-user"
    (endpoint,) = summary["endpoints"]
    assert int(row["Requests"]) == endpoint["requests"] == sum(after) - sum(before)
    for server, start_count, end_count in zip(servers, before, after, strict=True):
        assert endpoint["replicas"][server.http_address]["requests"] == end_count - start_count > 0
    assert float(row["Server avg batch"]) == pytest.approx(summary["server"]["identity"]["avg_batch"], abs=0.01)


def test_mix_run_shows_one_row_per_model_each_equal_to_tritons_count(triton, browser, tmp_path):
    """--mix docs/examples/mix.yaml over HTTP: a row per model in the exact tab and in Locust's
    Statistics, each equal to Triton's own count for that model."""
    models = ("identity", "sleep", "text_reverse")
    options = ["TritonHttpUser", *triton_options(triton, 1), "--mix", str(REPO_ROOT / "docs/examples/mix.yaml")]
    before = {model: model_stats(triton.http_address, model) for model in models}
    with launch(tmp_path, options) as ui:
        browser.get(ui.url)
        start(browser, users=4)
        wait_running(browser, len(models))
        summary, rows = stop_and_read(browser, ui)
        screenshot(browser, "webui-mix.png", height=820)  # the final numbers: each equal to Triton's
        with urllib.request.urlopen(ui.url.rstrip("/") + "/stats/requests", timeout=5) as response:
            locust_rows = {r["name"]: r["num_requests"] for r in json.loads(response.read())["stats"]}
    after = {model: model_stats(triton.http_address, model) for model in models}
    assert sorted(row["Endpoint"] for row in rows) == [f"{model} [http]" for model in models]
    for row in rows:
        model = row["Endpoint"].removesuffix(" [http]")
        triton_delta = {key: after[model][key] - before[model][key] for key in ("requests", "inferences")}
        assert int(row["Requests"]) == triton_delta["requests"] == locust_rows[model] > 0, row
        assert int(row["Inferences"]) == triton_delta["inferences"], row
        assert int(row["Requests"]) == summary["mix"]["requests"][model] == summary["server"][model]["requests"]
        assert float(row["Server avg batch"]) == pytest.approx(summary["server"][model]["avg_batch"], abs=0.01)
    assert locust_rows["Aggregated"] == sum(int(row["Requests"]) for row in rows)


def test_a_mix_over_both_protocols_has_a_total_row_per_model(triton, browser, tmp_path):
    """A --mix over HTTP and gRPC: beside each model's two endpoint rows, a `MODEL [http+grpc]`
    row with both merged (summary.json's model_totals), its requests Triton's count for the model."""
    models = ("identity", "sleep")
    options = ["TritonHttpUser", "TritonGrpcUser", *triton_options(triton, 1), "--shape", "INPUT0:16"]
    options += ["--mix", ",".join(f"{model}:0.5" for model in models)]
    before = {model: model_stats(triton.http_address, model)["requests"] for model in models}
    with launch(tmp_path, options) as ui:
        browser.get(ui.url)
        start(browser, users=4)
        wait_running(browser, 2 * len(models))
        summary, rows = stop_and_read(browser, ui)
    by_name = {row["Endpoint"]: row for row in rows}
    for model in models:
        total = by_name.get(f"{model} [http+grpc]")
        assert total is not None, sorted(by_name)
        parts = [int(by_name[f"{model} [{protocol}]"]["Requests"]) for protocol in ("http", "grpc")]
        served = model_stats(triton.http_address, model)["requests"] - before[model]
        assert int(total["Requests"]) == sum(parts) == served, (total, parts, served)
        merged = summary["model_totals"][model]
        assert int(total["Inferences"]) == merged["inferences"]
        for key in ("p50", "p99", "max"):
            assert float(total[f"{key} ms"]) == round(merged["latency_us"][key] / 1000, 3), key
