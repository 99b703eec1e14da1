"""What Locust's stop costs the requests in flight (loadtests/run/stopping.py, `warm_the_stop`).

`Runner.stop()` calls `inspect.stack()` first thing, with the event loop held. Its first call in a
process maps every loaded module's file (one `os.path.realpath` each: about 1,000 modules, 65 ms
on this host), and each request in flight waited that long to see its answer. The suite makes the
call at test start, so Locust's stop looks up no module file. Counted, not timed, in a fresh
process (the map is per process): a real Locust LocalRunner with two users.
"""

from __future__ import annotations

import subprocess
import sys

from tests.helpers import REPO_ROOT

RUN = """
import inspect, os, sys
from types import SimpleNamespace
import gevent
from locust import User, constant, task
from locust.env import Environment
from loadtests.run.role import Role
from loadtests.run.stopping import StopGrace

class Idle(User):
    wait_time = constant(0.01)
    @task
    def nothing(self):
        gevent.sleep(0.01)

environment = Environment(user_classes=[Idle])
if sys.argv[1] == "suite":
    StopGrace(SimpleNamespace(environment=environment, role=Role.LOCAL, slowest_ms=0.0)).register()
runner = environment.create_local_runner()
runner.start(2, spawn_rate=100)
while runner.user_count < 2:
    gevent.sleep(0.01)
looked_up = []
realpath = os.path.realpath
os.path.realpath = lambda path, *args, **kwargs: looked_up.append(path) or realpath(path, *args, **kwargs)
runner.stop()
os.path.realpath = realpath
print(len(looked_up))
"""


def module_files_looked_up_at_stop(mode: str) -> int:
    result = subprocess.run(
        [sys.executable, "-c", RUN, mode], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120, check=True
    )
    return int(result.stdout.split()[-1])


def test_locusts_stop_looks_up_no_module_file_with_the_suites_listeners():
    # Locust alone: its stop maps every loaded module (the cost this guards against is still there).
    assert module_files_looked_up_at_stop("locust") > 300
    # With the suite's StopGrace (every role registers it), the map was made at test start.
    assert module_files_looked_up_at_stop("suite") == 0
