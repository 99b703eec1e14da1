"""The sequences section of a report and a comparison (runs with sequence users only).

Reads each endpoint's summary.json counts `sequences_started`, `sequences_completed`,
`sequences_failed` and `sequences_ended_early` (run_format.summary.SEQUENCE_COUNTS); an
endpoint without them (not a sequence user's) has no row, so a run without sequence users
has no section.

    headers, rows = sequence_table(load_run("runs/20261123T151200Z-seq"))
"""

from __future__ import annotations

from analysis.document import Document
from analysis.run import SavedRun
from analysis.tables import count

SEQUENCE_HEADERS = ["endpoint", "started", "completed", "failed", "ended early", "requests", "requests per sequence"]


def sequence_table(run: SavedRun, label: str = "") -> tuple[list[str], list[list[str]]]:
    """One row per sequence users' endpoint (no rows: the run had none); `label` prefixes the
    endpoint's name (a comparison's run label)."""
    rows = []
    for name, endpoint in sorted(run.endpoints.items()):
        counts = endpoint.sequences
        if not counts:
            continue
        started = counts.get("started", 0)
        per_sequence = f"{endpoint.requests / started:.2f}" if started else "-"
        rows.append(
            [
                f"{label}: {name}" if label else name,
                count(started),
                count(counts.get("completed")),
                count(counts.get("failed")),
                count(counts.get("ended_early")),
                count(endpoint.requests),
                per_sequence,
            ]
        )
    return SEQUENCE_HEADERS, rows


SEQUENCE_NOTE = (
    "Sequence users: sequences started, and how each ended: completed (every response's running sum "
    "right), failed (a request failed; the sequence was closed), or ended early (cut short by the test's "
    "stop, its last request flagged end). Requests include the END that closes a failed sequence."
)


def sequence_section(doc: Document, rows: list[list[str]]) -> None:
    """The section itself, for a report (one run) and a comparison (labelled rows); none without rows."""
    doc.noted_table("Sequences", SEQUENCE_NOTE, SEQUENCE_HEADERS, rows)
