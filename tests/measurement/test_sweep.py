"""Sweeps against the real local Triton: concurrency and request-rate levels stabilised by
perf_analyzer's rule, distributed workers, mixes over both protocols. The range grammar, the
stability rule and the level controller are tested with fake windows in tests/unit/levels/test_sweep.py.
"""

from __future__ import annotations

import csv
import itertools
import json

import pytest

from tests.helpers import read_summary, run_cli, triton_options
from tests.system.commands.test_capacity import PROTOCOLS, check_mix_endpoints
from tests.unit.levels.test_sweep import PA_HEADER, sweep


def test_concurrency_sweep_against_triton(triton, tmp_path, bound):
    # `sleep`: 20 ms per request on 8 instances, so N users reach about N * 50 requests/s.
    run_dir = tmp_path / "sweep"
    # The sweep's mechanics, not this host's steadiness (as the rate sweep below): with the default
    # 10 %, 1-s windows of about 50 requests at one user were once "unstable" beside the other
    # shard's image-decoding tests (exit code 5). An unstable level's exit code has its own test.
    steadiness = ["--stability-percentage", "50", "--max-trials", "8"]
    result = sweep(triton, run_dir, "--concurrency", "1:3:1", "--measurement-interval", "1000", *steadiness)
    assert result.returncode == 0, result.stderr[-3000:]
    table = result.stdout[result.stdout.index("Inferences/Second vs. Client p95 Batch Latency") :].splitlines()
    assert [line.split(",")[0] for line in table[1:4]] == ["Concurrency: 1", "Concurrency: 2", "Concurrency: 3"]

    content = json.loads((run_dir / "sweep.json").read_text())
    assert content["mode"] == "concurrency" and content["stopped_by"] == "done"
    levels = content["levels"]
    assert [level["level"] for level in levels] == [1, 2, 3]
    for n, level in enumerate(levels, start=1):
        # Closed loop: N users, each waiting for its answer, send N / latency requests per second
        # (about 50 N when the shared 2-core machine is quiet; Little's law whatever its load).
        little = n / (level["latency_us"]["mean"] / 1e6)
        bound(f"level {n}: throughput / Little's law", level["throughput_rps"] / little, near=1.0, rel=0.2)
        bound(f"level {n}: p50 (us)", level["latency_us"]["p50"], at_least=20000, at_most=40000, context=level)
        assert level["failures"] == 0
        # Triton's count over the same windows: the requests the client completed in them.
        server = level["server"]["sleep"]
        assert server["requests"] == pytest.approx(level["requests"], abs=max(3, 0.05 * level["requests"]))
        bound(f"level {n}: compute infer (us)", server["compute_infer_us"], near=20000, rel=0.15)
        assert 0 <= level["start_s"] < level["end_s"]
    assert all(a["end_s"] <= b["start_s"] for a, b in itertools.pairwise(levels))
    throughputs = [level["throughput_infer_per_s"] for level in levels]
    bound("level 2 / level 1 throughput", throughputs[1] / throughputs[0], at_least=1.4, context=levels)
    bound("level 3 / level 2 throughput", throughputs[2] / throughputs[1], at_least=1.1, context=levels)

    with (run_dir / "sweep.csv").open() as file:
        lines = file.read().splitlines()
    assert lines[0] == PA_HEADER
    rows = list(csv.DictReader(lines))
    assert [row["Concurrency"] for row in rows] == ["1", "2", "3"]  # level order
    assert all(row["Client Send"] == "" and row["Client Recv"] == "" for row in rows)
    summary = read_summary(run_dir)["server"]["sleep"]
    for row, level in zip(rows, levels, strict=True):
        assert float(row["Inferences/Second"]) == pytest.approx(level["throughput_infer_per_s"], rel=1e-3)
        assert int(row["p95 latency"]) == int(level["latency_us"]["p95"])
        # The same per-request server numbers as summary.json's, over the level's windows.
        assert int(row["Server Compute Infer"]) == pytest.approx(summary["compute_infer_us"], rel=0.1)
        # Triton's time per request, over the level's windows, fits inside what the client measured
        # (a server delta over the wrong span would not); the rest is the network column.
        in_server = sum(int(row[key]) for key in ("Server Queue", "Server Compute Input", "Server Compute Infer"))
        in_server += int(row["Server Compute Output"])
        assert 0 < in_server <= level["latency_us"]["mean"], (row, level)
    steps = json.loads((run_dir / "steps.json").read_text())
    assert [step["target"] for step in steps["steps"]] == [1, 2, 3]


