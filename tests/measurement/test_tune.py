"""`python -m loadtests tune` ranks variants by the capacity this host measures for them.

The module's own Triton in explicit model-control mode (`explicit_triton`, from
tests/system/commands/test_tune.py, where tune's other tests against it live) loads
`sleep_40ms_batch4`, whose variants have known capacities: instances x (4 with the dynamic
batcher, else 1) / 40 ms = 25, 50, 100 and 200 requests/s. The search is coarse (precision
100 %, 3 windows a level) to keep the test short: it still separates variants 2x apart.
"""

from __future__ import annotations

import csv
import json

import pytest

from loadtests.tuning.repository_api import (
    RepositoryApi,
    normalised,
    parse_pbtxt,
)
from tests.helpers import REPO_ROOT, run_cli
from tests.refusals.commands.test_tune import SLO, tune_args
from tests.system.commands.test_tune import COARSE, MODEL, tune_triton


@pytest.fixture(scope="module")
def explicit_triton(tmp_path_factory):
    yield from tune_triton(tmp_path_factory)


def test_tune_measures_the_variants_skips_those_that_cannot_win_ranks_them_and_restores(explicit_triton, tmp_path):
    """Four variants, each search from its saturation probe (no --start-rate). In the order
    tried (instances=1 off, 1 on, 2 off, 2 on: 25, 100, 50, 200 requests/s) the third one's
    probe saturates below the best capacity so far and its search is skipped; the others are
    measured, ranked by capacity, and the original configuration is loaded back."""
    api = RepositoryApi(explicit_triton.http_address)
    before = api.config(MODEL)
    out = tmp_path / "tune"
    args = tune_args(
        explicit_triton,
        out,
        "--model",
        MODEL,
        "--vary",
        "instances=1,2",
        "--vary",
        "dynamic_batching=off,on",
        "--slo",
        SLO,
        # No --start-rate: each search starts from its probe. Probes of 2 s and 0.5-s windows:
        # the capacities are 2x apart or more, which 3 windows of 12-100 requests still tell apart.
        "--probe-time",
        "2",
        "--measurement-interval",
        "500",
        *COARSE,
    )
    result = run_cli(args, timeout=900)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-3000:]

    # The original configuration is back, as Triton reports it.
    assert api.config(MODEL) == before

    content = json.loads((out / "tune.json").read_text())
    variants = content["variants"]
    assert sorted(v["name"] for v in variants) == sorted(
        f"instances={i} dynamic_batching={b}" for i in (1, 2) for b in ("off", "on")
    )
    measured = [v for v in variants if v["status"] == "measured"]
    (skipped,) = [v for v in variants if v["status"] != "measured"]
    # Each variant ran with its settings (the config Triton reported while it was loaded).
    for variant in variants:
        groups = variant["config"]["instance_group"]
        assert [g["count"] for g in groups] == [variant["settings"]["instances"]]
        assert ("dynamic_batching" in variant["config"]) == variant["settings"]["dynamic_batching"]
    for variant in measured:
        levels = json.loads((REPO_ROOT / variant["capacity_run"] / "capacity.json").read_text())["levels"]
        assert variant["levels"] == len(levels) and variant["capacity_rps"] is not None
        # Triton formed batches only where the batcher was on.
        if variant["settings"]["dynamic_batching"]:
            assert variant["avg_batch"] > 1.0
        else:
            assert variant["avg_batch"] == 1.0

    # The skipped one: two instances without the batcher saturate below one with it.
    assert skipped["settings"] == {"instances": 2, "dynamic_batching": False}
    assert skipped["status"].startswith("stopped after the probe: saturated at "), skipped["status"]
    capacity = json.loads((REPO_ROOT / skipped["capacity_run"] / "capacity.json").read_text())
    best_before = max(v["capacity_rps"] for v in measured if v["settings"]["instances"] == 1)  # tried before it
    assert capacity["levels"] == [] and capacity["skipped"]["probe_rps"] < best_before
    assert capacity["skipped"]["stop_below_rps"] == float(f"{best_before:g}")  # as tune passes it on
    assert not (REPO_ROOT / skipped["capacity_run"] / "summary.json").exists()  # no search ran

    # Ranked by capacity, best first, the skipped one last; the known capacities put a batching
    # variant first and one instance without the batcher (8x below the best) last of the measured.
    assert [v["rank"] for v in variants] == [1, 2, 3, 4]
    assert variants[-1] is skipped
    capacities = [v["capacity_rps"] for v in measured]
    assert variants[: len(measured)] == measured
    assert capacities == sorted(capacities, reverse=True)
    assert capacities[0] > capacities[-1]
    assert measured[0]["settings"]["dynamic_batching"] is True
    assert measured[-1]["settings"] == {"instances": 1, "dynamic_batching": False}
    assert content["winner"] == variants[0]["name"]

    with open(out / "tune.csv", newline="") as file:
        rows = list(csv.DictReader(file))
    assert [row["variant"] for row in rows] == [v["name"] for v in variants]
    assert [float(row["capacity_rps"]) for row in rows[: len(measured)]] == capacities

    # The winner's config.pbtxt says what Triton ran it with.
    written = (out / "config.pbtxt").read_text()
    assert parse_pbtxt(written) == normalised(variants[0]["config"])
    assert (out / "compare" / "compare.html").is_file()
    assert f"winner: {variants[0]['name']}" in result.stdout
