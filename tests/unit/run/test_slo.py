"""SLO gates: the --slo grammar, evaluation on exact merged numbers, JUnit, exit codes 0/2/3."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from types import SimpleNamespace

import pytest

from analysis.check import check_run, check_summary
from loadtests.config.settings import Settings
from loadtests.recording.histograms import EndpointStats, RunTotals, merge_stats
from loadtests.recording.run_dir import totals_json
from loadtests.run import slo_gate
from loadtests.run_format.slo import (
    Clause,
    SloError,
    evaluate,
    junit_xml,
    parse_slo,
    resolver_for_summary,
)
from tests.helpers import request_outcome

DURATION_S = 10.0


# -- parsing -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "target", "metric", "op", "threshold", "unit", "scale"),
    [
        ("p99<50ms", None, "p99", "<", 50.0, "ms", 1000.0),
        ("p99.9 <= 1.5 s", None, "p99.9", "<=", 1.5, "s", 1e6),
        ("max<800us", None, "max", "<", 800.0, "us", 1.0),
        ("mean<800µs", None, "mean", "<", 800.0, "µs", 1.0),
        ("P95<2E1MS", None, "p95", "<", 20.0, "ms", 1000.0),
        ("fail_ratio<0.01", None, "fail_ratio", "<", 0.01, "", 1.0),
        ("fail_ratio<1%", None, "fail_ratio", "<", 1.0, "%", 0.01),
        ("failures<=0", None, "failures", "<=", 0.0, "", 1.0),
        ("rps>=100", None, "rps", ">=", 100.0, "/s", 1.0),
        ("infer_per_s>100/s", None, "infer_per_s", ">", 100.0, "/s", 1.0),
        ("bert_qa:p95<20ms", "bert_qa", "p95", "<", 20.0, "ms", 1000.0),
        (" bert_qa [grpc] : p50 < .5ms ", "bert_qa [grpc]", "p50", "<", 0.5, "ms", 1000.0),
        ("late_ratio<0.05", None, "late_ratio", "<", 0.05, "", 1.0),
        ("dropped<1", None, "dropped", "<", 1.0, "", 1.0),
        ("ttfr_p99<200ms", None, "ttfr_p99", "<", 200.0, "ms", 1000.0),
        ("stream_gaps:gap_p99.9<=20ms", "stream_gaps", "gap_p99.9", "<=", 20.0, "ms", 1000.0),
    ],
)
def test_clauses_parse(text, target, metric, op, threshold, unit, scale):
    (clause,) = parse_slo(text)
    assert (clause.target, clause.metric, clause.op, clause.unit) == (target, metric, op, unit)
    assert clause.threshold == pytest.approx(threshold)
    assert clause.scale == scale
    assert clause.text == text.strip()


def test_the_issue_example_parses_in_order():
    clauses = parse_slo("p99<50ms,p95<20ms,fail_ratio<0.01,infer_per_s>100")
    assert [c.metric for c in clauses] == ["p99", "p95", "fail_ratio", "infer_per_s"]
    assert parse_slo("") == parse_slo("  ") == parse_slo(None) == []


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("p99<fifty", "'fifty' is not a non-negative number"),
        ("p99<50", "p99 needs a unit: us, ms or s"),
        ("p99<50min", "p99 has unit 'min'"),
        ("p98<5ms", "unknown metric 'p98'"),
        ("p99=5ms", "'=' is not a comparison"),
        ("p99 5ms", "no comparison"),
        ("p99<-5ms", "'-5ms' is not a non-negative number"),
        ("fail_ratio<2", "fail_ratio is a fraction between 0 and 1"),
        ("fail_ratio<0.1ms", "'ms' is not a unit of fail_ratio"),
        ("failures<3ms", "failures is a count and takes no unit"),
        ("rps>5ms", "'ms' is not a unit of rps"),
        ("p99<5ms,,p50<1ms", "empty clause"),
        ("p99<5ms,", "empty clause"),
        (":p99<5ms", "empty endpoint or model name"),
        ("ttfr_p99<200", "ttfr_p99 needs a unit"),
        ("gap_max<5ms@95%", "a confidence (@95%) applies only to percentiles"),
    ],
)
def test_malformed_clauses_say_why(text, why):
    with pytest.raises(SloError) as error:
        parse_slo(text)
    assert why in str(error.value)
    assert "\n" not in str(error.value)


# -- evaluating ----------------------------------------------------------------------
def _stats(name: str, model: str, protocol: str, latencies_us: list[float], failures: int = 0) -> EndpointStats:
    stats = EndpointStats(name, model, protocol)
    for latency in latencies_us:
        stats.record(request_outcome(latency, batch_size=2, failure=None))
    for _ in range(failures):
        stats.record(request_outcome(0.0, batch_size=2, failure="invalid request: HTTP 400"))
    return stats


@pytest.fixture
def two_endpoints() -> dict[str, EndpointStats]:
    """bert_qa over HTTP (fast) and gRPC (slow): their merged p99 is neither endpoint's."""
    http = _stats("bert_qa [http]", "bert_qa", "http", [1000.0] * 90 + [2000.0] * 10, failures=1)
    grpc = _stats("bert_qa [grpc]", "bert_qa", "grpc", [30_000.0] * 100)
    resnet = _stats("resnet50 [http]", "resnet50", "http", [1500.0] * 50)
    return {s.name: s for s in (http, grpc, resnet)}


