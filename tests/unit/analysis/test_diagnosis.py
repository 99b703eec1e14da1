"""The report's diagnosis rules (analysis/diagnosis.py) on runs that produce each condition, and
on runs (or load steps) that must not trigger it.

The runs were recorded once against the local Triton (tests/recorded_runs.py, group
`diagnosis`, which says how each was made), so a rule fires or stays silent for what the run
directory holds, never for how busy this host is while the test runs:
- `sleep_10ms_single` (one instance, no dynamic batching, 10 ms per execution) at 1, 3, then 6
  users: queue-bound at 6 users, not at 1; throughput flat from 3 to 6 users while p99 grows;
- `resnet50` over HTTP with its 602 KB FP32 tensors as JSON: payload-bound; the same model
  behind `resnet50_jpeg`, sent as JPEG files of a few KB: not;
- `queue_limited` (a queue of one request) under 6 users: overload failures;
- open loop at 20,000 requests/s with 2 in flight: the load generator cannot keep the schedule;
- `sleep_20ms_dynbatch4` (dynamic batching up to 4) with one user: batches of one, and the reason
  is the client (fewer requests in flight than the batcher's size); with 12 users: full batches;
- `sleep_40ms_batch4` with one user for 2 s: too few requests to judge;
- `sleep_20ms_dynbatch4` at 1 then 8 users (its rule of thumb's peak): throughput grows about 4x,
  no plateau between the levels measured;
- `bert_qa_dynbatch` fed a generic user's random integers as its ids: every request fails.
"""

from __future__ import annotations

import itertools
import json

import pytest

from analysis.dataset import load
from analysis.diagnosis import LIMITS, CannotJudge, Diagnosis, diagnose
from analysis.report import write_report
from loadtests.workloads.generic import RANDOM_INT_HIGH
from tests.recorded_runs import GROUPS, recorded
from tests.unit.test_docs import check_loadtests_command, check_locust_options, words


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("diagnosis")
    return {name: load(recorded("diagnosis", name, root)) for name in GROUPS["diagnosis"]}


def fired(data, rule: str) -> list[Diagnosis]:
    return [item for item in diagnose(data) if isinstance(item, Diagnosis) and item.rule == rule]


def test_queue_bound_at_six_users_not_at_one(runs):
    data = runs["queue"]
    (queue,) = fired(data, "queue")
    frame = data.levels["sleep_10ms_single [http]"]
    assert queue.where == f"at {frame['label'].iloc[-1]}", queue
    assert "1 instance(s), dynamic batching off" in queue.evidence
    assert "--vary instances=1,2 --vary dynamic_batching=off,on" in queue.command
    first = frame.iloc[0]
    assert first["queue_us"] / first["mean_us"] < LIMITS.queue_share  # one user never waits: no diagnosis there
    assert frame["level"].tolist() == [1, 3, 6]


def test_plateau_where_throughput_stops_and_latency_grows(runs):
    """One instance sleeping 10 ms serves about 100 requests/s: one user gets most of that, so the
    plateau starts after 1 or after 3 users; the pair it names is the first whose throughput
    stopped growing while the mean latency grew."""
    (plateau,) = fired(runs["queue"], "plateau")
    frame = runs["queue"].levels["sleep_10ms_single [http]"]
    rows = list(frame.itertuples(index=False))
    pairs = list(itertools.pairwise(rows))
    flat = [
        after.rps / before.rps - 1 < LIMITS.plateau_growth and after.mean_us / before.mean_us - 1 >= 0.2
        for before, after in pairs
    ]
    assert True in flat, frame[["label", "rps", "mean_us"]]
    before, after = pairs[flat.index(True)]
    assert plateau.where == f"from {before.label} to {after.label}", plateau
    assert after.rps < 1 / 0.010 * 1.1  # the model's own ceiling, give or take the timer
    assert plateau.command.startswith("python -m loadtests capacity --model sleep_10ms_single")


def test_payload_bound_with_tensors_not_with_jpeg(runs):
    (payload,) = fired(runs["tensor"], "payload")
    assert "KB sent per request" in payload.evidence
    assert "leave out --http-json" in payload.next_step and "--http-json" not in payload.command
    assert not fired(runs["jpeg"], "payload")


def test_overload_failures_point_at_a_capacity_search(runs):
    (failures,) = fired(runs["overload"], "failures")
    assert "overloaded (queue full): HTTP 503" in failures.evidence
    assert failures.command.startswith("python -m loadtests capacity --model queue_limited")
    assert not fired(runs["queue"], "failures")


