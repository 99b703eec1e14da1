"""A shape's steps: the segments `steps.json` records (a target held over a stretch of time)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Step:
    """One segment of a shape: `target` holds over [start_s, end_s) (seconds from the start).

    For a ramp segment, `target` is the level reached at the segment's end; for a sine
    period, the baseline.
    """

    index: int
    start_s: float
    end_s: float
    target: float

    def __post_init__(self) -> None:
        for name in ("start_s", "end_s", "target"):
            object.__setattr__(self, name, float(getattr(self, name)))


def steps_json(steps: list[Step], end_s: float | None = None, offset_s: float = 0.0) -> list[dict]:
    """Steps as JSON-ready dicts, times shifted by `offset_s`; `end_s` (when the run ended,
    before the shift) clips the last ones.

    >>> steps_json([Step(0, 0.0, 30.0, 4.0)], end_s=12.5)
    [{'index': 0, 'start_s': 0.0, 'end_s': 12.5, 'target': 4.0}]
    """
    rows = []
    for step in steps:
        end = step.end_s if end_s is None else max(step.start_s, min(step.end_s, end_s))
        rows.append(
            {
                "index": step.index,
                "start_s": round(step.start_s + offset_s, 3),
                "end_s": round(end + offset_s, 3),
                "target": step.target,
            }
        )
    return rows
