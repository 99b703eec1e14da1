"""`python -m loadtests tune` against a real Triton in explicit model-control mode.

The tests here need a real Triton or a browser; the others, and this feature's account, are in
tests/unit/commands/test_tune.py.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from loadtests.server import TEST_REPOSITORY
from loadtests.tuning.repository_api import (
    RepositoryApi,
    restore_original,
)
from loadtests.tuning.variants import apply
from models.conformance import CONFORMANCE_REPOSITORY
from tests.helpers import REPO_ROOT, explicit_mode_triton, interruptible, model_stats, run_cli, run_clis
from tests.refusals.commands.test_tune import SLO, tune_args
from tests.unit.commands.test_tune import assert_one_line_error

MODEL = "sleep_40ms_batch4"
NO_BATCH_MODEL = "echo_fp32_nobatch"
# The search's resolution: coarse, 3 windows a level.
COARSE = ["--precision", "100", "--max-trials", "3", "--settle-windows", "0", "--shape", "INPUT0:16"]
QUICK_SEARCH = ["--start-rate", "20", "--growth", "4", "--measurement-interval", "1000", *COARSE]


def tune_triton(tmp_path_factory):
    """This module's Triton: MODEL and NO_BATCH_MODEL loaded (the non-batching echo model lives
    with the conformance models; explicit mode loads only the two named)."""
    directory = tmp_path_factory.mktemp("explicit-triton")
    yield from explicit_mode_triton(directory, [TEST_REPOSITORY, CONFORMANCE_REPOSITORY], [MODEL, NO_BATCH_MODEL])


@pytest.fixture(scope="module")
def explicit_triton(tmp_path_factory):
    yield from tune_triton(tmp_path_factory)


def test_a_variant_triton_cannot_load_is_reported_and_the_original_restored(explicit_triton, tmp_path):
    """KIND_GPU on this GPU-less machine: Triton refuses the load; nothing is measured (exit 1)."""
    api = RepositoryApi(explicit_triton.http_address)
    before = api.config(MODEL)
    out = tmp_path / "gpu"
    result = run_cli(
        tune_args(explicit_triton, out, "--model", MODEL, "--vary", "kind=KIND_GPU", "--slo", SLO, *QUICK_SEARCH)
    )
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-3000:]
    content = json.loads((out / "tune.json").read_text())
    assert content["variants"][0]["status"].startswith("load failed: ")
    assert "GPU" in content["variants"][0]["status"]
    assert content["winner"] is None and not (out / "config.pbtxt").exists()
    assert api.config(MODEL) == before


def test_ctrl_c_stops_the_measurement_and_restores_the_original(explicit_triton, tmp_path):
    api = RepositoryApi(explicit_triton.http_address)
    before = api.config(MODEL)
    out = tmp_path / "interrupted"
    args = tune_args(explicit_triton, out, "--model", MODEL, "--vary", "instances=2", "--slo", SLO, *QUICK_SEARCH)
    # A terminal's Ctrl-C reaches the whole foreground process group: tune and the search it runs.
    process = subprocess.Popen(
        [sys.executable, *args],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        preexec_fn=interruptible,
    )
    deadline = time.monotonic() + 120
    while not list(out.glob("variants/*/capacity/*")):  # written once the variant is loaded
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()
        time.sleep(0.2)
    time.sleep(3)  # the search is sending load
    assert api.config(MODEL)["instance_group"][0]["count"] == 2
    os.killpg(process.pid, signal.SIGINT)
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stdout.decode()[-3000:] + stderr.decode()[-3000:]
    assert api.config(MODEL) == before
    assert json.loads((out / "tune.json").read_text())["interrupted"] is True


def test_bad_input_is_refused_before_anything_is_loaded(explicit_triton, tmp_path):
    api = RepositoryApi(explicit_triton.http_address)
    configs = {model: api.config(model) for model in (MODEL, NO_BATCH_MODEL)}
    stats = {model: model_stats(explicit_triton.http_address, model) for model in (MODEL, NO_BATCH_MODEL)}
    cases = [
        (["--model", "no_such_model", "--vary", "instances=2"], "not in Triton's model repositories"),
        (["--model", "echo_fp32", "--vary", "instances=2"], "is not loaded"),  # in the repository, not loaded
        (["--model", NO_BATCH_MODEL, "--vary", "dynamic_batching=on"], "max_batch_size 0"),
        (["--model", NO_BATCH_MODEL, "--vary", "max_batch_size=8"], "changes the shapes"),
        (["--model", MODEL, "--vary", "preferred_batch_size=8", "--vary", "dynamic_batching=on"], "above max_batch"),
        (["--model", MODEL, "--vary", "max_queue_delay_us=100"], "needs dynamic batching"),
        (["--model", MODEL, "--vary", "threads=2"], "NAME one of"),
        (["--model", MODEL, "--vary", "instances=0"], "must be at least 1"),
        (["--model", MODEL], "--vary is required"),
        (["--model", MODEL, "--vary", "instances=2", "--run-dir", "x"], "--run-dir is set by tune"),
        (["--model", MODEL, "--vary", "instances=2", "--slo", "rps>5"], "upper limits"),
        # A clause on a model the search does not drive: refused as capacity refuses it, before
        # any variant is loaded (the same check, commands/args.py::search_slo_clauses).
        (["--model", MODEL, "--vary", "instances=2", "--slo", "other:p99<5ms"], f"the search drives {MODEL} only"),
    ]
    commands = [
        tune_args(explicit_triton, tmp_path / "never", *extra, *([] if "--slo" in extra else ["--slo", SLO]))
        for extra, _ in cases
    ]
    for (_, fragment), result in zip(cases, run_clis(commands), strict=True):
        assert_one_line_error(result, fragment)
    assert not (tmp_path / "never").exists()
    assert {model: api.config(model) for model in configs} == configs
    assert {model: model_stats(explicit_triton.http_address, model) for model in stats} == stats


def test_restore_unloads_when_a_plain_load_keeps_the_override(explicit_triton):
    """Triton 2.51 keeps an override on a load without one: restore must still get back."""
    api = RepositoryApi(explicit_triton.http_address)
    before = api.config(MODEL)
    api.load(MODEL, apply(before, {"instances": 2}))
    api.load(MODEL, None)
    assert api.config(MODEL)["instance_group"][0]["count"] == 2  # the fact restore works around
    assert restore_original(api, MODEL, before) == "unloaded and loaded from the repository"
    assert api.config(MODEL) == before


def test_options_the_search_refuses_stop_tune_after_restoring(explicit_triton, tmp_path):
    """A forwarded option only capacity checks (here --measurement-interval 0) ends tune, exit 2."""
    api = RepositoryApi(explicit_triton.http_address)
    before = api.config(MODEL)
    args = tune_args(explicit_triton, tmp_path / "refused", "--model", MODEL, "--vary", "instances=2", "--slo", SLO)
    result = run_cli([*args, "--measurement-interval", "0"])
    assert result.returncode == 2, result.stdout[-3000:] + result.stderr[-3000:]
    assert "--measurement-interval must be positive" in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith("error: the capacity search refused its options")
    assert api.config(MODEL) == before