def test_failures_of_one_model_over_two_protocols_name_each_endpoint(tmp_path):
    """The failures rule judges each endpoint: where one model failed over HTTP and gRPC, the two
    diagnoses (and the report's list) name which endpoint each is, as the tail rule does; a model
    with one endpoint keeps the short form."""
    copy = recorded("diagnosis", "overload", tmp_path)
    summary = json.loads((copy / "summary.json").read_text())
    (http,) = summary["endpoints"]
    summary["endpoints"].append({**http, "name": "queue_limited [grpc]", "protocol": "grpc"})
    (copy / "summary.json").write_text(json.dumps(summary))
    both = fired(load(copy), "failures")
    assert sorted(item.where for item in both) == [
        "queue_limited [grpc], over the whole run",
        "queue_limited [http], over the whole run",
    ]
    report = write_report(copy, tmp_path / "report").read_text()
    assert "Requests failed: queue_limited, queue_limited [grpc], over the whole run" in report
    assert "Requests failed: queue_limited, queue_limited [http], over the whole run" in report
    (alone,) = fired(load(recorded("diagnosis", "overload", tmp_path / "alone")), "failures")
    assert alone.where == "over the whole run"


def test_failures_of_generated_random_data_point_at_zeros_or_real_samples(runs, tmp_path):
    """A generic user's random integers as BERT's ids: every request failed as a server error, and
    the cause named is the generated data; the same failures where the data was not generated (a
    run of BERT's own users, which send real token ids) keep the payload check."""
    (failures,) = fired(runs["random_ids"], "failures")
    assert "server error: HTTP 500" in failures.evidence
    assert "--data-mode random" in failures.why and "--input-data FILE" in failures.next_step
    assert f"integers from 0 to {RANDOM_INT_HIGH - 1}" in failures.why  # what generic.py draws
    assert "--data-mode zero" in failures.command and "--shape 'input_ids:16 segment_ids:16" in failures.command
    copy = recorded("diagnosis", "random_ids", tmp_path)
    config = json.loads((copy / "config.json").read_text())
    config["user_classes"] = ["BertQAHttpUser"]
    (copy / "config.json").write_text(json.dumps(config))
    (failures,) = fired(load(copy), "failures")
    assert "--data-mode" not in failures.why + failures.command
    assert failures.next_step.startswith("check the payload against the model's metadata")


def test_a_rule_that_cannot_judge_says_why(runs):
    # 40 ms a request for 2 s is at most 50 successes: no level has what the latency rules need.
    # (The overload run was used before: under a busy host its queue of one let 100 through.)
    assert LIMITS.min_requests > 2 / 0.040
    data = runs["few"]
    unjudged = [item for item in diagnose(data) if isinstance(item, CannotJudge)]
    assert any(item.rule == "queue" and "too few successful requests" in item.reason for item in unjudged), unjudged


def test_every_suggested_command_is_one_the_suite_accepts(runs):
    for data in runs.values():
        for item in diagnose(data):
            if not isinstance(item, Diagnosis) or not item.command:
                continue
            argv = words(item.command)
            if argv[:3] == ["python", "-m", "loadtests"]:
                check_loadtests_command(item.rule, argv[3:])
            else:
                check_locust_options(argv[3:])


def test_the_report_opens_with_the_ranked_next_steps(runs, tmp_path):
    write_report(runs["queue"].path, tmp_path)
    markdown = (tmp_path / "report.md").read_text()
    section = markdown.split("## Diagnosis and next steps", 1)[1].split("## Findings", 1)[0]
    assert markdown.index("## Diagnosis and next steps") < markdown.index("## Findings")
    titles = [line for line in section.splitlines() if line[:1].isdigit()]
    assert any("Queue-bound: sleep_10ms_single" in title for title in titles), section
    assert any("Throughput plateau: sleep_10ms_single" in title for title in titles), section
    assert "`python -m loadtests tune --model sleep_10ms_single" in section
    # The headline: the highest throughput reached, where, and from where it was saturated.
    frame = runs["queue"].levels["sleep_10ms_single [http]"]
    best = frame.loc[frame["rps"].idxmax()]
    assert f"- sleep_10ms_single: at most {best['rps']:,.1f} requests/s" in section
    assert f"at {best['label']}" in section.split("\n- sleep_10ms_single: ", 1)[1].split("\n", 1)[0]
    assert "saturated from step" in section


