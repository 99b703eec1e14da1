"""The report's first screen for the web UI's health line: after a run, and on the run so far.

`python -m analysis first-screen DIR --json` prints what a run's report says first (its outcome,
its headline, its first diagnosis with the next step); `run/` does not import `analysis/`, and
the rules' pandas work stays out of the load generator's process, so it runs as a child process
(gevent's subprocess: the load generator's greenlets go on meanwhile).

During a test the rules read a provisional run directory: every file the run has written so far
(timeseries.csv, the HDR logs, Triton's intervals and metrics, steps.json, config.json), linked,
beside a summary.json of the totals merged so far (the master's own summary, as the end of the
run would write it, with the run's duration up to now). It is judged at most every EVERY_S, and
only while a page asks (the exact tab is shown), on the master or single process; a child costs
about 0.6 s of CPU on a short run (`python -m bench.live_view` measures the live view whole).

    diagnosis = LiveDiagnosis(provisional_summary)   # () -> (run directory, summary dict) or None
    diagnosis.ask()                                  # from the page's poll: judge again if due
    diagnosis.lines_for(run_dir)                     # the last judgement of that run ([]: none yet)
"""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import gevent

from loadtests.run_format.files import SUMMARY_JSON

logger = logging.getLogger(__name__)

EVERY_S = 15.0
# What a provisional directory leaves out: the summary (written anew) and an earlier report's files.
LEFT_OUT = (SUMMARY_JSON, "report.html", "report.md")


def first_screen(path: Path) -> list[str] | None:
    """The report's first screen for the run directory `path` (None if the rules could not read it)."""
    command = [sys.executable, "-m", "analysis", "first-screen", str(path), "--json"]
    done = subprocess.run(command, capture_output=True, text=True, check=False)  # gevent's: cooperative
    if done.returncode != 0:
        logger.debug("first-screen of %s: %s", path, (done.stderr or done.stdout).strip()[-300:])
        return None
    try:
        return list(json.loads(done.stdout))
    except (json.JSONDecodeError, TypeError):
        return None


def provisional_directory(run_dir: Path, summary: dict) -> Path:
    """A temporary run directory: `run_dir`'s files linked, beside `summary` as summary.json."""
    target = Path(tempfile.mkdtemp(prefix="triton-live-"))
    for entry in run_dir.iterdir():
        if entry.name not in LEFT_OUT and not entry.name.endswith(".png"):
            (target / entry.name).symlink_to(entry.resolve())
    (target / SUMMARY_JSON).write_text(json.dumps(summary))
    return target


class LiveDiagnosis:
    """Judges the run so far in a child process, at most every `every_s`, when asked."""

    def __init__(
        self,
        provisional: Callable[[], tuple[Path, dict] | None],
        every_s: float = EVERY_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.provisional = provisional
        self.every_s = every_s
        self.clock = clock
        self.lines: dict[str, list[str]] = {}  # run directory -> its last judgement
        self._last: float | None = None
        self._busy = False

    def ask(self) -> None:
        """Start a judgement of the run so far if none runs and the last is older than every_s."""
        now = self.clock()
        if self._busy or (self._last is not None and now - self._last < self.every_s):
            return
        current = self.provisional()
        if current is None:
            return
        self._busy, self._last = True, now
        gevent.spawn(self._judge, *current)

    def lines_for(self, run_dir: str) -> list[str]:
        return self.lines.get(run_dir, [])

    def _judge(self, run_dir: Path, summary: dict) -> None:
        directory = None
        try:
            directory = provisional_directory(run_dir, summary)
            lines = first_screen(directory)
            if lines:
                self.lines[str(run_dir)] = lines
        except OSError as error:  # the run directory went away, a full /tmp: no judgement this time
            logger.debug("live diagnosis of %s: %s", run_dir, error)
        except Exception:  # a bug here must not stop the web UI or the run
            logger.exception("live diagnosis of %s failed", run_dir)
        finally:
            if directory is not None:
                shutil.rmtree(directory, ignore_errors=True)
            self._busy = False
