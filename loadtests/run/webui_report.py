"""The suite's report from the web UI: written when a test started there ends, served by Locust's web app.

When a test ends (STOP, the form's run time, a load shape's end), its run directory gets
`report.html`, `report.md` and the plots, as `python -m analysis report DIR` writes them (the
same command, in a child process: `run/` does not import `analysis/`, and the plots' CPU stays
out of the load generator's process). The exact tab's Report column then links to it:

    GET /triton-report/<n>/report.html     # the n-th test of this web UI (1, 2, ...), and its files
    GET /triton-report/latest              # {"report": the last test's Report cell}: the page asks
                                           # while it is being written (Locust's polls stop at STOP)

Once written, the report's first screen (its outcome line, its headline and its first diagnosis:
`python -m analysis first-screen DIR`, run/live_diagnosis.py) is the web UI's health line for
that test (run/webui_charts.py).

Only the run directories of tests this process ran are served, each below its own directory.
Locust's own report (its "Download Report") is untouched.
"""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import gevent
from flask import Flask, Response, abort, jsonify, send_from_directory

from loadtests.run.live_diagnosis import first_screen

logger = logging.getLogger(__name__)

ROUTE = "/triton-report"
REPORT_FILE = "report.html"
WRITING = "writing report..."
FAILED = "report failed (see the log)"


class ReportPages:
    """Writes each finished test's report and serves its run directory's files."""

    def __init__(self) -> None:
        self.runs: dict[int, Path] = {}
        self.latest: Path | None = None
        self.states: dict[Path, str] = {}  # the Report cell: WRITING, the link, or FAILED
        self.first_screens: dict[Path, list[str]] = {}  # each written report's first screen

    def install(self, app: Flask, auth=lambda view: view) -> None:
        """Add the route to Locust's web app (`auth`: Locust's login check, when --web-login is on)."""

        @app.route(f"{ROUTE}/latest")
        @auth
        def _latest() -> Response:
            # The page asks while the last test's report is being written (Locust's polls have stopped).
            return jsonify({"report": self.states.get(self.latest, "") if self.latest else ""})

        @app.route(f"{ROUTE}/<int:number>/<path:name>")
        @auth
        def _report_file(number: int, name: str) -> Response:
            directory = self.runs.get(number)
            if directory is None:
                abort(404)
            return send_from_directory(directory.resolve(), name)  # refuses paths outside the directory

    def write(self, path: Path) -> None:
        """A test ended: write its report in the background (its cell says so until then)."""
        number = len(self.runs) + 1
        self.runs[number] = self.latest = path
        self.states[path] = WRITING
        gevent.spawn(self._write, number, path)

    def cell(self, path: str) -> str:
        """What the exact tab's Report column shows for the run in `path` ("" while it runs)."""
        return self.states.get(Path(path), "")

    def _write(self, number: int, path: Path) -> None:
        command = [sys.executable, "-m", "analysis", "report", str(path)]
        done = subprocess.run(command, capture_output=True, text=True, check=False)  # gevent's: cooperative
        if done.returncode == 0 and (path / REPORT_FILE).exists():
            self.first_screens[path] = first_screen(path) or []
            self.states[path] = f"{ROUTE}/{number}/{REPORT_FILE}"
            logger.info("report: %s", path / REPORT_FILE)
        else:
            self.states[path] = FAILED
            logger.error("report of %s failed: %s", path, (done.stderr or done.stdout).strip()[-500:])