def test_small_batches_with_one_user_not_with_sixteen(runs):
    (batching,) = fired(runs["batch_alone"], "batching")
    assert "requests in flight over 1 instance(s)" in batching.evidence
    assert batching.command.startswith("python -m loadtests sweep --model sleep_20ms_dynbatch4 --concurrency 1:8:1")
    assert not fired(runs["batch_full"], "batching"), runs["batch_full"].levels


def test_host_rule_names_exactly_the_busy_steps(runs):
    """Triton's own CPU samples decide it: the rule fires for the steps whose samples average at
    least the limit (read here from server_metrics.csv independently), and for no other."""
    data = runs["queue"]
    samples = data.resources[(data.resources["metric"] == "nv_cpu_utilization") & (data.resources["time_s"] >= 0)]
    busy = []
    for step, label in zip(data.steps, data.levels["sleep_10ms_single [http]"]["label"], strict=True):
        inside = samples[(samples["time_s"] >= step["start_s"]) & (samples["time_s"] < step["end_s"])]["value"]
        if len(inside) and inside.mean() >= LIMITS.host_busy:
            busy.append(label)
    host = fired(data, "host")
    assert [item.where for item in host] == ([f"at {', '.join(busy)}"] if busy else []), (busy, host)


def test_a_schedule_the_generator_cannot_keep_is_blamed_on_the_generator(runs):
    late = [item for item in fired(runs["late"], "generator") if "open-loop requests went out" in item.evidence]
    assert len(late) == 1, diagnose(runs["late"])
    (endpoint,) = runs["late"].endpoints
    assert f"{endpoint.late:,} of {endpoint.requests:,} open-loop requests" in late[0].evidence
    # The run's own command with more processes: its classes, model and rate, nothing left to fill in.
    assert late[0].command.startswith("locust -f locustfile.py --headless --processes -1 "), late[0].command
    assert "TritonHttpUser --model identity --traffic constant --rate 20000" in late[0].command, late[0].command
    # Closed loop keeps no schedule: nothing is late there.
    assert not [item for item in fired(runs["queue"], "generator") if "open-loop" in item.evidence]


def test_compute_growth_not_claimed_where_the_work_is_fixed(runs):
    """`sleep_10ms_single` sleeps 10 ms per execution whatever the load: its compute per request
    stays put, so the compute rule must not fire on it (a run that makes compute grow with the
    load on demand needs instances contending for a core, which this host cannot promise)."""
    frame = runs["queue"].levels["sleep_10ms_single [http]"]
    assert frame["compute_infer_us"].max() / frame["compute_infer_us"].min() < 1 + LIMITS.compute_growth
    assert not fired(runs["queue"], "compute")


def test_batches_at_a_smaller_preferred_size_are_not_called_small(tmp_path):
    """The batching rule checks its own evidence: with preferred sizes 4 and 16, executions that
    all ran at 4 are what the batcher was configured for (silent), though the average is far
    below 16; mostly batches of one at the same average are not (it fires, and counts them)."""
    run = recorded("diagnosis", "batch_full", tmp_path)
    config = json.loads((run / "config.json").read_text())
    model = config["triton"]["models"]["sleep_20ms_dynbatch4"]["config"]
    model["max_batch_size"], model["dynamic_batching"]["preferred_batch_size"] = 16, [4, 16]
    (run / "config.json").write_text(json.dumps(config))
    summary = json.loads((run / "summary.json").read_text())
    executions = summary["server"]["sleep_20ms_dynbatch4"]["executions"]
    assert summary["server"]["sleep_20ms_dynbatch4"]["batch_sizes"] == {"4": executions}  # the recording's premise
    assert not fired(load(run), "batching")
    summary["server"]["sleep_20ms_dynbatch4"]["batch_sizes"] = {"1": executions - 10, "4": 10}
    (run / "summary.json").write_text(json.dumps(summary))
    (batching,) = fired(load(run), "batching")
    assert "one of its preferred sizes 4, 16" in batching.evidence
    assert f"10 of {executions:,} executions reached a preferred size" in batching.evidence


