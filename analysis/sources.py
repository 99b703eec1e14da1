"""Run directories (and perf_analyzer CSVs) given as URLs: `python -m analysis report gs://bucket/runs/x`.

A URL source (gs://, s3://, file://, memory://; what `--upload` writes) is copied into a
temporary directory through fsspec (loadtests/run_format/storage.py) and read from there like
a local run; the copy is removed when the command ends. A local path is used as it is.

    with local_sources(["gs://bucket/runs/a", "runs/b"]) as (a, b):
        write_comparison([a, b], ...)
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from loadtests.run_format.storage import download, is_url


def source_name(source: str) -> str:
    """The run's name, for labels and default output directories: its last path component."""
    return source.rstrip("/").rpartition("/")[2] if is_url(source) else Path(source).name


@contextmanager
def local_sources(sources: list[str]) -> Iterator[list[str]]:
    """Local paths for `sources`, URLs downloaded; raises SpecError (one line) for a URL that cannot be read."""
    if not any(is_url(source) for source in sources):
        yield list(sources)
        return
    with tempfile.TemporaryDirectory(prefix="triton-loadtest-runs-") as temporary:
        local = []
        for index, source in enumerate(sources):
            if is_url(source):
                into = Path(temporary) / str(index) / (source_name(source) or f"run{index}")
                local.append(str(download(source.rstrip("/"), into, option="")))
            else:
                local.append(source)
        yield local
