"""The form's Model field offers the models Triton has ready, and a model with variable dims
fills the Shape field with what the suite's own refusal would suggest (issue 36, item 1).

Headless Chromium against the session's Triton, and against a Triton of the test's own started
after the web UI (a reload then shows its models). With TRITON_LOADTEST_SCREENSHOTS=docs/images
the tests save the screenshot the docs show.
"""

from __future__ import annotations

from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.select import Select

from loadtests.config.model_spec import ModelSpec
from loadtests.server import LocalTriton, TritonPorts
from loadtests.server.serve import model_control_args
from loadtests.workloads.generic import suggested_shapes
from tests.helpers import THROWAWAY_STOP_S, model_stats, repository_of, start_triton
from tests.system.run.test_webui_browser import (  # noqa: F401  (fixtures)
    browser,
    chromium,
    fill,
    pytestmark,
    screenshot,
    submit,
    wait_for,
    wait_running,
)
from tests.system.run.test_webui_form import field_box
from tests.system.run.test_webui_newcomer import (
    choose_workload,
    form_errors,
    newcomer_ui,
    start_with_users,
    stop_and_read,
)

VARIABLE = "bert_qa_dynbatch"  # inputs input_ids, segment_ids, input_mask: dims [-1]


def suggested(driver: WebDriver) -> list[str]:
    """The Model field's suggestions, once the page has Triton's answer (the list bound to the field)."""
    field = driver.find_element(By.NAME, "model")
    wait_for(lambda: field.get_attribute("list"), "the Model field is bound to no list of suggestions")
    answered = f"datalist#{field.get_attribute('list')}[data-suite-answered]"
    (datalist,) = wait_for(lambda: driver.find_elements(By.CSS_SELECTOR, answered), "the suggestions never came")
    return [option.get_attribute("value") for option in datalist.find_elements(By.TAG_NAME, "option")]


def ready_models(triton) -> list[str]:
    return sorted({entry["name"] for entry in triton.control().repository_index(ready=True)})


def shape_value(driver: WebDriver) -> str:
    return driver.find_element(By.NAME, "shape").get_attribute("value")


def test_the_model_field_suggests_the_models_triton_has_ready(triton, browser, tmp_path):  # noqa: F811 (fixtures)
    with newcomer_ui(tmp_path, triton) as ui:
        browser.get(ui.url)
        assert suggested(browser) == ready_models(triton)


def test_a_model_with_variable_dims_fills_the_shape_field_and_the_test_runs(triton, browser, tmp_path):  # noqa: F811
    """The filled --shape is the refusal's own suggestion, and START runs the model with it."""
    control = triton.control()
    spec = ModelSpec.from_triton(control.model_metadata(VARIABLE), control.model_config(VARIABLE))
    expected = suggested_shapes(spec)
    assert expected.count(":") == len(spec.inputs) == 3  # one NAME:DIMS per variable input
    before = model_stats(triton.http_address, VARIABLE)["requests"]
    with newcomer_ui(tmp_path, triton) as ui:
        browser.get(ui.url)
        assert VARIABLE in suggested(browser)
        choose_workload(browser, "TritonHttpUser")
        # Zero ids are BERT's [PAD] tokens; random ones fall outside its two segment ids.
        Select(browser.find_element(By.NAME, "dataMode")).select_by_value("zero")
        fill(browser, "model", VARIABLE)
        wait_for(lambda: shape_value(browser) == expected, f"the Shape field never held {expected!r}")
        hint = field_box(browser, "shape").get_attribute("data-suite-help")
        assert f"filled from {VARIABLE}'s metadata" in hint, hint
        batch = field_box(browser, "batch_size")  # between Model and Shape: both in the picture
        screenshot(browser, "webui-model-suggestions.png", height=1000, width=1400, focus=batch)
        start_with_users(browser, 1)
        wait_running(browser, 1)
        _run_dir, summary, _rows = stop_and_read(browser, ui.run_dir)
    (endpoint,) = summary["endpoints"]
    assert endpoint["name"] == f"{VARIABLE} [http]" and endpoint["failures"] == 0
    assert model_stats(triton.http_address, VARIABLE)["requests"] - before == endpoint["requests"] > 0


def test_a_shape_the_user_typed_is_kept_and_a_bad_one_keeps_its_error_line(triton, browser, tmp_path):  # noqa: F811
    typed = "input_ids:x"
    before = model_stats(triton.http_address, VARIABLE)
    with newcomer_ui(tmp_path, triton) as ui:
        browser.get(ui.url)
        suggested(browser)
        choose_workload(browser, "TritonHttpUser")
        fill(browser, "shape", typed)
        fill(browser, "model", VARIABLE)
        submit(browser)
        (error,) = wait_for(lambda: form_errors(browser), "START showed no error")
        assert shape_value(browser) == typed
        box = wait_for(
            lambda: (b := field_box(browser, "shape")).get_attribute("data-suite-error") and b,
            "the error never showed at the Shape field",
        )
        assert box.get_attribute("data-suite-error") == error and error.startswith("error: bad --shape")
    assert model_stats(triton.http_address, VARIABLE) == before


def test_a_triton_started_after_the_ui_and_a_model_loaded_later_show_after_a_reload(browser, tmp_path):  # noqa: F811
    """No Triton yet: no suggestions and no error on the page; then Triton with identity, then sleep loaded."""
    repository = repository_of(tmp_path / "models", "identity", "sleep")
    server = LocalTriton(
        [repository],
        ports=TritonPorts.free(),
        log_file=tmp_path / "triton.log",
        extra_args=model_control_args("explicit", ["identity"]),
        stop_timeout_s=THROWAWAY_STOP_S,
    )
    try:
        with newcomer_ui(tmp_path, server) as ui:
            browser.get(ui.url)
            assert suggested(browser) == []
            assert not browser.find_elements(By.CSS_SELECTOR, "[role=alert], [data-suite-error]")
            start_triton(server)
            browser.get(ui.url)
            assert suggested(browser) == ["identity"]
            server.control().load("sleep")
            browser.get(ui.url)
            assert suggested(browser) == ["identity", "sleep"]
    finally:
        server.stop()