# Each rule, a recorded run that shows its condition and one that must leave it silent. (The host
# rule has its own exact test above; the compute rule's condition cannot be made on demand here.)
FIRES_AND_SILENT = {
    "failures": ("overload", "queue"),
    "generator": ("late", "queue"),
    "queue": ("queue", "batch_alone"),
    "batching": ("batch_alone", "batch_full"),
    "payload": ("tensor", "jpeg"),
    "plateau": ("queue", "scaling"),
    # The timeout run's Triton ran a BERT model on this host's two cores beside the load generator.
    "host": ("timeout", "queue"),
}


@pytest.mark.parametrize("rule", sorted(FIRES_AND_SILENT))
def test_each_rule_fires_on_its_condition_and_stays_silent_without_it(runs, rule):
    fires, silent = FIRES_AND_SILENT[rule]
    assert fired(runs[fires], rule), f"{rule} did not fire on {fires}: {diagnose(runs[fires])}"
    assert not fired(runs[silent], rule), f"{rule} fired on {silent}: {fired(runs[silent], rule)}"


@pytest.mark.parametrize(
    ("compute_factor", "batch_factor", "fires"),
    [(2.0, 1.0, True), (1.4, 1.0, False), (2.0, 1.5, False)],
)
def test_compute_fires_when_compute_per_request_grows_and_the_batch_does_not(
    tmp_path, compute_factor, batch_factor, fires
):
    """No recorded run's compute grew with load (a sleeping model on a CPU does not), so the rule is
    judged on the queue run's levels with the last level's compute (and batch) set to known
    multiples: 2x the compute at the same batch fires; 1.4x (under the 50 % the rule asks), or 2x
    with a 1.5x batch (bigger batches take longer), stays silent."""
    data = load(recorded("diagnosis", "queue", tmp_path))
    frame = data.levels["sleep_10ms_single [http]"]
    first = frame["compute_infer_us"].iloc[0]
    frame.loc[frame.index[-1], "compute_infer_us"] = first * compute_factor
    frame.loc[frame.index[-1], "avg_batch"] = frame["avg_batch"].iloc[0] * batch_factor
    said = fired(data, "compute")
    assert bool(said) is fires, said
    if fires:
        (compute,) = said
        assert compute.where == f"from {frame['label'].iloc[0]} to {frame['label'].iloc[-1]}", compute
        assert f"({compute_factor - 1:+.0%})" in compute.evidence, compute


def test_a_load_that_still_grows_up_to_the_peak_concurrency_is_no_plateau(runs):
    """1 then 8 users on a 1-instance model batching up to 4: the second level reaches the rule of
    thumb (2 x 4 x 1) and serves several times the first's throughput, so there is neither a flat
    pair nor a load that stopped short: the plateau rule stays silent for the evidence it reads."""
    frame = runs["scaling"].levels["sleep_20ms_dynbatch4 [http]"]
    assert frame["level"].tolist() == [1, 8]
    first, last = frame.iloc[0], frame.iloc[-1]
    assert last["rps"] / first["rps"] - 1 >= 3 * LIMITS.plateau_growth  # grew far beyond "flat"
    assert not fired(runs["scaling"], "plateau")


def test_a_max_from_a_partial_first_or_last_window_is_named_as_such(runs):
    """The run's max latency often came as the users stopped or started (in 4 of the recorded
    runs, a partial first or last window holds it): the findings say so, with that window's
    length and requests, and say nothing where the max came in a full window."""
    from analysis.findings import findings

    for name, data in runs.items():
        for endpoint in data.endpoints:
            rows = data.timeseries[data.timeseries["endpoint"] == endpoint.name]
            first, last = rows.iloc[0], rows.iloc[-1]
            top = endpoint.latency_us.get("max", 0)
            said = [line for line in findings(data) if "partial" in line and endpoint.name in line]
            if top and last["covered_s"] < 0.5 * data.window_s and last["max_us"] == top:
                assert said == [
                    f"{endpoint.name}: the run's max latency, {top / 1000:,.3f} ms, came in its last window, a "
                    f"partial one ({last['covered_s']:g} s, {int(last['requests']):,} requests) that ended as the "
                    "users stopped; the over-time plots leave it out."
                ], (name, said)
            elif top and first["covered_s"] < 0.5 * data.window_s and first["max_us"] == top:
                assert said and "first window" in said[0] and "as the users started" in said[0], (name, said)
            else:
                assert not said, (name, said)
    named = [name for name, data in runs.items() if any("partial" in line for line in findings(data))]
    assert set(named) == {"batch_full", "few", "late", "scaling"}, named
