"""--upload URL: the finished run directory copied to a bucket (or any fsspec URL).

Runs last in `finish.py`, after summary.json, the run_finished listeners (the sweep and
capacity shapes' files) and the closed timeseries and HDR logs, so the copy holds every file
the run directory holds then: config.json, summary.json, timeseries.csv, the HDR logs,
server_stats.json and its JSON-lines files, server_metrics.csv, steps.json and what the shapes wrote. The same path
runs after an early stop (Ctrl-C, the web UI's stop button, a shape's end). Reports made
later with `python -m analysis report` are not in it (they are made from the copy instead).

The copy runs in a child process (`python -m loadtests.run_format.storage upload DIR URL`),
except for memory:// (whose objects live in this process only, for tests): gcsfs and s3fs
drive asyncio from a background thread, which a gevent-patched Locust process would turn
into a greenlet; a plain interpreter avoids the question, and the master's hub keeps
answering its workers while the child copies. A failed copy is one `error:` line and exit
code 4 (the run happened, an output is missing); the run directory stays on local disk.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from loadtests.errors import LoadTestError
from loadtests.run.slo_gate import note_output_failed
from loadtests.run_format.storage import upload_directory

IN_PROCESS_SCHEMES = ("memory://",)


def copy_run(path: Path, url: str) -> str:
    """Copy the run directory `path` to `url`/<its name>; returns that URL, raises OSError."""
    if url.startswith(IN_PROCESS_SCHEMES):
        return upload_directory(path, url)
    command = [sys.executable, "-m", "loadtests.run_format.storage", "upload", str(path), url]
    # The child finds this package wherever the process runs (a pod's working directory need not hold it).
    package_root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")]))}
    result = subprocess.run(command, capture_output=True, text=True, check=False, env=env)
    if result.returncode != 0:
        lines = result.stderr.strip().splitlines() or [f"exit code {result.returncode}"]
        raise OSError(lines[-1])
    return result.stdout.strip()


def upload_run(environment, url: str, path: Path) -> None:
    """The end of a run: copy it if --upload was given; a failure is reported, never raised."""
    if not url:
        return
    try:
        destination = copy_run(path, url)
    except (OSError, LoadTestError) as error:
        print(f"error: --upload {url}: {error}", file=sys.stderr, flush=True)
        note_output_failed(environment)
        return
    print(f"Uploaded: {destination}", flush=True)
