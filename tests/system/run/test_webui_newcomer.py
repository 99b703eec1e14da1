"""The web UI as a newcomer meets it (issue 36): `locust -f locustfile.py` with no user class
named, only Triton's addresses given, the Workload and Model fields in the first screen with no
click, then START with only the user count changed; and the
class picker (`--class-picker`), whose ticked classes are exactly what runs and what
pre-flight prepares.

Headless Chromium against the session's Triton; the run directory goes where a newcomer's
would (`runs/` under the working directory: here the test's own).
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.select import Select

from loadtests.config.settings import DEFAULT_BERT_MODEL
from loadtests.server import TritonPorts
from tests.helpers import REPO_ROOT, model_stats
from tests.system.run.test_webui_browser import (  # noqa: F401  (fixtures)
    WebUI,
    _answers,
    browser,
    chromium,
    click_button,
    exact_rows,
    fill,
    finished_rows,
    header_text,
    open_custom_parameters,
    page_text,
    pytestmark,
    screenshot,
    submit,
    wait_for,
    wait_running,
)

DEMO_MODELS = ("bert_qa", "bert_qa_dynbatch", "resnet50", "resnet50_jpeg")
PREPARED = "prepared "  # the log line of each endpoint pre-flight prepares (run/endpoint_cache.py)


def prepared(log: str) -> set[str]:
    return {line.split(PREPARED, 1)[1].split(":")[0] for line in log.splitlines() if PREPARED in line}


@contextlib.contextmanager
def newcomer_ui(tmp_path: Path, triton, *extra: str) -> Iterator[WebUI]:
    """`locust -f locustfile.py` run from a directory of its own: no class, no --run-dir, only
    the session Triton's three addresses (the demo default 127.0.0.1:8000 is not the test's)."""
    port = TritonPorts.free().http
    log = tmp_path / "locust.log"
    command = [sys.executable, "-m", "locust", "-f", str(REPO_ROOT / "locustfile.py"), *triton.options]
    command += ["--web-port", str(port), *extra]
    with log.open("w") as output:
        process = subprocess.Popen(command, cwd=tmp_path, stdout=output, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    try:
        wait_for(lambda: _answers(url), f"{url} never answered")
        yield WebUI(url, tmp_path / "runs", log)
    finally:
        process.terminate()
        process.wait(timeout=60)


def form_errors(driver: WebDriver) -> list[str]:
    return [a.text for a in driver.find_elements(By.CSS_SELECTOR, "[role=alert]") if "error" in a.text]


def start_with_users(driver: WebDriver, users: int) -> None:
    """Only the user count changed, then START; fails with the form's error if the test did not start."""
    fill(driver, "userCount", str(users))
    submit(driver)
    tab = "//*[@role='tab' and contains(., 'Triton (exact)')]"
    wait_for(lambda: form_errors(driver) or driver.find_elements(By.XPATH, tab), "the test neither ran nor failed")
    assert not form_errors(driver), form_errors(driver)


def stop_and_read(driver: WebDriver, runs: Path, pattern: str = "*") -> tuple[Path, dict, list[dict[str, str]]]:
    """STOP; the one run directory `runs/pattern`, its summary.json and the tab's final rows."""
    click_button(driver, "STOP")
    done = wait_for(lambda: list(runs.glob(f"{pattern}/summary.json")), f"no run {runs}/{pattern} wrote summary.json")
    (summary_path,) = done
    rows = finished_rows(driver)
    wait_for(lambda: header_text(driver, "Status") == "STOPPED", "Locust's header never said STOPPED")
    return summary_path.parent, json.loads(summary_path.read_text()), rows


def served(triton, before: dict[str, int]) -> dict[str, int]:
    """Requests Triton counted per demo model since `before`, the models it counted any for."""
    after = {model: model_stats(triton.http_address, model)["requests"] for model in DEMO_MODELS}
    return {model: after[model] - before[model] for model in DEMO_MODELS if after[model] != before[model]}


def check_run_agrees(triton, before, summary: dict, rows: list[dict[str, str]], endpoint_name: str) -> None:
    """One endpoint ran, with no failure; the tab's count is summary.json's and Triton's."""
    (endpoint,) = summary["endpoints"]
    (row,) = rows
    assert endpoint["name"] == row["Endpoint"] == endpoint_name
    assert endpoint["failures"] == 0 and row["Failures"] == "0"
    assert int(row["Requests"]) == endpoint["requests"] > 0
    assert int(row["Inferences"]) == endpoint["inferences"]
    assert served(triton, before) == {endpoint["model"]: endpoint["requests"]}


