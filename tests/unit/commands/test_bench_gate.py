"""`make bench-gate`'s table from the gate's results (bench/gate.py), no Triton: the smallest
change a clause flags is the gate's own rule inverted, and each length's row reads its
verdicts off the same results the gate printed. The timings belong to the bench, not here."""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis.gate import REGRESSED, WITHIN, GateResult
from bench.gate import GATE, Comparison, Run, noise_row, smallest_flagged
from loadtests.run_format.slo.relative import parse_gate

CLAUSES = {clause.metric: clause for clause in parse_gate(GATE)}


def result(metric: str, baseline: float, candidate: float, difference, verdict: str = WITHIN) -> GateResult:
    return GateResult(CLAUSES[metric], "m [http]", baseline, candidate, difference, verdict)


def comparison(length_s: int, exit_code: int, *results: GateResult) -> Comparison:
    runs = [Run(Path(f"/runs/{name}"), 10.0, code, load) for name, code, load in (("b", 0, 1.5), ("c", exit_code, 2.5))]
    return Comparison("pair", length_s, runs[0], runs[1], GATE, results)


@pytest.mark.parametrize(
    ("metric", "difference", "flagged"),
    [
        ("p50", (-4.0, 3.0), 100 * (100 / 96 - 1)),  # a rise that lifts the candidate's lower bound past +0 %
        ("p99", (-50.0, 80.0), 100.0),
        ("throughput", (-8.0, 25.0), 100 * (100 / 125 - 1)),  # a drop that puts its upper bound below the baseline's
    ],
)
def test_the_smallest_flagged_change_just_regresses_under_the_gate_rule(metric, difference, flagged):
    change = smallest_flagged(result(metric, 1.0, 1.0, difference))
    assert change == pytest.approx(flagged)
    # Scaled by that change, the candidate's bound meets the baseline's (difference +0 %).
    bound = difference[0] if metric != "throughput" else difference[1]
    assert (1 + bound / 100) * (1 + change / 100) == pytest.approx(1.0)


def test_a_pair_the_gate_could_not_judge_has_no_threshold():
    assert smallest_flagged(result("p50", 1.0, None, None)) is None


def test_a_length_row_holds_the_pair_the_slower_candidate_and_the_loads():
    same = comparison(
        20,
        0,
        result("p50", 21_000, 21_200, (-1.5, 2.5)),
        result("p99", 30_000, 28_000, (-40.0, 60.0)),
        result("throughput", 90.0, 89.0, (-6.0, 5.0)),
    )
    slower = comparison(
        20,
        3,
        result("p50", 21_000, 27_300, (27.0, 33.0), REGRESSED),
        result("p99", 30_000, 36_000, (-20.0, 90.0)),
        result("throughput", 90.0, 72.0, (-25.0, -15.0), REGRESSED),
    )
    cells = [cell.strip() for cell in noise_row(same, slower).strip("|").split("|")]
    assert cells[:7] == ["20 s", "-1.5 to +2.5 %", "+1.5 %", "-40.0 to +60.0 %", "+66.7 %", "-6.0 to +5.0 %", "-4.8 %"]
    assert cells[7:10] == ["+30.0 % regressed", "+20.0 % within noise", "-20.0 % regressed"]
    assert cells[10:] == ["0 / 3", "1.5 / 2.5 / 2.5"]


def test_a_metric_the_gate_could_not_judge_says_so():
    same = comparison(10, 3, result("p50", 21_000, None, None, "cannot judge"))
    cells = [cell.strip() for cell in noise_row(same, same).strip("|").split("|")]
    assert cells[1:3] == ["cannot judge", "-"]
    assert cells[3:5] == ["cannot judge", "-"]  # a clause the runs lacked altogether
    assert cells[7] == "cannot judge"