def _summary(totals: dict[str, EndpointStats]) -> dict:
    return totals_json(RunTotals.of(totals), DURATION_S)


def _measured(summary: dict, text: str) -> float | None:
    (result,) = evaluate(parse_slo(text), resolver_for_summary(summary))
    return result.measured


def test_overall_and_model_targets_merge_histograms_and_sum_counts(two_endpoints):
    summary = _summary(two_endpoints)
    overall = merge_stats(two_endpoints.values(), "overall").latency_summary_us()
    assert _measured(summary, "p99<1s") == pytest.approx(overall["p99"] / 1e6)
    assert overall["p99"] == pytest.approx(30_000, rel=1e-3)  # the gRPC tail dominates the merge
    assert _measured(summary, "p50<1s") == pytest.approx(1.5e-3, rel=1e-3)  # resnet's 1.5 ms sits in the middle
    assert _measured(summary, "bert_qa [http]:p50<1s") == pytest.approx(1.0e-3, rel=1e-3)
    # bert_qa = its two endpoints merged: 200 successes, the upper half at 30 ms.
    assert _measured(summary, "bert_qa:p50<1s") == pytest.approx(2.0e-3, rel=1e-3)
    assert _measured(summary, "bert_qa:p90<1s") == pytest.approx(30.0e-3, rel=1e-3)
    assert _measured(summary, "failures<1") == 1
    assert _measured(summary, "fail_ratio<1%") == pytest.approx(100 / 251)
    assert _measured(summary, "rps>1") == pytest.approx(251 / DURATION_S)
    assert _measured(summary, "infer_per_s>1") == pytest.approx(2 * 250 / DURATION_S)
    assert _measured(summary, "resnet50:infer_per_s>1") == pytest.approx(2 * 50 / DURATION_S)
    assert summary["overall"]["requests"] == 251
    assert set(summary["model_totals"]) == {"bert_qa"}  # resnet50 has one endpoint: itself


def test_comparisons_at_the_limit_and_units(two_endpoints):
    summary = _summary(two_endpoints)
    results = evaluate(
        parse_slo("resnet50:p99<=1.5ms,resnet50:p99<1.5ms,resnet50:p99<1501us,resnet50:p99>0.001s,rps>=25.1"),
        resolver_for_summary(summary),
    )
    assert [r.passed for r in results] == [True, False, True, True, True]
    assert results[1].message == "measured 1.5 ms, limit 1.5 ms"
    assert results[1].to_json() == {
        "clause": "resnet50:p99<1.5ms",
        "endpoint": "resnet50",
        "metric": "p99",
        "op": "<",
        "threshold": 1.5,
        "measured": 1.5,
        "unit": "ms",
        "passed": False,
    }


def test_nothing_measured_fails_instead_of_passing_on_zeros():
    only_failures = _stats("reject [http]", "reject", "http", [], failures=3)
    summary = _summary({only_failures.name: only_failures})
    results = evaluate(parse_slo("p99<50ms,fail_ratio<0.5"), resolver_for_summary(summary))
    assert [(r.passed, r.measured) for r in results] == [(False, None), (False, 1.0)]
    assert "no successful requests" in results[0].message
    empty = evaluate(parse_slo("p99<50ms,rps>1"), resolver_for_summary({"endpoints": []}))
    assert [r.passed for r in empty] == [False, False]


def test_open_loop_metrics_need_open_loop_counts(two_endpoints):
    summary = _summary(two_endpoints)
    with pytest.raises(SloError, match="late_ratio needs open-loop traffic"):
        check_summary(parse_slo("late_ratio<0.1"), summary)
    for stats in two_endpoints.values():
        stats.late, stats.dropped = 5, 1
    summary = totals_json(RunTotals.of(two_endpoints), DURATION_S, open_loop=True)
    results = check_summary(parse_slo("late_ratio<0.1,dropped<1,resnet50:dropped<=1"), summary)
    assert [(r.measured, r.passed) for r in results] == [(pytest.approx(15 / 251), True), (3, False), (1, True)]


