"""The suite as a Locust library: a user's own locustfile imports the bases from `loadtests`, writes
tasks that send through `self.client.infer`, and gets Locust's semantics (its tasks only, wait_time,
TaskSets, tags) with every request counted as Triton counts it.

The tests here need a real Triton or a browser; the others, and this feature's account, are in
tests/unit/workloads/test_library.py.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.helpers import REPO_ROOT, read_summary, run_against_triton
from tests.unit.workloads.test_library import JOURNEY, write

# A tritonclient port: InferInputs, over gRPC; a SequentialTaskSet, and a task set with a task left
# out by --tags sleepy.
PORTED = """
import tritonclient.grpc as grpcclient


@tag("sleepy")
class Steps(SequentialTaskSet):
    @task
    def first(self):
        tensor = grpcclient.InferInput("INPUT0", [1, 16], "FP32")
        tensor.set_data_from_numpy(np.ones((1, 16), np.float32))
        self.client.infer("identity", [tensor], name="step 1")

    @task
    def second(self):
        self.client.infer("identity", ONES, name="step 2")


class Tagged(TaskSet):
    @tag("sleepy")
    @task
    def nap(self):
        self.client.infer("sleep_10ms_single", {"INPUT0": np.zeros((1, 4), np.float32)})

    @task
    def untagged(self):
        self.client.infer("identity", ONES, name="untagged")


class Ported(TritonGrpcUser):
    tasks = [Steps]


class TaggedUser(TritonHttpUser):
    tasks = [Tagged]
"""


def by_name(summary: dict) -> dict[str, dict]:
    return {e["name"]: e for e in summary["endpoints"]}


def test_own_tasks_run_alone_with_their_wait_time_and_every_model_they_name_is_counted(triton, tmp_path):
    """Before: no public API; with run.install added by hand, the inherited loop starved the
    subclass's tasks (3 runs of its task against 11,420 of the loop) and wait_time was ignored."""
    run = run_against_triton(
        triton,
        tmp_path / "run",
        [],
        [],
        models=("identity", "sleep_10ms_single"),
        run_time="3s",
        locustfile=write(tmp_path, JOURNEY),
    )
    endpoints = by_name(run.summary)
    assert sorted(endpoints) == ["identity [http]", "nap"]
    assert all(e["failures"] == 0 for e in endpoints.values())
    identity, nap = endpoints["identity [http]"], endpoints["nap"]
    assert identity["requests"] == run.served("identity")
    assert nap["requests"] == run.served("sleep_10ms_single") and nap["inferences"] == 2 * nap["requests"]
    # Two users waiting 50 ms between tasks for 3 s: at most about 120 tasks (the loop sent thousands).
    assert 0 < identity["requests"] + nap["requests"] < 400
    # Triton's side of both models is read.
    assert set(run.summary["server"]) >= {"identity", "sleep_10ms_single"}


def test_task_sets_sequences_tags_and_tritonclient_inputs(triton, tmp_path):
    run = run_against_triton(
        triton,
        tmp_path / "run",
        ["Ported", "TaggedUser"],
        ["--tags", "sleepy"],
        models=("identity", "sleep_10ms_single"),
        run_time="3s",
        locustfile=write(tmp_path, PORTED),
    )
    endpoints = by_name(run.summary)
    # --tags: the untagged task never ran; a SequentialTaskSet's steps alternate.
    assert sorted(endpoints) == ["sleep_10ms_single [http]", "step 1", "step 2"]
    assert all(e["failures"] == 0 for e in endpoints.values())
    first, second = endpoints["step 1"]["requests"], endpoints["step 2"]["requests"]
    assert 0 < second <= first <= second + 2  # one user each: a stop between the steps at most
    assert first + second == run.served("identity")
    assert endpoints["sleep_10ms_single [http]"]["requests"] == run.served("sleep_10ms_single")


