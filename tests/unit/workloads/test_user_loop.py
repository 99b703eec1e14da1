"""A closed-loop user shares its process's gevent loop even when no request ever blocks."""

from __future__ import annotations

import time

import gevent
from locust.env import Environment
from locust.user.task import LOCUST_STATE_STOPPING

from loadtests.workloads.users import LoopTurn, TritonHttpUser


class AnswerAlreadyThere:
    """A client whose every answer is waiting when it reads: infer() returns without blocking.
    It stops its user after `run_s` itself (nothing else may get a turn to do it)."""

    def __init__(self, user, run_s: float) -> None:
        self.user, self.requests = user, 0
        self.until = time.perf_counter() + run_s

    def infer(self, request, validator) -> None:
        self.requests += 1
        if time.perf_counter() >= self.until:
            self.user._state = LOCUST_STATE_STOPPING
        deadline = time.perf_counter() + 0.0002  # a request's own CPU work
        while time.perf_counter() < deadline:
            pass


class OneRequest:
    validator = None

    def pick(self, rng):
        return None


def test_a_user_whose_requests_never_block_leaves_turns_to_the_rest_of_the_process():
    user = TritonHttpUser(Environment(user_classes=[TritonHttpUser]))
    client = AnswerAlreadyThere(user, run_s=0.3)
    user.client, user.endpoint, user.rng = client, OneRequest(), None
    user.process = type("Process", (), {"sender": None})()
    turns: list[float] = []

    def watch() -> None:  # the shape's tick, the window closing, another user...
        while True:
            gevent.sleep(0)
            turns.append(time.perf_counter())

    watcher = gevent.spawn(watch)
    running = gevent.spawn(user.send_requests)
    running.join(timeout=2)
    watcher.kill()
    assert running.dead and client.requests > 100
    # Turns while the user ran: one per TURN_S on a quiet host (about 60 in its 0.3 s), far
    # fewer while the host runs other work (8 seen beside a full `make test`: the process
    # itself got little CPU). Before: none, the watcher ran only once the user had stopped.
    during = [t for t in turns if t < client.until]
    assert len(during) >= 3, len(during)


def test_a_turn_is_given_once_the_interval_has_passed():
    now = [0.0]
    turn = LoopTurn(every_s=0.005, clock=lambda: now[0])
    switches = []
    watcher = gevent.spawn(lambda: switches.append(1))
    now[0] = 0.004
    turn.take()
    assert not switches  # not yet: no switch
    now[0] = 0.005
    turn.take()
    assert switches  # the other greenlet ran
    watcher.join()
