"""triton-loadtest's locustfile: the user classes and options, no logic.

    locust -f locustfile.py                                  # web UI on :8089
    locust -f locustfile.py --headless -u 8 -t 1m BertQAGrpcUser --batch-size 1-8

See README.md and docs/ for the options and the run directory this writes.
"""

from locust import events

from loadtests import run

# Every user class of the workload kinds' table (loadtests/workloads/kinds.py): Locust offers
# the classes it finds in this module, so a new kind's classes appear here with no edit.
from loadtests.workloads.users import *  # noqa: F403

run.install(events)
