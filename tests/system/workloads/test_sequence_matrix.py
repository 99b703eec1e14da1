"""Sequence users across the space of sequence models Triton allows (tests/sequence_matrix.py):
INT32/INT64/UINT32/UINT64 inputs, max_batch_size 0 and > 0, the `direct` and `oldest`
strategies, every CORRID type (UINT64, INT64, UINT32, INT32, STRING), int32/fp32/bool
controls; HTTP and gRPC.

One Triton for the module serves the models alone (a temporary repository, so the session's
Triton does not start their stubs). Each cell drives one model over one protocol through the
suite's own path (pre-flight, the clients, SequenceSender and its running-sum check), its
senders numbered as the users of different workers would be: every response must hold the
sum its sequence sent so far, and the requests counted must equal Triton's statistics, none
refused. A master and three worker processes then run on a 32-bit CORRID accumulator.
"""

from __future__ import annotations

import random

import gevent
import pytest
from locust.event import EventHook

from loadtests.clients import Connections, open_client
from loadtests.config.batch_size import BatchSizeSpec
from loadtests.config.settings import Settings
from loadtests.errors import ModelMismatchError
from loadtests.server import LocalTriton, TritonPorts
from loadtests.workloads.endpoints import prepare_endpoint
from loadtests.workloads.kinds import SEQUENCE
from loadtests.workloads.sequences import MIN_SEQUENCE_BITS, IdLayout, RunSize, SequenceIds, SequenceSender
from tests.helpers import (
    THROWAWAY_STOP_S,
    grpc_target,
    http_target,
    model_stats,
    model_stats_once_counted,
    read_summary,
    run_cli,
    run_locust,
)
from tests.sequence_matrix import MODELS, UINT32_ACCUMULATOR, write_repository

USERS = 3
SEQUENCES_PER_USER = 5
# Length 1 is a request that both starts and ends its sequence (Triton's START|END).
LENGTHS = "1,3,5"


@pytest.fixture(scope="module")
def matrix_triton(tmp_path_factory):
    parent = tmp_path_factory.mktemp("sequence_matrix")
    with LocalTriton(
        [write_repository(parent)], log_file=parent / "triton.log", stop_timeout_s=THROWAWAY_STOP_S
    ) as server:
        yield server


class Tally:
    """What the request event reported: requests, failures by name, sequence outcomes."""

    def __init__(self) -> None:
        self.requests = 0
        self.failures: dict[str, int] = {}
        self.first_failure = ""
        self.started = 0
        self.outcomes: dict[str, int] = {}
        self.event = EventHook()
        self.event.add_listener(self.on_request)

    def on_request(self, exception=None, context=None, **_) -> None:
        self.requests += 1
        if exception is not None:
            self.failures[str(exception)] = self.failures.get(str(exception), 0) + 1
            self.first_failure = self.first_failure or exception.detail
        self.started += context.sequence_started  # the client's RequestOutcome
        outcome = context.sequence_outcome
        if outcome:
            self.outcomes[outcome] = self.outcomes.get(outcome, 0) + 1


def drive(triton: LocalTriton, model: str, protocol: str) -> Tally:
    """USERS senders, each with its own connection, as the first user of worker 0, 1, 2, ...:
    SEQUENCES_PER_USER sequences each, all at once."""
    settings = Settings(
        triton_http=http_target(triton.http_address), triton_grpc=grpc_target(triton.grpc_address), model=model
    )
    tally, connections = Tally(), Connections()
    clients = [open_client(protocol, settings, tally.event, connections) for _ in range(USERS)]
    try:
        endpoint = prepare_endpoint(SEQUENCE, clients[0], model, settings)
        lengths = BatchSizeSpec.parse(LENGTHS)
        layout = IdLayout.of(endpoint.model.correlation_id_type, RunSize(workers=USERS, users_per_worker=1))
        senders = [
            # Never stopping (lambda: False): every sequence runs to its END.
            SequenceSender(
                client, endpoint, SequenceIds(layout, worker, 0), lengths, random.Random(worker), lambda: False
            )
            for worker, client in enumerate(clients)
        ]
        jobs = [gevent.spawn(lambda s=s: [s.run_one() for _ in range(SEQUENCES_PER_USER)]) for s in senders]
        gevent.joinall(jobs, raise_error=True)
    finally:
        for client in clients:
            client.close()
    return tally


