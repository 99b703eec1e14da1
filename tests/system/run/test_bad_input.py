"""The bad-input table: every kind of bad setup stops with one `error:` line and exit code 2.

The tests here need a real Triton or a browser; the others, and this feature's account, are in
tests/unit/run/test_bad_input.py.
"""

from __future__ import annotations

import pytest

from loadtests.server import TritonPorts
from tests.helpers import THROWAWAY_STOP_S
from tests.refusals.run import test_bad_input as refusals_bad_input
from tests.unit.run.test_bad_input import LAUNCHER_CASES

cli_files = refusals_bad_input.cli_files  # a fixture of that module: pytest finds fixtures by name

pytestmark = pytest.mark.badinput


@pytest.mark.parametrize(
    ("ports", "where", "fragment"), [c[1:] for c in LAUNCHER_CASES], ids=[c[0] for c in LAUNCHER_CASES]
)
def test_serve_setup_is_refused_before_triton_starts(ports, where, fragment, cli_files, tmp_path):
    from loadtests.errors import ServerError
    from loadtests.server import TEST_REPOSITORY, LocalTriton

    free = TritonPorts.free()
    chosen = [{"h": free.http, "g": free.grpc, "m": free.metrics}.get(p, p) for p in ports]
    repository = cli_files / where if where and not where.startswith("log:") else TEST_REPOSITORY
    log_file = cli_files / where.removeprefix("log:") if where.startswith("log:") else tmp_path / "triton.log"
    triton = LocalTriton([repository], ports=TritonPorts(*chosen), log_file=log_file, stop_timeout_s=THROWAWAY_STOP_S)
    try:
        with pytest.raises(ServerError) as error:
            triton.start()
    finally:
        triton.stop()
    assert fragment in str(error.value) and "\n" not in str(error.value), str(error.value)