def test_sweep_with_distributed_workers(triton, tmp_path, bound):
    run_dir = tmp_path / "workers"
    steadiness = ["--stability-percentage", "50", "--max-trials", "8"]  # the workers, not the host's steadiness
    result = sweep(
        triton, run_dir, "--concurrency", "1:2:1", "--measurement-interval", "1000", "--workers", "2", *steadiness,
        timeout=180,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    levels = json.loads((run_dir / "sweep.json").read_text())["levels"]
    assert [level["level"] for level in levels] == [1, 2]
    ratio = levels[1]["throughput_infer_per_s"] / levels[0]["throughput_infer_per_s"]
    bound("level 2 / level 1 throughput", ratio, at_least=1.4, context=levels)
    assert levels[0]["server"]["sleep"]["requests"] == pytest.approx(levels[0]["requests"], rel=0.05)


def test_a_sweep_over_a_mix_judges_the_mix_as_one_load(triton, tmp_path, bound):
    """--mix instead of --model: each level holds the mix's users, each request drawn by weight;
    a level's numbers are the whole mix, and Triton's counts per model add up to them."""
    run_dir = tmp_path / "mix"
    result = run_cli(
        ["-m", "loadtests", "sweep", "--mix", "sleep:0.5,identity:0.5", "--shape", "INPUT0:16"]
        + ["--concurrency", "2:4:2", "--measurement-interval", "1000", "--run-dir", str(run_dir)]
        # What is checked here is the mix's accounting, not its stability: each request draws
        # 20 ms or 0.5 ms, and on a busy host 1-s windows at 4 users once stayed more than 10 %
        # apart for every trial (exit 5).
        + ["--stability-percentage", "25"]
        + triton_options(triton),
        timeout=150,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    levels = json.loads((run_dir / "sweep.json").read_text())["levels"]
    assert [level["level"] for level in levels] == [2, 4]
    for level in levels:
        served = {model: level["server"][model]["requests"] for model in ("sleep", "identity")}
        assert sum(served.values()) == pytest.approx(level["requests"], abs=max(4, 0.05 * level["requests"]))
        # Both models in every level, about half each (binomial: 4 standard deviations).
        spread = 4 * (0.25 / level["requests"]) ** 0.5
        assert abs(served["sleep"] / sum(served.values()) - 0.5) <= spread + 0.02, served
    # Closed loop: twice the users, about twice the mix's throughput (half its requests wait 20 ms).
    bound("level 4 / level 2 throughput", levels[1]["throughput_rps"] / levels[0]["throughput_rps"], at_least=1.4)
    summary = read_summary(run_dir)
    for model in ("sleep", "identity"):
        (endpoint,) = [e for e in summary["endpoints"] if e["model"] == model]
        assert endpoint["requests"] == summary["server"][model]["requests"]  # every request, Triton's count


# The protocols each --protocol sends over (the model's endpoints are named "<model> [<protocol>]").


# Each protocol choice once and each mode once: both protocols share a closed loop's users here;
# how an open loop's sends are shared by an HTTP and a gRPC user is test_open_loop.py's
# test_open_loop_splits_the_rate_over_the_user_classes, and a capacity search (open loop) over a
# mix over both protocols is test_capacity.py's.
@pytest.mark.parametrize(("protocol", "mode"), [("both", "--concurrency"), ("grpc", "--request-rate")])
def test_a_sweep_over_a_mix_over_grpc_or_both_protocols(triton, tmp_path, protocol, mode, bound):
    """--protocol grpc or both with --mix: each level's requests go over the protocols asked for
    (both: half the users, or half the rate, each), and the level's numbers are the whole mix."""
    run_dir, models = tmp_path / "mix", ("identity", "sleep_batch")
    level = "4" if mode == "--concurrency" else "60"
    result = run_cli(
        ["-m", "loadtests", "sweep", "--mix", ",".join(f"{m}:0.5" for m in models), "--shape", "INPUT0:16"]
        + [mode, level, "--protocol", protocol, "--measurement-interval", "500", "--run-dir", str(run_dir)]
        + triton_options(triton),
        timeout=150,
    )
    # This test is about which protocols carry the mix: a level that did not stabilise in its
    # 0.5-s windows on a busy machine exits 5 (perf_analyzer's rule), and still holds the numbers.
    (swept,) = json.loads((run_dir / "sweep.json").read_text())["levels"]
    assert result.returncode == (0 if swept["stable"] else 5), result.stderr[-3000:]
    assert swept["level"] == float(level)
    # As the --mix sweep above: the level's windows and the server snapshots bounding it may differ by a few.
    served = sum(swept["server"][m]["requests"] for m in models)
    assert served == pytest.approx(swept["requests"], abs=max(4, 0.05 * swept["requests"]))
    summary = read_summary(run_dir)
    check_mix_endpoints(summary, models, PROTOCOLS[protocol])
    if protocol == "both":  # half the users (closed loop) or half the sends (open loop) each
        by_protocol = {
            p: sum(e["requests"] for e in summary["endpoints"] if e["protocol"] == p) for p in PROTOCOLS[protocol]
        }
        bound("http / grpc requests", by_protocol["http"] / by_protocol["grpc"], near=1.0, rel=0.5, context=by_protocol)


def test_request_rate_sweep_against_triton(triton, tmp_path, bound):
    # Open loop: each level's rate is sent whatever the latency (sleep_batch batches, so it keeps up).
    run_dir = tmp_path / "rate"
    result = run_cli(
        ["-m", "loadtests", "sweep", "--model", "sleep_batch", "--shape", "INPUT0:16", "--run-dir", str(run_dir)]
        + [*triton_options(triton), "--request-rate", "50:150:50", "--measurement-interval", "1000"]
        # The sweep's mechanics, not this host's steadiness: a level once failed the default 10 %
        # stability with other test processes on two cores (exit code 5, "unstable").
        + ["--stability-percentage", "50", "--max-trials", "8"],
        timeout=150,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Request Rate: 50, throughput:" in result.stdout
    content = json.loads((run_dir / "sweep.json").read_text())
    assert content["mode"] == "request_rate" and content["stopped_by"] == "done"
    levels = content["levels"]
    assert [level["level"] for level in levels] == [50, 100, 150]
    for level in levels:
        bound(f"rate {level['level']:g}: throughput (rps)", level["throughput_rps"], near=level["level"], rel=0.1)
        # Triton's count between the level's snapshots, the client's in the same windows: the
        # requests in flight at either boundary and the snapshots' own delay may differ (296 for
        # 300 once on a busy host); a window too many or too few would be 100 or more.
        server = level["server"]["sleep_batch"]
        assert server["requests"] == pytest.approx(level["requests"], abs=max(3, 0.05 * level["requests"]))
    with (run_dir / "sweep.csv").open() as file:
        rows = list(csv.DictReader(file))
    assert [row["Request Rate"] for row in rows] == ["50", "100", "150"]
    summary = read_summary(run_dir)
    assert summary["traffic"]["mode"] == "constant" and summary["traffic"]["rate_shape"] == "sweep"
    assert "latency_uncorrected_us" in summary["endpoints"][0]
