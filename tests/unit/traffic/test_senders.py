"""The open-loop sender pool: reused greenlets, grown to the sends in flight, joined or cut at a stop."""

from __future__ import annotations

import gevent
import gevent.event
import pytest

from loadtests.traffic.senders import SenderPool


def test_sequential_sends_reuse_one_greenlet():
    pool, done = SenderPool(), []
    for index in range(50):
        finished = gevent.event.Event()
        pool.submit(lambda i, event: (done.append(i), event.set()), index, finished)
        finished.wait(1.0)
        gevent.sleep(0)  # the sender goes back to waiting for the next call
    pool.join()
    assert done == list(range(50))
    assert pool.started == 1


def test_the_pool_grows_to_the_sends_in_flight_and_no_further():
    pool, release, done = SenderPool(), gevent.event.Event(), []

    def send(index: int) -> None:
        release.wait(5.0)
        done.append(index)

    for index in range(5):
        pool.submit(send, index)
    gevent.sleep(0.01)
    assert (pool.started, pool.busy) == (5, 5)
    release.set()
    gevent.sleep(0.01)
    assert pool.busy == 0
    for index in range(5, 8):  # three more at once: idle greenlets take them
        pool.submit(send, index)
    pool.join()
    assert sorted(done) == list(range(8))
    assert pool.started == 5


def test_join_lets_the_sends_in_flight_finish():
    pool, done = SenderPool(), []
    pool.submit(lambda: (gevent.sleep(0.05), done.append("slow")))
    pool.submit(done.append, "fast")
    gevent.sleep(0)
    pool.join()
    assert sorted(done) == ["fast", "slow"]
    assert pool.busy == 0


def test_kill_cuts_a_send_in_flight():
    pool, seen = SenderPool(), []

    def send() -> None:
        try:
            gevent.sleep(5.0)
        except gevent.GreenletExit:
            seen.append("cut")
            raise

    pool.submit(send)
    gevent.sleep(0.01)
    with gevent.Timeout(1.0):
        pool.kill()
    assert seen == ["cut"]


@pytest.mark.parametrize("calls", [1, 3])
def test_idle_greenlets_end_at_join(calls):
    pool = SenderPool()
    for _ in range(calls):
        pool.submit(lambda: None)
    gevent.sleep(0.01)
    with gevent.Timeout(1.0):
        pool.join()
    assert len(pool._group) == 0