@pytest.mark.parametrize("protocol", ["http", "grpc"])
@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.name)
def test_every_sequence_model_kind_gets_right_sums_and_counts(matrix_triton, model, protocol):
    before = model_stats(matrix_triton.http_address, model.name)
    if model.corrid == "STRING":
        with pytest.raises(ModelMismatchError, match="string correlation IDs"):
            drive(matrix_triton, model.name, protocol)
        assert model_stats(matrix_triton.http_address, model.name) == before
        return
    tally = drive(matrix_triton, model.name, protocol)
    total = before["requests"] + before["failures"] + tally.requests
    after = model_stats_once_counted(matrix_triton.http_address, model.name, total)
    sequences = USERS * SEQUENCES_PER_USER
    assert tally.failures == {}, f"{tally.failures}: {tally.first_failure}"
    assert tally.started == sequences
    assert tally.outcomes == {"completed": sequences}
    # Triton counted every request the suite did (lengths 1..5: more requests than sequences), refused none.
    assert tally.requests > sequences
    assert after["requests"] - before["requests"] == tally.requests
    assert after["failures"] - before["failures"] == 0


def test_a_string_corrid_model_is_refused_before_any_load(matrix_triton):
    """From the command line: one `error:` line, exit code 2, Triton's counters untouched."""
    model = next(m for m in MODELS if m.corrid == "STRING")
    before = model_stats(matrix_triton.http_address, model.name)
    result = run_locust(["TritonSequenceGrpcUser"], [*matrix_triton.options, "--model", model.name])
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert result.returncode == 2, result.stderr[-2000:]
    assert len(errors) == 1 and "TYPE_STRING" in errors[0], errors
    assert model_stats(matrix_triton.http_address, model.name) == before


def test_a_master_and_three_workers_on_a_32_bit_corrid_accumulator(matrix_triton, tmp_path):
    """Triton hands a UINT32 CORRID the low 32 bits of each ID: the IDs of three workers'
    users must differ there too. Triton refuses none, every sum is right, the counts agree."""
    model, workers, run_dir, port = UINT32_ACCUMULATOR.name, 3, tmp_path / "run", str(TritonPorts.free().http)
    before = model_stats(matrix_triton.http_address, model)
    # A fixed, short length: every worker's users start their sequences in step, so IDs that
    # collided in the low 32 bits would meet in the model within the first sequences.
    result = run_cli(
        [
            "-m", "locust", "-f", "locustfile.py", "--headless", "--only-summary",
            "-u", "6", "-r", "60", "-t", "4s", "TritonSequenceHttpUser", "TritonSequenceGrpcUser",
            *matrix_triton.options, "--model", model, "--sequence-length", "3", "--run-dir", str(run_dir),
            "--processes", str(workers), "--master-bind-port", port, "--master-port", port,
        ],
        timeout=180,
    )  # fmt: skip
    after = model_stats(matrix_triton.http_address, model)
    summary = read_summary(run_dir)
    endpoints = summary["endpoints"]
    assert {e["protocol"] for e in endpoints} == {"http", "grpc"}
    for endpoint in endpoints:
        assert endpoint["failures_by_class"] == {}, endpoint["failures_by_class"]
        assert endpoint["sequences_failed"] == 0
        assert endpoint["sequences_completed"] > 5 * workers, endpoint
    assert result.returncode == 0, result.stderr[-3000:]
    assert after["failures"] - before["failures"] == 0
    assert after["requests"] - before["requests"] == sum(e["requests"] for e in endpoints)


def test_a_run_too_big_for_32_bit_ids_is_refused_before_any_load(matrix_triton):
    """More users than a 32-bit CORRID leaves bits for (next to MIN_SEQUENCE_BITS of sequence
    number): one `error:` line, exit code 2, Triton's counters untouched."""
    model = UINT32_ACCUMULATOR.name
    users = 2 ** (32 - MIN_SEQUENCE_BITS) + 1  # one process: every user's slot needs its own bits
    before = model_stats(matrix_triton.http_address, model)
    result = run_locust(["TritonSequenceHttpUser"], [*matrix_triton.options, "--model", model], users=users)
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert result.returncode == 2, result.stderr[-2000:]
    assert len(errors) == 1 and "TYPE_UINT32 CORRID" in errors[0], errors
    assert model_stats(matrix_triton.http_address, model) == before
