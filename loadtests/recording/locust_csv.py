"""Locust's own `--csv` files, completed with the requests that ended after the run time.

Locust's CSV writer rewrites its files once a second from a greenlet and closes them at
shutdown without a last write (locust#1806, locust#2299). Requests that complete after
its last tick (users finishing their in-flight request after `-t` ran out, the last
second of the run) are in the console table and in `summary.json`, but not in the CSV:
measured here, 606 of 720 requests in an 8-s run. Locust keeps no reference to the writer
on the Environment, so at `quit` (after the runner stopped, before Locust closes the
files) we find the writer of this environment and write its files once more, through
Locust's own row writers: the same columns, now final.

With `--json-file` or `--json`, Locust's JSON save or print (just before `quit`) reads each
endpoint's stats through `get_stripped_report`, which resets them: a rewrite at `quit` would
write zeros. Then the files are rewritten at `quitting` instead (the runner has stopped by
then, so the numbers are already final).
"""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import Callable

from locust.env import Environment
from locust.stats import StatsCSVFileWriter

from loadtests.config.settings import Settings

logger = logging.getLogger(__name__)


def _writers(environment: Environment) -> list[StatsCSVFileWriter]:
    # Found once, at exit: a walk of the heap takes tens of milliseconds.
    return [o for o in gc.get_objects() if isinstance(o, StatsCSVFileWriter) and o.environment is environment]


def write_final_csv(environment: Environment, csv_prefix: str) -> None:
    """Rewrite Locust's --csv files with the final stats (a no-op without --csv)."""
    if not csv_prefix:
        return
    for writer in _writers(environment):
        try:
            for name in ("requests", "failures", "exceptions"):
                handle = getattr(writer, f"{name}_csv_filehandle")
                handle.seek(0)
                handle.truncate()
                getattr(writer, f"{name}_csv")(getattr(writer, f"{name}_csv_writer"))
                handle.flush()
            # The history file is appended to: one last row with the final totals.
            writer._stats_history_data_rows(writer.stats_history_csv_writer, time.time())
            writer.stats_history_csv_filehandle.flush()
        except (OSError, ValueError) as error:  # a closed or unwritable file: Locust's own output
            logger.warning("could not complete Locust's --csv files: %s", error)


def register_final_csv(environment: Environment, settings: Callable[[], Settings]) -> None:
    """Rewrite Locust's --csv files at the end of the run: at `quit`, or at `quitting` when
    --json-file or --json is given (its save or print resets the stats in between)."""

    def at(event: str):
        def listener(**_kwargs) -> None:
            current = settings()
            if (event == "quitting") == bool(current.json_file or current.json_stdout):
                write_final_csv(environment, current.csv_prefix)

        return listener

    environment.events.quitting.add_listener(at("quitting"))
    environment.events.quit.add_listener(at("quit"))
