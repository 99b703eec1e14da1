"""The run wiring in process: a real Locust runner against the local Triton, the suite's events
observed from outside, as a load shape or a plugin would."""

from __future__ import annotations

import pytest

from loadtests.run.role import Role


@pytest.mark.parametrize(("runner_kind", "role"), [("local", Role.LOCAL), ("master", Role.MASTER)])
def test_role_is_decided_once_from_the_runner(runner_kind, role):
    from locust.env import Environment
    from locust.event import Events

    environment = Environment(user_classes=[], events=Events())
    runner = (
        environment.create_local_runner()
        if runner_kind == "local"
        else environment.create_master_runner("127.0.0.1", 0)
    )
    try:
        assert Role.of(runner) is role
        assert role.records_run and role.runs_users == (role is Role.LOCAL)
    finally:
        runner.quit()


def test_the_user_count_is_not_noted_while_locust_stops_the_users():
    """At the end Locust stops the users one by one (state cleanup, or stopping on a master): a
    count noted then put a half-stopped run's users in the last window (3 users for the whole
    window, 1 in timeseries.csv: a steps-shape test failed on it once)."""
    from locust import User
    from locust.env import Environment
    from locust.runners import STATE_CLEANUP, STATE_RUNNING, STATE_SPAWNING, STATE_STOPPED, STATE_STOPPING

    from loadtests.run.lifecycle import counting_users

    class Idle(User):
        pass

    runner = Environment(user_classes=[Idle]).create_local_runner()
    verdicts = {}
    for state in (STATE_SPAWNING, STATE_RUNNING, STATE_CLEANUP, STATE_STOPPING, STATE_STOPPED):
        runner.update_state(state)
        verdicts[state] = counting_users(runner)
    assert verdicts == {
        STATE_SPAWNING: True,
        STATE_RUNNING: True,
        STATE_CLEANUP: False,
        STATE_STOPPING: False,
        STATE_STOPPED: True,
    }
    assert counting_users(None)
