"""Overload is named as overload, the same on both protocols, and reconciles with Triton.

The failure vocabulary (loadtests/clients/failures.py) is checked row by row against the table
users read (docs/reference/failures.md); then the overload matrix runs against the real local Triton: the
test repository's queue-limited models (`max_queue_size: 1`, batching and not) and a model whose
queue rejects requests that waited too long, each under HTTP and gRPC users at once.
"""

from __future__ import annotations

import pytest

from loadtests.clients.failures import CLASSES, class_of, grpc_failure, http_failure
from tests.helpers import REPO_ROOT

DOC = REPO_ROOT / "docs" / "reference" / "failures.md"


def doc_rows() -> list[dict[str, str]]:
    """The 'Server answers' table of docs/reference/failures.md, one dict per row."""
    text = DOC.read_text().split("## Server answers", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in text.splitlines() if line.startswith("|")]
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    return [dict(zip(header, (c.strip() for c in line.strip("|").split("|")), strict=True)) for line in lines[2:]]


def codes(cell: str) -> list[str]:
    return [code.strip() for code in cell.split(",") if code.strip() and not code.strip().startswith("other")]


ROWS = doc_rows()


@pytest.mark.parametrize("row", ROWS, ids=[row["class"] + "/" + row["HTTP status"] for row in ROWS])
def test_the_documented_table_is_the_code(row):
    message = row["Triton's message contains"]
    message = "" if message.startswith("(") else message
    wanted = CLASSES[row["class"]]
    for status in codes(row["HTTP status"]):
        failure = http_failure(int(status), f"[{status}] {message}")
        assert failure.failure_class is wanted, (status, message, failure.name)
        assert failure.name == f"{wanted.name}: HTTP {status}"
    for status in codes(row["gRPC status"]):
        failure = grpc_failure(status, message)
        assert failure.failure_class is wanted, (status, message, failure.name)
        assert failure.name == f"{wanted.name}: gRPC {status}"
    assert ("yes" if wanted.backs_off else "no") == row["backs off"]
    assert wanted.counted_by_triton == (row["Triton counts it"] != "no")


def test_every_class_is_documented_and_names_parse_back():
    text = DOC.read_text()
    for name, failure_class in CLASSES.items():
        assert name in text, name
        assert class_of(f"{name}: gRPC UNAVAILABLE") is failure_class
    # What the client saw itself keeps its bare name.
    assert class_of("timeout").name == "timeout" and class_of("connection refused").backs_off
    assert grpc_failure("DEADLINE_EXCEEDED", "Deadline Exceeded").name == "timeout"
