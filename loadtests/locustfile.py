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
from loadtests.workloads.kinds import user_class_names

run.install(events)

# One concrete class per name of the workload kinds' table (loadtests/workloads/kinds.py), each a
# subclass of the abstract base of that name with the base's docstring: Locust offers the classes
# it finds in this module, so a new kind's classes appear here with no edit.
__all__ = user_class_names()
for _name in __all__:
    _base = getattr(users, _name)
    globals()[_name] = type(_name, (_base,), {"__doc__": _base.__doc__, "__module__": __name__})
del _name, _base
