"""--trace-sample: the share of requests whose Triton trace the run joins to its own timing.

Triton samples "1 request in N" per model (its trace API's `trace_rate`), so a share is
turned into that N once, here: 1% -> 1 in 100, 100% -> every request, 0.3% -> 1 in 333.

    TraceSample.parse("1%").triton_rate   # 100
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from loadtests.errors import SpecError

_PERCENT = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*%\s*$")


@dataclass(frozen=True)
class TraceSample:
    """The share of requests traced (0 < fraction <= 1) and the text it was given as."""

    fraction: float
    text: str

    @classmethod
    def parse(cls, text: str) -> TraceSample:
        match = _PERCENT.match(text or "")
        if match is None:
            raise SpecError(f"--trace-sample '{text}' is not a percentage such as 1% or 100%")
        percent = float(match.group(1))
        if not (math.isfinite(percent) and 0 < percent <= 100):
            raise SpecError(f"--trace-sample '{text}' must be above 0% and at most 100%")
        return cls(percent / 100.0, text.strip())

    @property
    def triton_rate(self) -> int:
        """Triton's trace_rate: one request in this many is traced."""
        return max(1, round(1.0 / self.fraction))
