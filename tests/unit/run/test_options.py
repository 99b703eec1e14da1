"""Options reach the run from every source: command line, environment, locust.conf, and workers."""

from __future__ import annotations

import pytest

from analysis import load_run
from analysis.run import RunDirectoryError
from tests.helpers import run_cli


def test_load_run_says_what_is_missing(tmp_path):
    with pytest.raises(RunDirectoryError, match="does not exist"):
        load_run(tmp_path / "nowhere")
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(RunDirectoryError, match=r"summary\.json is missing"):
        load_run(tmp_path)


def test_analysis_imports_without_locust():
    code = "import sys, analysis; print('locust' in sys.modules, 'gevent' in sys.modules)"
    result = run_cli(["-c", code])
    assert result.stdout.strip() == "False False", result.stderr
