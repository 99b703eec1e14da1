"""Correlation IDs (loadtests/sequence_ids.py): disjoint across workers and users, never 0, in 63 bits."""

from __future__ import annotations

import pytest

from loadtests.errors import StartupError
from loadtests.sequence_ids import (
    MAX_USERS_PER_WORKER,
    MAX_WORKERS,
    SEQUENCES_PER_CYCLE,
    SequenceIds,
    UserSlots,
    correlation_id,
)

# Worker counts from one process to far beyond any deployment, and the last index the scheme allows.
WORKER_COUNTS = [1, 2, 3, 4, 7, 16, 100, 1000]


def ids_of_workers(workers: list[int], users: int, sequences: int) -> list[int]:
    """Every ID the users of these workers send in their first `sequences` sequences."""
    found = []
    for worker in workers:
        slots = UserSlots()
        for _ in range(users):
            ids = SequenceIds(worker, slots.acquire())
            found += [ids.next() for _ in range(sequences)]
    return found


@pytest.mark.parametrize("workers", WORKER_COUNTS)
def test_ids_are_disjoint_across_workers_and_users(workers):
    found = ids_of_workers(list(range(workers)), users=3 if workers > 100 else 8, sequences=20)
    assert len(set(found)) == len(found)
    assert min(found) > 0
    assert max(found) < 2**63  # fits tritonclient's int64_param (gRPC) as well as UINT64


def test_highest_worker_indexes_stay_disjoint_and_in_range():
    workers = [MAX_WORKERS - 3, MAX_WORKERS - 2, MAX_WORKERS - 1]
    found = ids_of_workers(workers, users=4, sequences=10)
    assert len(set(found)) == len(found)
    assert max(found) < 2**63


def test_one_users_ids_cycle_without_zero():
    ids = SequenceIds(worker=5, slot=9)
    first_cycle = [ids.next() for _ in range(SEQUENCES_PER_CYCLE)]
    assert len(set(first_cycle)) == SEQUENCES_PER_CYCLE
    assert ids.next() == first_cycle[0]  # reused only after 65,535 sequences of this user
    assert all(i >> 32 == 5 and (i >> 16) & 0xFFFF == 9 and i & 0xFFFF for i in first_cycle)


def test_slots_of_stopped_users_are_reused_and_running_users_never_share():
    slots = UserSlots()
    taken = [slots.acquire() for _ in range(5)]
    assert taken == [0, 1, 2, 3, 4]
    slots.release(1)
    slots.release(3)
    assert [slots.acquire(), slots.acquire(), slots.acquire()] == [1, 3, 5]


def test_more_users_than_slots_is_a_startup_error():
    slots = UserSlots(taken=set(range(MAX_USERS_PER_WORKER)))
    with pytest.raises(StartupError, match="run more workers"):
        slots.acquire()


@pytest.mark.parametrize(("worker", "slot", "sequence"), [(-1, 0, 1), (MAX_WORKERS, 0, 1), (0, -1, 1), (0, 0, 0)])
def test_out_of_range_parts_are_refused(worker, slot, sequence):
    with pytest.raises(ValueError):
        correlation_id(worker, slot, sequence)
