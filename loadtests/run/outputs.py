"""Pre-flight of the run's outputs: the run directory, the --junit file and --upload's URL must be writable.

Checked at init (headless) and again at test_start (the web UI may have changed them), before
any load: otherwise a run measures for its whole -t and then loses everything it measured to
a FileExistsError in finalisation.
"""

from __future__ import annotations

from pathlib import Path

from loadtests.config.settings import Settings
from loadtests.errors import SpecError
from loadtests.recording.run_dir import RUNS_ROOT
from loadtests.run_format.output_paths import directory_problem, file_problem
from loadtests.run_format.storage import check_destination


def check_outputs(settings: Settings, junit: str = "") -> None:
    """Raise SpecError naming the first output option that cannot be written."""
    if settings.run_dir is not None:
        problem = directory_problem(settings.run_dir)
        where = f"--run-dir {settings.run_dir}"
    else:  # runs/<UTC time>-<classes>, created at test start
        problem = directory_problem(RUNS_ROOT)
        where = f"{Path(RUNS_ROOT).resolve()} (where runs go without --run-dir)"
    if problem:
        raise SpecError(f"{where}: {problem}")
    junit = junit.strip()
    problem = file_problem(junit) if junit else None
    if problem:
        raise SpecError(f"--junit {junit}: {problem}")
    if settings.upload:
        check_destination("--upload", settings.upload)  # writes and removes a marker object
