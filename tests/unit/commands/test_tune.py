"""`python -m loadtests tune` against a real Triton in explicit model-control mode.

The module's own Triton (started as `python -m loadtests serve --model-control explicit` would
start it) loads `sleep_40ms_batch4` (models/test_repository: 40 ms per execution, batches of up
to 4, one instance, no batcher), whose variants have known capacities: instances x (4 with the
dynamic batcher, else 1) / 40 ms = 25, 50, 100 and 200 requests/s. Here: what tune refuses,
restores and reports; the ranking of measured variants is tests/measurement/test_tune.py.
"""

from __future__ import annotations

import argparse
import subprocess

import pytest

from loadtests.commands.tune import stop_below
from loadtests.errors import SpecError
from loadtests.server.serve import model_control_args
from loadtests.tuning import ranking
from loadtests.tuning.repository_api import (
    RepositoryApi,
    RepositoryError,
    config_pbtxt,
    normalised,
    parse_pbtxt,
)
from loadtests.tuning.variants import Variant, apply, build_variants, parse_axes
from tests.helpers import run_cli


def assert_one_line_error(result: subprocess.CompletedProcess, fragment: str) -> None:
    assert result.returncode == 2, (result.returncode, result.stdout[-2000:], result.stderr[-2000:])
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert fragment in lines[0], lines[0]


def test_serve_model_control_options():
    assert model_control_args("none", []) == []
    assert model_control_args("explicit", []) == ["--model-control-mode=explicit", "--load-model=*"]
    assert model_control_args("explicit", ["a", "b"]) == [
        "--model-control-mode=explicit",
        "--load-model=a",
        "--load-model=b",
    ]
    with pytest.raises(SpecError, match="needs --model-control explicit"):
        model_control_args("none", ["a"])
    with pytest.raises(SpecError, match="give it alone"):
        model_control_args("explicit", ["*", "a"])
    result = run_cli(["-m", "loadtests", "serve", "--load-model", "x", "--http-port", "1"])
    assert_one_line_error(result, "needs --model-control explicit")


def test_require_model_control_names_the_unreachable_server():
    with pytest.raises(RepositoryError, match="cannot reach Triton"):
        RepositoryApi("127.0.0.1:1", timeout_s=2).require_model_control()


# -- pure parts ----------------------------------------------------------------------------------
BASE = {
    "name": "m",
    "max_batch_size": 8,
    "input": [{"name": "INPUT0", "data_type": "TYPE_FP32", "dims": [-1]}],
    "output": [{"name": "OUTPUT0", "data_type": "TYPE_FP32", "dims": [-1]}],
    "instance_group": [{"name": "m_0", "kind": "KIND_CPU", "count": 1, "gpus": []}],
    "parameters": {"sleep_ms": {"string_value": "10"}},
}


def test_variants_are_every_combination_of_the_axes_measured_once():
    axes = parse_axes(["instances=1,2", "dynamic_batching=off,on", "max_queue_delay_us=0,500"])
    variants = build_variants(BASE, axes)
    names = [v.name for v in variants]
    # Queue delays mean nothing with the batcher off: those combinations are one variant each.
    assert names == [
        "instances=1 dynamic_batching=off",
        "instances=1 dynamic_batching=on max_queue_delay_us=0",
        "instances=1 dynamic_batching=on max_queue_delay_us=500",
        "instances=2 dynamic_batching=off",
        "instances=2 dynamic_batching=on max_queue_delay_us=0",
        "instances=2 dynamic_batching=on max_queue_delay_us=500",
    ]
    last = variants[-1].config
    assert last["instance_group"][0]["count"] == 2
    assert last["dynamic_batching"] == {"max_queue_delay_microseconds": 500}
    assert "dynamic_batching" not in variants[0].config
    assert BASE["instance_group"][0]["count"] == 1  # the base is not changed
    assert variants[2].slug == "instances-1_dynamic_batching-on_max_queue_delay_us-500"


def test_variant_settings_reach_the_config():
    config = apply(
        {**BASE, "dynamic_batching": {"preferred_batch_size": [8]}},
        {"max_batch_size": 4, "kind": "KIND_GPU", "preferred_batch_size": (2, 4)},
    )
    assert config["max_batch_size"] == 4
    assert config["instance_group"][0]["kind"] == "KIND_GPU"
    assert config["dynamic_batching"]["preferred_batch_size"] == [2, 4]
    # A smaller max_batch_size drops preferred sizes it could not form (Triton's default [8] here).
    smaller = apply({**BASE, "dynamic_batching": {"preferred_batch_size": [8]}}, {"max_batch_size": 4})
    assert smaller["dynamic_batching"]["preferred_batch_size"] == []


@pytest.mark.parametrize(
    ("specs", "fragment"),
    [
        (["instances=1,1"], "repeats a value"),
        (["instances=2", "instances=3"], "given twice"),
        (["kind=KIND_TPU"], "one of KIND_CPU"),
        (["dynamic_batching=maybe"], "on or off"),
        (["preferred_batch_size=4+x"], "whole number"),
        (["instances"], "NAME=V1,V2"),
    ],
)
def test_bad_axes_are_one_line_spec_errors(specs, fragment):
    with pytest.raises(SpecError, match=fragment):
        parse_axes(specs)


def test_an_ensemble_is_refused():
    with pytest.raises(SpecError, match="ensemble"):
        build_variants({**BASE, "platform": "ensemble"}, parse_axes(["instances=2"]))


def test_pbtxt_round_trips_tritons_json_and_keeps_an_empty_batcher():
    config = {**BASE, "dynamic_batching": {}, "version_policy": {"latest": {"num_versions": 1}}}
    text = config_pbtxt(config)
    assert "dynamic_batching {\n}" in text  # present but empty: the batcher on with defaults
    assert "data_type: TYPE_FP32" in text and "kind: KIND_CPU" in text  # enums unquoted
    assert parse_pbtxt(text) == normalised(config)


def _result(name: str, capacity: float | None, p99_rate: float | None = None, status: str = "measured"):
    variant = Variant({"n": name}, {})
    result = ranking.VariantResult(variant.name, variant.slug, variant.settings, {}, status=status)
    result.capacity_rps, result.p99_at_rate_us = capacity, p99_rate
    return result


def test_a_search_skips_below_the_best_capacity_only_when_it_starts_from_a_probe():
    """Without --start-rate each search starts from a probe, and a variant whose probe saturates
    below the best capacity so far is skipped (--stop-below); with it there is no probe, so every
    variant is searched."""
    measured = [_result("a", 91.6614), _result("b", None, status="load failed: no GPU"), _result("c", 40.0)]
    assert stop_below([], argparse.Namespace(start_rate=None)) == []  # nothing measured yet
    assert stop_below(measured, argparse.Namespace(start_rate=None)) == ["--stop-below", "91.6614"]
    assert stop_below(measured, argparse.Namespace(start_rate=20.0)) == []


def test_ranking_is_by_capacity_then_p99_at_the_rate_with_failures_last():
    ranked = ranking.rank(
        [
            _result("a", 50.0, 9_000.0),
            _result("b", None, status="load failed: no GPU"),
            _result("c", 80.0),
            _result("d", 50.0, 7_000.0),
            _result("e", None),
        ]
    )
    assert [r.settings["n"] for r in ranked] == ["c", "d", "a", "e", "b"]
    assert [r.rank for r in ranked] == [1, 2, 3, 4, 5]
    assert "load failed: no GPU" in ranking.table(ranked, 50.0)
