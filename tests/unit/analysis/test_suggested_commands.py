"""Every command the diagnosis suggests runs as pasted, against a real Triton.

The commands come from the recorded runs (tests/recorded_runs.py), one of each form (kind,
options and user classes; two sweeps that differ only in their model and range run the same
code, and a capacity search takes half a minute here): each carries the Triton
addresses its run used, which here are swapped for the session Triton's (what the reader's own
run would have used is their own Triton), and is shortened where its length is not the point
(a locust run of 2 s, a sweep of its first level, a capacity search of short windows).
Nothing else is added or changed: the classes, models, shapes and options are the report's. Each
must succeed or end with its documented verdict code (docs/guides/sweeps.md, capacity.md,
tuning.md): Locust's 1 when requests failed (the overload run's command sends to a queue of
one), a sweep's 5 for a level that did not stabilise in three windows, capacity's 3 when no rate
met the target; tune refuses a Triton not in explicit model-control mode (the session Triton is
not) with its one line and exit code 2, after it has read every option and reached Triton.
"""

from __future__ import annotations

import shlex

from analysis.dataset import load
from analysis.diagnosis import Diagnosis, diagnose
from tests.recorded_runs import GROUPS, recorded


def form(command: str) -> tuple:
    """What a command is made of, values aside: its kind, its options, its user classes. Commands
    of one form run the same code with other numbers (another model, range or latency target)."""
    words = shlex.split(command)
    return (words[0] if words[0] == "locust" else words[3], *sorted(w for w in words if w.startswith("-")),
            *sorted(w for w in words if w.endswith("User")))  # fmt: skip


def suggested() -> list[tuple[str, str]]:
    """(where it came from, command): one command of each form the recorded runs' diagnoses give."""
    found: dict[tuple, tuple[str, str]] = {}
    for group, names in GROUPS.items():
        for name in names:
            for item in diagnose(load(recorded(group, name))):
                if isinstance(item, Diagnosis) and item.command:
                    found.setdefault(form(item.command), (f"{group}/{name}:{item.rule}", item.command))
    return sorted(found.values())


COMMANDS = suggested()


def test_the_recorded_runs_suggest_every_kind_of_command():
    kinds = {shlex.split(command)[0 if command.startswith("locust") else 3] for _, command in COMMANDS}
    assert kinds == {"locust", "sweep", "capacity", "tune"}, kinds
