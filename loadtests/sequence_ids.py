"""Correlation IDs for sequence users: disjoint across workers and across users, never 0.

Triton keeps one state per correlation ID, so two generators that send the same ID at once
corrupt each other's sequences (triton-inference-server/server#3103). Every ID is built
from three numbers, each in its own bits of an unsigned 64-bit integer:

    bit 63    bits 62..32          bits 31..16             bits 15..0
    0         worker index         user slot in worker     sequence number of that user
              (Locust's runner.    (lowest free slot,      (1..65535, then 1 again; 0 is
              worker_index: 0 in   released when the       never used, so no ID is 0)
              a single process)    user stops)

Two IDs from different workers differ in the worker bits, two from users alive at the same
time in one worker in the slot bits, and two of one user only after 65,535 of its sequences
(by then the first has long ended). Locust's master numbers workers 0, 1, 2, ... in the
order they connect and never reuses a number while it runs, whatever the worker count, so
IDs stay disjoint for up to 2**31 workers and 65,536 users per worker. Bit 63 stays 0: the
ID fits the signed 64-bit `int64_param` that tritonclient sends over gRPC too.

Example:
    slots = UserSlots()
    ids = SequenceIds(worker=2, slot=slots.acquire())
    ids.next(), ids.next()  # (0x2_0000_0001, 0x2_0000_0002)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from loadtests.errors import StartupError

WORKER_BITS = 31
SLOT_BITS = 16
SEQUENCE_BITS = 16
MAX_WORKERS = 1 << WORKER_BITS
MAX_USERS_PER_WORKER = 1 << SLOT_BITS
SEQUENCES_PER_CYCLE = (1 << SEQUENCE_BITS) - 1  # numbers 1..65535


def correlation_id(worker: int, slot: int, sequence: int) -> int:
    """The ID of one user's sequence; raises ValueError outside the ranges above."""
    if not 0 <= worker < MAX_WORKERS:
        raise ValueError(f"worker index {worker} is outside 0..{MAX_WORKERS - 1}")
    if not 0 <= slot < MAX_USERS_PER_WORKER:
        raise ValueError(f"user slot {slot} is outside 0..{MAX_USERS_PER_WORKER - 1}")
    if not 1 <= sequence <= SEQUENCES_PER_CYCLE:
        raise ValueError(f"sequence number {sequence} is outside 1..{SEQUENCES_PER_CYCLE}")
    return worker << (SLOT_BITS + SEQUENCE_BITS) | slot << SEQUENCE_BITS | sequence


@dataclass
class UserSlots:
    """The user slots of one worker process: the lowest free one to each starting user."""

    taken: set[int] = field(default_factory=set)

    def acquire(self) -> int:
        """A slot no running user of this process holds; raises StartupError past 65,536 users."""
        slot = next((s for s in range(len(self.taken) + 1) if s not in self.taken), None)
        if slot is None or slot >= MAX_USERS_PER_WORKER:
            raise StartupError(
                f"more than {MAX_USERS_PER_WORKER} sequence users in one worker process would share "
                "correlation IDs: run more workers"
            )
        self.taken.add(slot)
        return slot

    def release(self, slot: int) -> None:
        self.taken.discard(slot)


@dataclass
class SequenceIds:
    """One user's correlation IDs, a new one per sequence."""

    worker: int
    slot: int
    _last: int = 0

    def next(self) -> int:
        self._last = self._last % SEQUENCES_PER_CYCLE + 1
        return correlation_id(self.worker, self.slot, self._last)
