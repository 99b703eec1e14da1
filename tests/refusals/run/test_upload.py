"""--upload URL (issue 16, item 5): the finished run directory copied through fsspec, complete,
also after Ctrl-C; an unwritable destination refused before any load; `python -m analysis`
reading runs from the same URLs.

memory:// objects live in one process only, so that scheme is tested in-process (the function
the run calls, `loadtests.run.upload.copy_run`, and `analysis.__main__.main`).
"""

from __future__ import annotations

import pytest

from tests.helpers import model_stats, run_locust, triton_options


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("file:///proc/no-such-bucket", "not writable"),
        ("gs://some-bucket/runs", "needs the gcsfs package (pip install gcsfs)"),
        ("runs/elsewhere", "is not a URL"),
    ],
)
def test_unwritable_or_unusable_destination_exits_2_before_any_load(triton, tmp_path, url, expected):
    before = model_stats(triton.http_address, "identity")
    options = [*triton_options(triton), "--model", "identity", "--run-dir", str(tmp_path / "run"), "--upload", url]
    result = run_locust(["TritonHttpUser"], options, run_time="3s")
    assert result.returncode == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and f"--upload {url}" in errors[0] and expected in errors[0], result.stderr[-2000:]
    assert model_stats(triton.http_address, "identity") == before
    assert not (tmp_path / "run").exists()
