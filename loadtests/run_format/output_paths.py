"""Can an output be written? Asked before the work that produces it, so a bad path costs nothing.

Used by the load test's pre-flight (`--run-dir`, `--junit`) and by `python -m analysis`
(`--out`, `--junit`): a run that would measure for minutes and then fail to write its run
directory is refused at start instead, with one line. The check creates (and removes) a
probe where the output would go: permission bits alone do not tell, e.g. for root in /proc.

    directory_problem("/proc/x")   -> "cannot create a directory in /proc (No such file or directory)"
    file_problem("/dev/null/a.xml") -> "/dev/null is not a directory"
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

# The run happened (and was measured), but an output could not be written: distinct from
# 2 (bad input, nothing sent) and 3 (an SLO clause failed). docs/guides/ci.md lists the codes.
EXIT_OUTPUT_FAILED = 4


def _nearest_existing(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def directory_problem(path: str | Path) -> str | None:
    """Why `path` cannot be used (created if missing) as an output directory, or None."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        return "exists and is not a directory"
    ancestor = _nearest_existing(path)
    if not ancestor.is_dir():
        return f"{ancestor} is not a directory"
    try:
        probe = tempfile.mkdtemp(prefix=".write-probe-", dir=ancestor)
    except OSError as error:
        return f"cannot create a directory in {ancestor} ({error.strerror or error})"
    os.rmdir(probe)
    return None


def file_problem(path: str | Path) -> str | None:
    """Why `path` cannot be written as an output file (its directory created if missing), or None."""
    path = Path(path)
    if path.is_dir():
        return "is a directory"
    if path.exists():
        try:
            with open(path, "ab"):  # opened for appending, not truncated: nothing changes yet
                pass
        except OSError as error:
            return f"cannot be written ({error.strerror or error})"
        return None
    return directory_problem(path.parent)