def test_unknown_target_is_refused(two_endpoints):
    with pytest.raises(SloError, match=r"no endpoint or model 'bert' in this run \(known: bert_qa, bert_qa \[grpc\]"):
        check_summary(parse_slo("bert:p99<5ms"), _summary(two_endpoints))


def test_junit_has_one_testcase_per_clause(two_endpoints):
    results = evaluate(parse_slo("p99<10ms,fail_ratio<0.5"), resolver_for_summary(_summary(two_endpoints)))
    root = ET.fromstring(ET.tostring(junit_xml(results).getroot()))
    (suite,) = root.iter("testsuite")
    assert (suite.get("tests"), suite.get("failures")) == ("2", "1")
    cases = {case.get("name"): case for case in suite.iter("testcase")}
    assert set(cases) == {"p99<10ms", "fail_ratio<0.5"}
    assert {case.get("classname") for case in cases.values()} == {"triton-loadtest.slo"}
    assert cases["p99<10ms"].find("failure").get("message") == "measured 30.015 ms, limit 10 ms"
    assert cases["fail_ratio<0.5"].find("failure") is None


@pytest.mark.parametrize(("before", "after"), [(None, 3), (1, 3), (0, 3), (2, 2)])
def test_a_failed_clause_sets_exit_code_3_over_1_but_not_over_2(tmp_path, two_endpoints, before, after):
    summary = _summary(two_endpoints)
    settings = Settings(slo="p99<1ms,rps>1", junit=str(tmp_path / "out" / "slo.xml"))
    environment = SimpleNamespace(process_exit_code=before)
    results = slo_gate.add_verdicts(summary, RunTotals.of(two_endpoints), settings)  # before summary.json is written
    slo_gate.report(environment, settings, results)
    assert [r.passed for r in results] == [False, True]
    assert environment.process_exit_code == after
    assert [entry["passed"] for entry in summary["slo"]] == [False, True]
    assert summary["overall"]["requests"] == 251
    assert ET.parse(tmp_path / "out" / "slo.xml").getroot().tag == "testsuites"


@pytest.mark.parametrize(("slo", "before", "after"), [("rps>1", None, 4), ("rps>1", 1, 4), ("p99<1ms", None, 3)])
def test_a_junit_file_that_cannot_be_written_is_exit_code_4(tmp_path, two_endpoints, capsys, slo, before, after):
    """The run happened, its JUnit file did not: a CI job gating on the exit code must not pass
    (4: an output was not written; a failed clause's 3 still wins)."""
    summary = _summary(two_endpoints)
    settings = Settings(slo=slo, junit="/proc/no-junit-here.xml")
    environment = SimpleNamespace(process_exit_code=before)
    slo_gate.report(environment, settings, slo_gate.add_verdicts(summary, RunTotals.of(two_endpoints), settings))
    assert environment.process_exit_code == after
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error: --junit")]
    assert len(errors) == 1, errors


def test_passing_clauses_leave_the_exit_code_to_locust(tmp_path, two_endpoints):
    summary = _summary(two_endpoints)
    settings = Settings(slo="rps>1")
    environment = SimpleNamespace(process_exit_code=None)
    slo_gate.report(environment, settings, slo_gate.add_verdicts(summary, RunTotals.of(two_endpoints), settings))
    assert environment.process_exit_code is None  # request failures still give --exit-code-on-error


def test_analysis_check_on_a_run_directory(tmp_path, two_endpoints, capsys):
    (tmp_path / "summary.json").write_text(json.dumps(_summary(two_endpoints)))
    (tmp_path / "config.json").write_text(json.dumps({"options": {"slo": "p99<100ms"}}))
    assert check_run(tmp_path) == 0  # the run's own --slo
    junit = tmp_path / "slo.xml"
    assert check_run(tmp_path, "bert_qa:p99<10ms", junit) == 3
    assert "FAIL    bert_qa:p99<10ms" in capsys.readouterr().out
    assert ET.parse(junit).find(".//failure") is not None
    assert check_run(tmp_path, "p99<fifty") == 2
    assert check_run(tmp_path / "nowhere", "p99<1s") == 2
    assert "error: --slo 'p99<fifty': clause 'p99<fifty'" in capsys.readouterr().err


def test_clause_values_are_frozen():
    clause = parse_slo("p99<5ms")[0]
    assert isinstance(clause, Clause)
    with pytest.raises(AttributeError):
        clause.threshold = 1.0  # type: ignore[misc]
