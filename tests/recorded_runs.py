"""Run directories recorded once from real runs, for tests that judge rules on known numbers.

The diagnosis rules (analysis/diagnosis.py) and compare's verdicts (analysis/compare.py) read
how fast a run went. Judged on runs made during the test, a busy host decides the outcome (a
one-user step measured 24 requests/s instead of 90, and no plateau was seen); judged on run
directories recorded here, a rule fires or stays silent for a reason the test controls, and
`make test` cannot be flipped by the host's speed. The runs were made against the local Triton
with the demo and test models (as the session Triton serves them) on a quiet machine:

    .venv/bin/python -m tests.recorded_runs                    # every group again
    .venv/bin/python -m tests.recorded_runs diagnosis          # one group
    .venv/bin/python -m tests.recorded_runs diagnosis/timeout  # one run

Recording again is needed only when a test needs a file or a key older runs lack; check the
tests that read a group pass on the new recording before committing it (a recording on a
busy host can lack the effect a test needs; the recorder names stalled load generators).
End-to-end tests against the real Triton (counts, reconciliation, files, exit codes) stay where
they were: a recording proves the rules, not the run that feeds them.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

RECORDED = Path(__file__).resolve().parent / "data" / "runs"

# name: (user classes, options, users, run time)
GROUPS: dict[str, dict[str, tuple[list[str], list[str], int, str]]] = {
    # tests/unit/analysis/test_diagnosis.py: each rule's condition, and runs where it must stay silent.
    "diagnosis": {
        # sleep_10ms_single (one instance, no batching, 10 ms) at 1, 3, then 6 users: queue-bound at 6,
        # throughput flat from 3 to 6 while the latency grows.
        "queue": (
            ["TritonHttpUser"],
            ["--model", "sleep_10ms_single", "--shape", "INPUT0:16", "--load-shape", "steps",
             "--shape-args", "targets=1;3;6,step_s=3"],
            1, "9s",
        ),
        # resnet50's 602 KB FP32 tensors as JSON: payload-bound; the same model fed JPEG files: not.
        "tensor": (["ResNetHttpUser"], ["--http-json"], 2, "4s"),
        "jpeg": (["ResNetHttpUser"], ["--image-format", "jpeg"], 4, "4s"),
        # A queue of one request under 6 users: overload failures.
        "overload": (["TritonHttpUser"], ["--model", "queue_limited", "--shape", "INPUT0:16"], 6, "3s"),
        # 20,000 requests/s with 2 in flight: a schedule the load generator cannot keep.
        "late": (
            ["TritonHttpUser"],
            ["--model", "identity", "--traffic", "constant", "--rate", "20000", "--max-in-flight", "2"],
            4, "3s",
        ),
        # Dynamic batching up to 4 at 1, then 8 users (2 x max batch x instances, the rule of thumb's
        # peak): throughput grows about 4x between the two levels, so the plateau rule stays silent.
        "scaling": (
            ["TritonHttpUser"],
            ["--model", "sleep_20ms_dynbatch4", "--shape", "INPUT0:16", "--load-shape", "steps",
             "--shape-args", "targets=1;8,step_s=4"],
            1, "8s",
        ),
        # Dynamic batching up to 4: one user sends batches of one, 12 users fill them.
        "batch_alone": (["TritonHttpUser"], ["--model", "sleep_20ms_dynbatch4", "--shape", "INPUT0:16"], 1, "4s"),
        "batch_full": (["TritonHttpUser"], ["--model", "sleep_20ms_dynbatch4", "--shape", "INPUT0:16"], 12, "4s"),
        # One user, 40 ms a request, 2 s: at most 50 successes, too few to judge.
        "few": (["TritonHttpUser"], ["--model", "sleep_40ms_batch4", "--shape", "INPUT0:16"], 1, "2s"),
        # A generic user's random integers (0-99) as BERT's token and segment ids: the model fails every
        # request (its segment embedding has 2 rows); the failures come from the generated data.
        "random_ids": (
            ["TritonHttpUser"],
            ["--model", "bert_qa_dynbatch", "--shape", "input_ids:16", "--shape", "segment_ids:16",
             "--shape", "input_mask:16"],
            1, "2s",
        ),
        # BERT-QA with a 6-ms deadline against a model that takes longer: nearly every request times out.
        "timeout": (["BertQAHttpUser"], ["--model", "bert_qa_dynbatch", "--request-timeout", "0.006"], 2, "4s"),
    },
    # tests/unit/analysis/test_compare.py: identity over both protocols, and `sleep` (20 ms), far slower.
    "compare": {
        "http": (["TritonHttpUser"], ["--model", "identity"], 2, "5s"),
        "grpc": (["TritonGrpcUser"], ["--model", "identity"], 2, "5s"),
        "sleep": (["TritonHttpUser"], ["--model", "sleep", "--shape", "INPUT0:16"], 2, "5s"),
    },
    # tests/unit/analysis/test_gate.py: the same configuration twice, 20 s each (`sleep`: 20 ms a request).
    "gate": {
        "base": (["TritonHttpUser"], ["--model", "sleep", "--shape", "INPUT0:16"], 2, "20s"),
        "again": (["TritonHttpUser"], ["--model", "sleep", "--shape", "INPUT0:16"], 2, "20s"),
    },
}  # fmt: skip


def recorded(group: str, name: str, copy_to: Path | None = None) -> Path:
    """A recorded run directory, or a copy of it in `copy_to` for a test that writes (a report
    written into the run directory, say): the recording itself is never written into."""
    path = RECORDED / group / name
    if not (path / "summary.json").is_file():
        raise FileNotFoundError(f"{path} is not recorded: python -m tests.recorded_runs {group}")
    return path if copy_to is None else Path(shutil.copytree(path, copy_to / name))


def record(wanted: list[tuple[str, str]]) -> int:
    import locust  # noqa: F401  (gevent's patching first, as tests/conftest.py does)

    from loadtests.server import DEMO_REPOSITORY, TEST_REPOSITORY, LocalTriton
    from models.build import ensure_built
    from tests.helpers import run_locust, stalls

    weights = ensure_built("tiny")
    scratch = RECORDED.parent / ".recording"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    server = LocalTriton(
        [DEMO_REPOSITORY, TEST_REPOSITORY],
        log_file=scratch / "triton.log",
        environment={"TRITON_LOADTEST_WEIGHTS_DIR": str(weights)},
        extra_args=["--model-load-thread-count=16"],
        stop_timeout_s=0.0,
    )
    server.start()
    status = 0
    try:
        for group, name in wanted:
            classes, options, users, run_time = GROUPS[group][name]
            run_dir = RECORDED / group / name
            shutil.rmtree(run_dir, ignore_errors=True)
            result = run_locust(classes, [*server.options, *options, "--run-dir", str(run_dir)], users, run_time)
            stalled = stalls(run_dir)
            print(
                f"{group}/{name}: exit {result.returncode}" + (f", load generator stalled {stalled}" if stalled else "")
            )
            status |= int(bool(stalled)) or int(result.returncode not in (0, 1))
    finally:
        server.stop()
        shutil.rmtree(scratch, ignore_errors=True)
    return status


def runs_named(names: list[str]) -> list[tuple[str, str]]:
    """GROUP or GROUP/RUN names -> (group, run) pairs; every run when none is named."""
    wanted = []
    for text in names or list(GROUPS):
        group, _, name = text.partition("/")
        if group not in GROUPS or (name and name not in GROUPS[group]):
            sys.exit(f"error: no recorded run {text} (groups: {', '.join(GROUPS)})")
        wanted += [(group, one) for one in ([name] if name else GROUPS[group])]
    return wanted


if __name__ == "__main__":
    sys.exit(record(runs_named(sys.argv[1:])))
