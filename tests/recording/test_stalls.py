"""The load generator's own stalls: late wake-ups of its gevent loop, kept as spans."""

from __future__ import annotations

import time

import gevent

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


def test_a_greenlet_that_holds_the_loop_is_caught_by_the_meter():
    meter = StallMeter(threshold_s=0.2, interval_s=0.02)
    meter.start()
    meter.start()  # once per process
    gevent.sleep(0.1)
    held_from = time.time()
    deadline = time.monotonic() + 0.4
    while time.monotonic() < deadline:  # CPU work that never yields
        pass
    held_to = time.time()
    gevent.sleep(0.1)
    (stall,) = meter.take()
    assert held_from - 0.05 <= stall[0] <= held_from + 0.05 and held_to <= stall[1] <= held_to + 0.05


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
