"""Correlation IDs (loadtests/workloads/sequences.py): disjoint across workers and users, never 0, within
the bits the model's CORRID keeps (63 for a 64-bit one, 32 for UINT32, 31 for INT32)."""

from __future__ import annotations

import pytest

from loadtests.errors import StartupError
from loadtests.workloads.sequences import ID_BITS, MIN_SEQUENCE_BITS, IdLayout, RunSize, SequenceIds, UserSlots

WIDE = IdLayout()
MAX_WORKERS = 1 << WIDE.worker_bits
# Worker counts from one process to far beyond any deployment, and the last index the scheme allows.
WORKER_COUNTS = [1, 2, 3, 4, 7, 16, 100, 1000]
CORRID_TYPES = ["TYPE_UINT64", "TYPE_INT64", None, "TYPE_UINT32", "TYPE_INT32"]


def ids_of_workers(layout: IdLayout, workers: list[int], users: int, sequences: int) -> list[int]:
    """Every ID the users of these workers send in their first `sequences` sequences."""
    found = []
    for worker in workers:
        slots = UserSlots()
        for _ in range(users):
            ids = SequenceIds(layout, worker, slots.acquire())
            found += [ids.next() for _ in range(sequences)]
    return found


def kept(corrid_type: str | None, ids: list[int]) -> list[int]:
    """What the model's CORRID control receives of each ID: Triton copies the low bytes."""
    bits = ID_BITS.get(corrid_type or "", 64)
    return [i & ((1 << bits) - 1) for i in ids]


@pytest.mark.parametrize("corrid_type", CORRID_TYPES)
@pytest.mark.parametrize("workers", WORKER_COUNTS)
def test_ids_are_disjoint_across_workers_and_users_in_what_the_model_keeps(workers, corrid_type):
    users = 3 if workers > 100 else 8
    layout = IdLayout.of(corrid_type, RunSize.planned(workers, users * workers))
    found = ids_of_workers(layout, list(range(workers)), users=users, sequences=20)
    assert len(set(kept(corrid_type, found))) == len(found)
    assert min(found) > 0
    assert max(found) < 2 ** ID_BITS.get(corrid_type or "", 63)  # 63: fits gRPC's int64_param too


def test_highest_worker_indexes_stay_disjoint_and_in_range():
    workers = [MAX_WORKERS - 3, MAX_WORKERS - 2, MAX_WORKERS - 1]
    found = ids_of_workers(WIDE, workers, users=4, sequences=10)
    assert len(set(found)) == len(found)
    assert max(found) < 2**63


@pytest.mark.parametrize("corrid_type", ["TYPE_UINT32", "TYPE_INT32"])
def test_32_bit_layout_takes_the_bits_the_run_needs_and_leaves_the_rest_to_sequences(corrid_type):
    run = RunSize.planned(workers=5, users=37)  # 8 users per worker at most
    layout = IdLayout.of(corrid_type, run)
    assert (layout.worker_bits, layout.slot_bits) == ((5 - 1).bit_length(), (8 - 1).bit_length())
    assert layout.worker_bits + layout.slot_bits + layout.sequence_bits == ID_BITS[corrid_type]
    found = ids_of_workers(layout, list(range(run.workers)), users=run.users_per_worker, sequences=50)
    assert len(set(found)) == len(found) and max(found) < 2 ** ID_BITS[corrid_type]


@pytest.mark.parametrize("corrid_type", ["TYPE_UINT32", "TYPE_INT32"])
def test_a_run_too_big_for_32_bit_ids_is_a_startup_error(corrid_type):
    room = ID_BITS[corrid_type] - MIN_SEQUENCE_BITS  # bits for worker index and slot together
    fits = RunSize(workers=2 ** (room // 2), users_per_worker=2 ** (room - room // 2))
    assert IdLayout.of(corrid_type, fits).sequence_bits == MIN_SEQUENCE_BITS
    too_big = RunSize(workers=fits.workers, users_per_worker=fits.users_per_worker + 1)
    with pytest.raises(StartupError, match="TYPE_UINT64 CORRID"):
        IdLayout.of(corrid_type, too_big)
    with pytest.raises(StartupError, match="not received"):
        IdLayout.of(corrid_type, None)
    assert IdLayout.of("TYPE_UINT64", None) == WIDE  # a 64-bit ID needs no run size


def test_one_users_ids_cycle_without_zero():
    ids = SequenceIds(WIDE, worker=5, slot=9)
    first_cycle = [ids.next() for _ in range(WIDE.sequences_per_cycle)]
    assert len(set(first_cycle)) == WIDE.sequences_per_cycle == 65535
    assert ids.next() == first_cycle[0]  # reused only after 65,535 sequences of this user
    assert all(i >> 32 == 5 and (i >> 16) & 0xFFFF == 9 and i & 0xFFFF for i in first_cycle)


def test_slots_of_stopped_users_are_reused_and_running_users_never_share():
    slots = UserSlots()
    taken = [slots.acquire() for _ in range(5)]
    assert taken == [0, 1, 2, 3, 4]
    slots.release(1)
    slots.release(3)
    assert [slots.acquire(), slots.acquire(), slots.acquire()] == [1, 3, 5]


def test_a_worker_or_user_outside_the_layout_is_a_startup_error():
    layout = IdLayout.of("TYPE_UINT32", RunSize(workers=3, users_per_worker=4))
    SequenceIds(layout, worker=3, slot=3)  # 2 bits each: 0..3 fit
    for worker, slot in [(4, 0), (0, 4)]:
        with pytest.raises(StartupError, match="no correlation IDs of its own"):
            SequenceIds(layout, worker, slot)
    with pytest.raises(StartupError):
        SequenceIds(WIDE, worker=0, slot=1 << WIDE.slot_bits)


@pytest.mark.parametrize(("worker", "slot", "sequence"), [(-1, 0, 1), (MAX_WORKERS, 0, 1), (0, -1, 1), (0, 0, 0)])
def test_out_of_range_parts_are_refused(worker, slot, sequence):
    with pytest.raises(ValueError):
        WIDE.correlation_id(worker, slot, sequence)