def test_a_request_in_flight_at_the_stop_finishes_and_the_run_is_clean(triton, tmp_path):
    """Back-to-back tasks on a fast model: the stop finds users between two tasks as well as in
    requests. Before: Locust's asynchronous kill of a user waiting between tasks landed in its
    next request, counted 'interrupted', exit 1 (3 runs of 3)."""
    body = """
    class Busy(TritonHttpUser):
        @task
        def ask(self):
            self.client.infer("identity", ONES)
    """
    for attempt in range(3):
        run = run_against_triton(
            triton,
            tmp_path / f"run{attempt}",
            [],
            [],
            models=("identity",),
            users=32,
            run_time="2s",
            locustfile=write(tmp_path, body),
        )
        (endpoint,) = run.summary["endpoints"]
        assert endpoint["failures"] == 0 and endpoint["requests"] == run.served()


def test_own_tasks_on_a_master_and_a_worker_are_counted_as_triton_counts(triton, tmp_path):
    """The worker's users take their options at test start and name their models as they run;
    the master watches every ready model and keeps the ones the requests named."""
    import time

    from loadtests.server import TritonPorts
    from tests.helpers import model_stats

    mine, run_dir, port = write(tmp_path, JOURNEY), tmp_path / "run", TritonPorts.free().http
    common = [sys.executable, "-m", "locust", "-f", mine]
    before = {model: model_stats(triton.http_address, model) for model in ("identity", "sleep_10ms_single")}
    master = subprocess.Popen(
        [*common, "--master", "--master-bind-host", "127.0.0.1", "--master-bind-port", str(port), "--headless"]
        + ["--expect-workers", "1", "-u", "2", "-r", "2", "-t", "3s", "--only-summary", *triton.options]
        + ["--run-dir", str(run_dir)],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    time.sleep(1)
    worker = subprocess.Popen(
        [*common, "--worker", "--master-host", "127.0.0.1", "--master-port", str(port)],
        cwd=REPO_ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        output, _ = master.communicate(timeout=120)
        worker.wait(timeout=60)
    finally:
        for process in (master, worker):
            if process.poll() is None:
                process.kill()
    assert master.returncode == 0, output[-3000:]
    summary = read_summary(run_dir)
    endpoints = by_name(summary)
    assert sorted(endpoints) == ["identity [http]", "nap"] and summary["load_generator"]["workers"] == 1
    for name, model in (("identity [http]", "identity"), ("nap", "sleep_10ms_single")):
        served = model_stats(triton.http_address, model)["requests"] - before[model]["requests"]
        assert endpoints[name]["requests"] == served == summary["server"][model]["requests"] > 0


def test_slo_targets_the_endpoints_and_models_own_tasks_name(triton, tmp_path):
    """Before: --slo 'nap:...' was refused before any load (no endpoint or model 'nap' in this run):
    own tasks name their endpoints as they run. A target no request named fails at the end."""
    mine = write(tmp_path, JOURNEY)
    met = run_against_triton(
        triton,
        tmp_path / "met",
        [],
        ["--slo", "nap:p99<10s,sleep_10ms_single:rps>0,identity:fail_ratio<0.5"],
        models=("identity",),
        run_time="2s",
        locustfile=mine,
    )
    assert [(verdict["endpoint"], verdict["passed"]) for verdict in met.summary["slo"]] == [
        ("nap", True),
        ("sleep_10ms_single", True),
        ("identity", True),
    ]
    missed = run_against_triton(
        triton, tmp_path / "missed", [], ["--slo", "napp:rps>0"], run_time="2s", locustfile=mine, expect_exit=3
    )
    assert [(verdict["endpoint"], verdict["passed"]) for verdict in missed.summary["slo"]] == [("napp", False)]


def test_the_models_own_tasks_name_are_described_for_the_report_ensembles_with_their_steps(triton, tmp_path):
    """Before: config.json described only the built-in classes' models: the report's models table
    said '?' for every model a task named, and an ensemble's steps were not in the server section."""
    import json

    from analysis.dataset import load
    from analysis.tables import model_rows

    body = """
    class Chain(TritonHttpUser):
        @task
        def ask(self):
            self.client.infer("identity_ensemble", ONES)
    """
    run = run_against_triton(
        triton,
        tmp_path / "run",
        [],
        [],
        models=("identity_ensemble", "identity"),
        run_time="2s",
        locustfile=write(tmp_path, body),
    )
    (endpoint,) = run.summary["endpoints"]
    assert endpoint["requests"] == run.served("identity_ensemble") == run.served("identity") > 0
    assert sorted(run.summary["server"]) == ["identity", "identity_ensemble"]
    assert run.summary["server"]["identity"]["requests"] == endpoint["requests"]
    models = json.loads((run.run_dir / "config.json").read_text())["triton"]["models"]
    assert models["identity_ensemble"]["config"]["platform"] == "ensemble"
    assert models["identity"]["part_of"] == ["identity_ensemble"]
    rows = {row[0]: row for row in model_rows(load(run.run_dir))[1]}
    assert rows and all("?" not in row[1:3] for row in rows.values()), rows


@pytest.mark.parametrize(
    ("call", "message"),
    [
        ('self.client.infer("nosuch_model", ONES)', "error: model 'nosuch_model' is not ready on Triton"),
        ('self.client.infer("identity", {"WRONG": np.ones((1, 16), np.float32)})', "error: "),
        ('self.client.infer("identity", {"INPUT0": np.ones((1, 16), np.int64)})', "error: "),
    ],
    ids=["unknown model", "unknown input", "wrong datatype"],
)
def test_a_task_naming_what_triton_cannot_take_stops_the_test_with_one_error_line(triton, tmp_path, call, message):
    """Before: a traceback per task call (the ServerError raised in the task, logged by Locust),
    no request, the test running on to its end. The same mistake fails every call alike: it is
    bad input, refused with one line and exit code 2, Triton's counters untouched."""
    body = f"""
class Wrong(TritonHttpUser):
    @task
    def ask(self):
        {call}
"""
    run = run_against_triton(
        triton, tmp_path / "run", [], [], models=("identity",), users=3, run_time="10s",
        locustfile=write(tmp_path, body), expect_exit=2,
    )  # fmt: skip
    output = run.result.stdout + run.result.stderr
    errors = [line for line in run.result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith(message), output[-3000:]
    assert "Traceback" not in output, output[-3000:]
    assert run.after == run.before


# A task and a think time that, in closed loop, let each user send one request in the whole test.
PATIENT = """
class Patient(TritonHttpUser):
    wait_time = constant(60)

    @task
    def ask(self):
        self.client.infer("identity", ONES)
"""


def test_own_tasks_in_open_loop_start_on_the_schedule_and_are_timed_from_it(triton, tmp_path):
    """Before: --traffic and --rate did not reach a class's own tasks (closed loop with its
    wait_time, silently). The schedule now starts each task execution: 2 users who wait 60 s
    between tasks send 2 requests in 3 s in closed loop, and at 40/s in open loop an order of
    magnitude more, each first request timed from its due time (the uncorrected latency is kept
    beside it, as for the built-in open loop), every one counted as Triton counts it."""
    mine = write(tmp_path, PATIENT)
    closed = run_against_triton(
        triton, tmp_path / "closed", [], [], models=("identity",), run_time="3s", locustfile=mine
    )
    (endpoint,) = closed.summary["endpoints"]
    assert endpoint["requests"] == 2 == closed.served("identity")  # one task per user, then the wait
    opened = run_against_triton(
        triton, tmp_path / "open", [], ["--traffic", "constant", "--rate", "40"], models=("identity",),
        run_time="3s", locustfile=mine,
    )  # fmt: skip
    (endpoint,) = opened.summary["endpoints"]
    assert endpoint["failures"] == 0 and endpoint["requests"] == opened.served("identity")
    assert endpoint["requests"] >= 20, endpoint  # 40/s for 3 s: about 120, never the 2 of closed loop
    assert endpoint["latency_uncorrected_us"], endpoint  # timed from the due time, the send kept beside
    assert "late" in endpoint


def test_drop_when_saturated_is_refused_for_own_tasks(triton, tmp_path):
    """Own tasks' executions never drop (a busy user starts a due one late): the option that drops
    the built-in workload's requests is refused before any load, in one line, exit code 2."""
    options = ["--traffic", "poisson", "--rate", "40", "--drop-when-saturated"]
    run = run_against_triton(
        triton, tmp_path / "run", [], options, models=("identity",), run_time="3s",
        locustfile=write(tmp_path, PATIENT), expect_exit=2,
    )  # fmt: skip
    errors = [line for line in run.result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith("error: --drop-when-saturated drops"), run.result.stderr[-2000:]
    assert "Patient" in errors[0] and run.after == run.before
