"""Locust sets -t's timer right after its init event, from the gevent loop's clock, which moves only
when the loop runs. Through the imports and the suite's pre-flight it stood still (0.8 s on a quiet
host, over 2 s on a busy one): a 2-s run then ended before its users sent a request (seen as
'Run time limit set' and 'limit reached' 7 ms apart, 0 requests). The suite's init brings the clock
up to date."""

from __future__ import annotations

import time

import gevent
import gevent.monkey
from locust.env import Environment
from locust.event import Events

from loadtests.run import install


def test_the_loop_clock_is_current_when_the_suites_init_ends():
    events = Events()
    install(events)
    environment = Environment(events=events)
    runner = environment.create_local_runner()
    loop = gevent.get_hub().loop
    blocking_sleep = gevent.monkey.get_original("time", "sleep")  # Locust patched time.sleep
    blocking_sleep(0.05)  # work that never yields to the loop (imports, answers already there)
    before = time.time()
    events.init.fire(environment=environment, runner=runner, web_ui=None)
    try:
        assert loop.now() >= before
    finally:
        runner.quit()
