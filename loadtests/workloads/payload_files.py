"""Where the payloads the workloads read by default are: a checkout's `payloads/`, or the copy
a pip install puts inside the package (`loadtests/payloads`, see setup.py)."""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parents[1]


def payloads_dir() -> Path:
    """`loadtests/payloads` when installed, else the checkout's `payloads/` beside the package."""
    installed = _PACKAGE / "payloads"
    return installed if installed.is_dir() else _PACKAGE.parent / "payloads"
