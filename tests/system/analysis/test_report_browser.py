"""Reports and comparisons in headless Chromium at 1,400 px: every table fits the window, no
column hides behind a scrollbar (details one click away, in <details>)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from analysis.compare import write_comparison
from analysis.report import write_report
from tests.system.analysis.test_report import stepped_run, two_class_run  # noqa: F401  (module fixtures: real runs)
from tests.system.run.test_webui_browser import CHROMEDRIVER, CHROMIUM, browser, chromium  # noqa: F401  (the Selenium fixtures)

pytestmark = pytest.mark.skipif(
    not (CHROMIUM.exists() and CHROMEDRIVER.exists()),
    reason="needs Debian's chromium and chromium-driver (bash tests/install_browser.sh)",
)
WINDOW_PX = 1400


def overflowing_tables(driver, page: Path) -> list[str]:
    """Every visible table wider than its box (a horizontal scrollbar), by its first header row."""
    driver.set_window_size(WINDOW_PX, 1000)
    driver.get(page.as_uri())
    assert driver.execute_script("return window.innerWidth") <= WINDOW_PX
    return driver.execute_script(
        """
        const out = [];
        for (const wrap of document.querySelectorAll('div.table-wrap')) {
          if (wrap.closest('details:not([open])')) continue;  // one click away, not on the page
          if (wrap.scrollWidth > wrap.clientWidth + 1 || wrap.getBoundingClientRect().right > window.innerWidth)
            out.push(wrap.scrollWidth + ' px: ' + wrap.querySelector('tr').innerText.slice(0, 120));
        }
        return out;
        """
    )


def test_report_tables_fit_a_1400_px_window(two_class_run, tmp_path, browser):  # noqa: F811
    run_dir = Path(shutil.copytree(two_class_run, tmp_path / "run"))
    html = write_report(run_dir)
    assert overflowing_tables(browser, html) == []
    # The columns left out are one click away: the full table in a <details> below.
    text = html.read_text()
    assert "<details>" in text and "p99.9 (ms)" in text.split("<details>", 1)[1]


def test_comparison_tables_fit_a_1400_px_window(stepped_run, tmp_path, browser):  # noqa: F811
    copy = Path(shutil.copytree(stepped_run, tmp_path / "again"))
    html = write_comparison([stepped_run, copy], ["bert_qa", "bert_qa_dynbatch"], tmp_path / "cmp")
    assert overflowing_tables(browser, html) == []
