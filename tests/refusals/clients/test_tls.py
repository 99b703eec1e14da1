"""TLS and --header (issue 16, item 2), against the session's real Triton behind TLS proxies
(tests/tls_support.py): Triton's HTTP has no TLS, and its gRPC TLS would need a Triton of its own; a
proxy also sees every request's headers, which Triton does not show.

The tests here need a Triton only to show a refused command left it untouched; the others, and this
feature's account, are in tests/unit/clients/test_tls.py.
"""

from __future__ import annotations

import subprocess

import pytest

from tests.helpers import (
    LocustRun,
    model_stats,
    run_against_triton,
    run_cli,
    run_locust,
)
from tests.tls_support import Pki, TlsProxy, make_pki
from tests.unit.clients.test_tls import SECRET

HEADER = ("X-Api-Key", SECRET)
ENV = {"LT_TEST_API_KEY": SECRET}
HEADER_OPTION = ["--header", "X-Api-Key: env:LT_TEST_API_KEY"]


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def https_proxy(triton, pki):
    proxy = TlsProxy(triton.http_address, pki, HEADER, mode="http")
    yield proxy
    proxy.close()


@pytest.fixture(scope="module")
def grpcs_proxy(triton, pki):
    proxy = TlsProxy(triton.grpc_address, pki, HEADER, mode="grpc")
    yield proxy
    proxy.close()


def targets(triton, http: str | None = None, grpc: str | None = None) -> list[str]:
    return [
        "--triton-http", http or triton.http_address,
        "--triton-grpc", grpc or triton.grpc_address,
        "--triton-metrics", triton.metrics_address,
        "--model", "identity",
    ]  # fmt: skip


def tls_run(triton, run_dir, user: str, target: list[str], options: list[str], env: dict[str, str]) -> LocustRun:
    """A 3-s run through `target` (a TLS proxy in front of `triton`, or a Triton of its own),
    identity's count watched; any exit code."""
    return run_against_triton(
        triton, run_dir, [user], options, target=target, models=("identity",), run_time="3s", env=env, expect_exit=None
    )


def error_lines(result: subprocess.CompletedProcess) -> list[str]:
    return [line for line in (result.stdout + result.stderr).splitlines() if line.startswith("error:")]


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_a_wrong_ca_is_one_preflight_error(triton, pki, https_proxy, grpcs_proxy, tmp_path, protocol):
    if protocol == "http":
        user, target = "TritonHttpUser", targets(triton, http=f"https://{https_proxy.address}")
    else:
        user, target = "TritonGrpcUser", targets(triton, grpc=f"grpcs://{grpcs_proxy.address}")
    run = tls_run(triton, tmp_path / "run", user, target, ["--ssl-ca", str(pki.other_ca), *HEADER_OPTION], ENV)
    assert run.result.returncode == 2, run.result.stderr[-3000:]
    (line,) = error_lines(run.result)
    assert "certificate verify failed" in line.lower() or "CERTIFICATE_VERIFY_FAILED" in line, line
    assert run.after == run.before


def test_bad_header_and_tls_options_are_one_line_each(triton, tmp_path):
    before = model_stats(triton.http_address, "identity")
    cases = {
        "environment variable LT_NOT_SET is not set": ["--header", "X-Api-Key: env:LT_NOT_SET"],
        "is not 'Name: value'": ["--header", "no colon here"],
        "--ssl-ca": ["--ssl-ca", str(tmp_path / "missing.pem")],
        "the scheme is http:// or https://": ["--triton-http", "ftp://127.0.0.1:1"],
    }
    for expected, option in cases.items():
        result = run_locust(["TritonHttpUser"], [*targets(triton), *option], run_time="3s")
        assert result.returncode == 2, (expected, result.stderr[-2000:])
        (line,) = error_lines(result)
        assert expected in line, line
    assert model_stats(triton.http_address, "identity") == before


def test_tune_reaches_triton_with_the_tls_files_and_header_its_runs_use(triton, pki, https_proxy, tmp_path):
    """tune's repository calls go through TLS with --ssl-ca and --header too: through the proxy to
    the session's Triton, not in explicit mode, the one error is that mode, not the certificate."""
    seen_before = https_proxy.counts.with_header
    options = [*targets(triton, http=f"https://{https_proxy.address}"), "--ssl-ca", str(pki.ca), *HEADER_OPTION]
    command = ["-m", "loadtests", "tune", "--vary", "instances=1,2", "--slo", "p99<50ms", *options]
    result = run_cli([*command, "--out", str(tmp_path / "never")], env=ENV)
    assert result.returncode == 2, result.stderr[-2000:]
    (line,) = error_lines(result)
    assert "--model-control-mode=explicit" in line, line
    assert https_proxy.counts.with_header > seen_before and https_proxy.counts.without_header == 0
    assert not (tmp_path / "never").exists()
