"""The form's details (issue 36, finding 6): each option's help readable in full, `%` shown as
typed, and a run directory typed into the form used for the test and kept after a reload.

Headless Chromium against the session's Triton.
"""

from __future__ import annotations

from selenium.webdriver.common.by import By

from tests.system.run.test_webui_browser import (  # noqa: F401  (fixtures)
    browser,
    chromium,
    click_button,
    fill,
    open_custom_parameters,
    pytestmark,
    start,
    wait_for,
    wait_running,
    web_ui,
)
from tests.system.run.test_webui_form import field_box
from tests.system.run.test_webui_newcomer import form_errors, stop_and_read


def help_style(driver, dest: str) -> dict[str, str]:
    """How the help under a field is drawn (the ::after of its box)."""
    return driver.execute_script(
        """
        const style = getComputedStyle(arguments[0], '::after');
        return {clamp: style.webkitLineClamp, overflow: style.overflow, display: style.display};
        """,
        field_box(driver, dest),
    )


def test_help_is_readable_in_full_with_percent_signs_as_written(web_ui, browser):  # noqa: F811 (fixtures)
    browser.get(web_ui.url)
    open_custom_parameters(browser)
    for dest in ("mix", "shape_args", "slo", "trace_sample"):
        style = help_style(browser, dest)
        assert style["clamp"] in ("none", "") and style["overflow"] == "visible", (dest, style)
    trace_help = field_box(browser, "trace_sample").get_attribute("data-suite-help")
    assert "(e.g. 1%)" in trace_help and "%%" not in trace_help, trace_help
    assert "%%" not in field_box(browser, "trace_sample").get_attribute("title")


def test_a_run_directory_typed_in_the_form_is_used_and_kept_after_a_reload(web_ui, browser):  # noqa: F811
    typed = web_ui.run_dir.with_name("typed-in-the-form")
    browser.get(web_ui.url)
    open_custom_parameters(browser)
    fill(browser, "runDir", str(typed))
    start(browser, users=1)
    wait_for(lambda: form_errors(browser) or (typed / "config.json").exists(), "the test neither ran nor failed")
    assert not form_errors(browser), form_errors(browser)
    wait_running(browser, 1)
    run_dir, _summary, _rows = stop_and_read(browser, typed.parent, typed.name)
    assert run_dir == typed and not web_ui.run_dir.exists()
    browser.get(web_ui.url)  # a reload: the form as the last START left it
    click_button(browser, "NEW")
    open_custom_parameters(browser)
    assert browser.find_element(By.NAME, "runDir").get_attribute("value") == str(typed)


def test_the_workload_field_is_hidden_when_classes_are_named(web_ui, browser):  # noqa: F811 (fixtures)
    """`locust -f locustfile.py TritonHttpUser ...`: the named class runs, the form's Workload field does not apply."""
    browser.get(web_ui.url)
    open_custom_parameters(browser)
    assert not browser.find_element(By.NAME, "userClass").is_displayed()
