"""The web form as `python -m loadtests options` lists it: grouped by task, written labels, and
a start-up error shown at the field it names (headless Chromium; issue 25's finding 8).

With TRITON_LOADTEST_SCREENSHOTS=docs/images the tests save the screenshots the docs show.
"""

from __future__ import annotations

from selenium.webdriver.common.by import By

from loadtests.options.groups import form_order, labels
from tests.helpers import model_stats, triton_options
from tests.system.run.test_webui_browser import (  # noqa: F401  (fixtures)
    browser,
    chromium,
    fill,
    header_text,
    launch,
    open_custom_parameters,
    pytestmark,
    screenshot,
    start,
    wait_for,
    web_ui,
)


def camel(dest: str) -> str:
    head, *rest = dest.split("_")
    return head + "".join(part.capitalize() for part in rest)


def field_box(driver, dest: str):
    return driver.find_element(By.NAME, camel(dest)).find_element(
        By.XPATH,
        "./ancestor::*[contains(@class, 'MuiFormControl-root') or contains(@class, 'MuiFormControlLabel-root')][1]",
    )


def shown_label(driver, dest: str) -> str:
    """The label a person reads on the field: the written one (CSS) or Locust's own text."""
    return driver.execute_script(
        """
        const label = arguments[0].querySelector('label, .MuiFormControlLabel-label');
        const after = getComputedStyle(label, '::after').content;
        return after && after !== 'none' ? JSON.parse(after) : label.innerText;
        """,
        field_box(driver, dest),
    )


def test_form_is_ordered_by_task_with_written_labels(web_ui, browser):  # noqa: F811 (fixtures)
    browser.get(web_ui.url)
    open_custom_parameters(browser)
    shown = [(dest, group) for dest, group in form_order() if field_box(browser, dest).is_displayed()]
    order = [dest for dest, _group in shown]
    tops = [field_box(browser, dest).rect["y"] for dest in order]
    assert tops == sorted(tops), [d for d, a, b in zip(order, tops, tops[1:], strict=False) if a > b]
    assert {dest: shown_label(browser, dest) for dest in order} == {dest: labels()[dest] for dest in order}
    groups = {}
    for dest, group in shown:  # (the Workload field is hidden when classes are named, as here)
        groups.setdefault(group, dest)
    for group, first in groups.items():
        assert field_box(browser, first).get_attribute("data-suite-group") == group
    screenshot(browser, "webui-form-grouped.png", height=1300, focus=field_box(browser, "triton_http"))


def test_a_start_up_error_is_shown_at_its_field(web_ui, browser, triton):  # noqa: F811 (fixtures)
    before = model_stats(triton.http_address, "identity")
    browser.get(web_ui.url)
    open_custom_parameters(browser)
    fill(browser, "model", "identiy")
    start(browser, users=1)
    box = wait_for(
        lambda: (b := field_box(browser, "model")).get_attribute("data-suite-error") and b,
        "the error never showed at the model field",
    )
    assert "did you mean 'identity'" in box.get_attribute("data-suite-error")
    assert abs(box.rect["y"] - browser.execute_script("return window.scrollY + window.innerHeight / 2")) < 400
    screenshot(browser, "webui-form-error.png", height=900, focus=box)
    assert model_stats(triton.http_address, "identity") == before


def test_header_host_names_the_address_the_classes_load(triton, browser, tmp_path):  # noqa: F811 (fixtures)
    """The header's "Host" of a gRPC class's web UI is Triton's gRPC address, not its HTTP one."""
    with launch(tmp_path, ["TritonGrpcUser", "--model", "identity", *triton_options(triton, 1)]) as ui:
        browser.get(ui.url)
        host = wait_for(lambda: header_text(browser, "Host"), "the header never showed a Host")
    assert host == f"grpc://{triton.grpc_address}", host
