"""The load generator's own stalls: late wake-ups of its gevent loop, kept as spans."""

from __future__ import annotations

import gevent
import pytest

from loadtests.recording.faults import FaultLog
from loadtests.recording.stalls import StallMeter
from loadtests.run_format.faults import fault_sentences


def test_a_wake_up_late_by_the_threshold_is_a_stall_ending_now():
    meter = StallMeter(threshold_s=0.5, interval_s=0.1, wall=lambda: 1000.0)
    meter.woke(0.1)  # on time
    meter.woke(0.599)  # late by 0.499 s: a busy loop, not a stall
    meter.woke(0.6)
    meter.woke(2.1)
    assert meter.take() == [(999.5, 1000.0), (998.0, 1000.0)]
    assert meter.take() == []


class HeldClock:
    """The meter's two clocks, moved by the test alone: a loop held for N s is the clock moved
    N s while no greenlet runs (a real busy loop timed on the real clocks failed at nice 19 in a
    fresh clone's background shard: the process was descheduled between the meter's two clock
    reads, and the span it kept started 63 ms after the hold)."""

    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now

    def wall(self) -> float:
        return 1000.0 + self.now


def test_a_greenlet_that_holds_the_loop_is_caught_by_the_meter():
    clock = HeldClock()
    meter = StallMeter(threshold_s=0.2, interval_s=0.02, clock=clock.monotonic, wall=clock.wall)
    meter.start()
    meter.start()  # once per process
    gevent.sleep(0.1)  # the meter wakes (its 20-ms sleeps end first), on time by its clock
    assert meter.take() == []
    held_from = clock.wall()
    clock.now += 0.4  # the loop held for 0.4 s: nothing yields while the clock moves
    held_to = clock.wall()
    gevent.sleep(0.1)  # the meter's next wake-up comes 0.38 s late by its clock
    (stall,) = meter.take()
    assert stall == pytest.approx((held_from + 0.02, held_to))  # from the end of its asked sleep


def test_stalls_are_faults_of_the_run_in_order_and_in_words():
    faults = FaultLog(started_at=100.0)
    faults.stalled("w2", [(107.0, 108.5)])
    faults.stalled("local", [])
    faults.stalled("master", [(103.25, 104.0)])
    out = faults.to_json([], [], {}, {})
    assert out["load_generator_stalled"] == [
        {"process": "master", "from_s": 3.25, "to_s": 4.0, "s": 0.75},
        {"process": "w2", "from_s": 7.0, "to_s": 8.5, "s": 1.5},
    ]
    master, worker = fault_sentences(out)
    assert master.startswith("The master stalled for 0.8 s from 3.2 s") and "steps" in master
    assert worker.startswith("Worker w2 stalled for 1.5 s from 7.0 s") and "sent no requests" in worker
    assert "step" not in worker  # the master ticks the load shape, not a worker
    local = fault_sentences({"load_generator_stalled": [{"process": "local", "from_s": 1, "to_s": 3, "s": 2}]})
    assert local[0].startswith("The load generator stalled for 2.0 s from 1.0 s")
    assert FaultLog(started_at=0.0).to_json([], [], {}, {})["load_generator_stalled"] == []
