"""Options reach the run from every source: command line, environment, locust.conf, and workers."""

from __future__ import annotations

import pytest

from analysis import load_run
from analysis.run import RunDirectoryError
from tests.helpers import run_cli


def test_environment_variables_configure_the_run(triton, tmp_path):
    env = {
        "LOCUST_TRITON_GRPC": triton.grpc_address,
        "LOCUST_MODEL": "identity",
        "LOCUST_BATCH_SIZE": "3",
        "LOCUST_RUN_DIR": str(tmp_path / "run"),
    }
    args = ["-m", "locust", "-f", "locustfile.py", "--headless", "-u", "1", "-t", "2s", "TritonGrpcUser"]
    result = run_cli(args, env=env)
    assert result.returncode == 0, result.stderr[-2000:]
    (endpoint,) = load_run(tmp_path / "run").endpoints.values()
    assert endpoint.model == "identity"
    assert endpoint.inferences == 3 * endpoint.requests > 0


def test_locust_conf_configures_the_run(triton, tmp_path):
    conf = tmp_path / "locust.conf"
    conf.write_text(
        f"locustfile = locustfile.py\nheadless = true\nusers = 1\nrun-time = 2s\n"
        f"triton-http = {triton.http_address}\nmodel = identity\nbatch-size = 2\n"
        f"http-json = true\nvalidate-responses = true\nrun-dir = {tmp_path / 'run'}\n"
    )
    result = run_cli(["-m", "locust", "--config", str(conf), "TritonHttpUser"])
    assert result.returncode == 0, result.stderr[-2000:]
    run = load_run(tmp_path / "run")
    (endpoint,) = run.endpoints.values()
    assert endpoint.failures == 0 and endpoint.inferences == 2 * endpoint.requests > 0
    assert run.config["options"]["http_json"] is True


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
