"""triton-loadtest's locustfile: the suite's user classes, no logic (`triton-loadtest locustfile`
prints this file's path; the checkout's locustfile.py imports it).

    locust -f locustfile.py                                  # web UI on :8089
    locust -f locustfile.py --headless -u 8 -t 1m BertQAGrpcUser --batch-size 1-8
    locust -f locustfile.py,mine.py ...                      # beside a locustfile of your own

Each class is the concrete twin of the abstract base of the same name that `loadtests` exports
(loadtests/workloads/users.py): it has no task of its own, so it runs the suite's workload on
the model the options name. Importing the bases sets the suite up (options, listeners) once.
See README.md and docs/ for the options and the run directory this writes.
"""

from locust import events

from loadtests import run
from loadtests.workloads import users

run.install(events)

# One pair per kind of the workload kinds' table (loadtests/workloads/kinds.py), each base's
# docstring saying what it sends.


class BertQAHttpUser(users.BertQAHttpUser):
    __doc__ = users.BertQAHttpUser.__doc__


class BertQAGrpcUser(users.BertQAGrpcUser):
    __doc__ = users.BertQAGrpcUser.__doc__


class ResNetHttpUser(users.ResNetHttpUser):
    __doc__ = users.ResNetHttpUser.__doc__


class ResNetGrpcUser(users.ResNetGrpcUser):
    __doc__ = users.ResNetGrpcUser.__doc__


class TritonHttpUser(users.TritonHttpUser):
    __doc__ = users.TritonHttpUser.__doc__


class TritonGrpcUser(users.TritonGrpcUser):
    __doc__ = users.TritonGrpcUser.__doc__


class TritonSequenceHttpUser(users.TritonSequenceHttpUser):
    __doc__ = users.TritonSequenceHttpUser.__doc__


class TritonSequenceGrpcUser(users.TritonSequenceGrpcUser):
    __doc__ = users.TritonSequenceGrpcUser.__doc__


__all__ = [
    "BertQAGrpcUser",
    "BertQAHttpUser",
    "ResNetGrpcUser",
    "ResNetHttpUser",
    "TritonGrpcUser",
    "TritonHttpUser",
    "TritonSequenceGrpcUser",
    "TritonSequenceHttpUser",
]
