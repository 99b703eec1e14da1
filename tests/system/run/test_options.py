"""Options reach the run from every source: command line, environment, locust.conf, and workers.

The tests here need a real Triton or a browser; the others, and this feature's account, are in
tests/unit/run/test_options.py.
"""

from __future__ import annotations

from analysis import load_run
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
