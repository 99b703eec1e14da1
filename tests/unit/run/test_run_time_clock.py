"""Locust sets -t's timer right after its init event, from the gevent loop's clock, which moves only
when the loop runs. Through the imports and the suite's pre-flight it stood still (0.8 s on a quiet
host, over 2 s on a busy one): a 2-s run then ended before its users sent a request (seen as
'Run time limit set' and 'limit reached' 7 ms apart, 0 requests). The suite's init brings the clock
up to date."""

from __future__ import annotations

import argparse
import time

import gevent
import gevent.monkey
from locust.env import Environment
from locust.event import Events

from loadtests.options.reading import settings_from, take_run_time
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


def test_the_suite_timing_minus_t_leaves_the_settings_and_config_json_as_they_were():
    """Headless without a load shape the suite times -t and Locust's own run_time is None: the
    settings read anew at test_start must still equal those of the pre-flight (else the endpoints
    it prepared are dropped and config.json lost -t and what the requests carry: CI of 17704b8)."""
    options = argparse.Namespace(run_time=3, headless=True, num_users=2, spawn_rate=2.0)
    before = settings_from(options)
    take_run_time(options)
    assert options.run_time is None  # Locust sets no timer of its own
    after = settings_from(options)
    assert after == before
    assert after.run_time_s == 3.0
    assert after.as_given["run_time"] == 3 and "triton_loadtest_run_time" not in after.as_given