def test_no_class_named_start_with_only_the_user_count_sends_traffic(triton, browser, tmp_path):  # noqa: F811 (fixtures)
    """The README's way in: the form's defaults run BERT-QA over HTTP on the demo's BERT model."""
    before = {model: model_stats(triton.http_address, model)["requests"] for model in DEMO_MODELS}
    with newcomer_ui(tmp_path, triton) as ui:
        browser.get(ui.url)
        wait_for(lambda: browser.find_elements(By.NAME, "userCount"), "the form never showed")
        screenshot(browser, "webui-newcomer-form.png", height=1000, width=1400)
        start_with_users(browser, 2)
        wait_running(browser, 1)
        run_dir, summary, rows = stop_and_read(browser, ui.run_dir)
    check_run_agrees(triton, before, summary, rows, f"{DEFAULT_BERT_MODEL} [http]")
    assert json.loads((run_dir / "config.json").read_text())["user_classes"] == ["BertQAHttpUser"]


def test_the_workload_and_model_fields_show_without_a_click(triton, browser, tmp_path):  # noqa: F811 (fixtures)
    """The newcomer's form: the Custom parameters open when the page loads, Workload and Model
    first in them, in the first screen (1400 x 1000) without a scroll."""
    with newcomer_ui(tmp_path, triton) as ui:
        browser.get(ui.url)
        for name in ("userClass", "model"):
            field = wait_for(lambda n=name: browser.find_elements(By.NAME, n), f"no {name} field")[0]
            wait_for(field.is_displayed, f"the {name} field never showed without a click")
            in_view = "const r = arguments[0].getBoundingClientRect(); return r.top >= 0 && r.bottom <= innerHeight;"
            assert browser.execute_script(in_view, field), f"the {name} field is below the first screen"


def test_workload_chosen_in_the_form_runs_that_class_alone(triton, browser, tmp_path):  # noqa: F811 (fixtures)
    """The form's Workload select: ResNetGrpcUser, and only resnet50 over gRPC is loaded."""
    before = {model: model_stats(triton.http_address, model)["requests"] for model in DEMO_MODELS}
    with newcomer_ui(tmp_path, triton) as ui:
        browser.get(ui.url)
        open_custom_parameters(browser)
        choose_workload(browser, "ResNetGrpcUser")
        start_with_users(browser, 2)
        wait_running(browser, 1)
        _run_dir, summary, rows = stop_and_read(browser, ui.run_dir)
        log = ui.log.read_text()
    check_run_agrees(triton, before, summary, rows, "resnet50 [grpc]")
    assert prepared(log) == {"resnet50 [grpc]"}


def choose_workload(driver: WebDriver, class_name: str) -> None:
    """The form's Workload select (--user-class)."""
    field = wait_for(lambda: driver.find_elements(By.NAME, "userClass"), "no Workload field in the form")[0]
    Select(field).select_by_value(class_name)


def untick_all_but(driver: WebDriver, keep: set[str]) -> WebElement:
    """Locust's class picker: every class starts ticked; untick all but `keep` (the last kept row returned)."""
    rows = wait_for(
        lambda: [
            row
            for row in driver.find_elements(By.CSS_SELECTOR, "tr")
            if row.find_elements(By.CSS_SELECTOR, "input[type=checkbox]")
        ],
        "the class picker showed no class",
    )
    kept = None
    for row in rows:
        names = {cell.text for cell in row.find_elements(By.TAG_NAME, "td")}
        box = row.find_element(By.CSS_SELECTOR, "input[type=checkbox]")
        if box.is_selected() != bool(names & keep):
            box.click()
        if names & keep:
            kept = row
    assert kept is not None, f"no {keep} in the class picker"
    return kept


def test_class_picker_runs_and_prepares_exactly_the_ticked_class(triton, browser, tmp_path):  # noqa: F811 (fixtures)
    """--class-picker with only BertQAHttpUser ticked: that class runs, and pre-flight prepared no other model."""
    before = {model: model_stats(triton.http_address, model)["requests"] for model in DEMO_MODELS}
    with newcomer_ui(tmp_path, triton, "--class-picker") as ui:
        browser.get(ui.url)
        kept = untick_all_but(browser, {"BertQAHttpUser"})
        screenshot(browser, "webui-class-picker.png", height=700, width=1400, focus=kept)
        start_with_users(browser, 2)
        wait_running(browser, 1)
        run_dir, summary, rows = stop_and_read(browser, ui.run_dir)
        log = ui.log.read_text()
    check_run_agrees(triton, before, summary, rows, f"{DEFAULT_BERT_MODEL} [http]")
    assert json.loads((run_dir / "config.json").read_text())["user_classes"] == ["BertQAHttpUser"]
    assert prepared(log) == {f"{DEFAULT_BERT_MODEL} [http]"}
