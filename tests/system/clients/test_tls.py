"""TLS and --header (issue 16, item 2), against the session's real Triton behind TLS proxies
(tests/tls_support.py): Triton's HTTP has no TLS, and its gRPC TLS would need a Triton of its own; a
proxy also sees every request's headers, which Triton does not show.

The tests here need a real Triton or a browser; the others, and this feature's account, are in
tests/unit/clients/test_tls.py.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from loadtests.server import TritonPorts
from tests.helpers import (
    REPO_ROOT,
    THROWAWAY_STOP_S,
    model_stats,
    read_summary,
)
from tests.refusals.clients import test_tls as refusals_tls
from tests.refusals.clients.test_tls import (
    ENV,
    HEADER,
    HEADER_OPTION,
    error_lines,
    targets,
    tls_run,
)
from tests.tls_support import TlsProxy
from tests.unit.clients.test_tls import SECRET

pki = refusals_tls.pki  # a fixture of that module: pytest finds fixtures by name
grpcs_proxy = refusals_tls.grpcs_proxy  # a fixture of that module: pytest finds fixtures by name
https_proxy = refusals_tls.https_proxy  # a fixture of that module: pytest finds fixtures by name


def secret_free(run_dir, *texts: str) -> None:
    for path in run_dir.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path
    for text in texts:
        assert SECRET not in text


def test_https_with_the_right_ca_and_the_header_on_every_request(triton, pki, https_proxy, tmp_path):
    seen_before = https_proxy.counts.with_header
    target = targets(triton, http=f"https://{https_proxy.address}")
    run = tls_run(triton, tmp_path / "run", "TritonHttpUser", target, ["--ssl-ca", str(pki.ca), *HEADER_OPTION], ENV)
    result = run.result
    assert result.returncode == 0, result.stderr[-3000:]
    (endpoint,) = run.summary["endpoints"]
    assert endpoint["failures"] == 0 and endpoint["requests"] > 0
    assert endpoint["requests"] == run.served()
    # Every request through the proxy carried the header: inference, pre-flight, statistics.
    assert https_proxy.counts.without_header == 0
    assert https_proxy.counts.with_header - seen_before > endpoint["requests"]
    secret_free(tmp_path / "run", result.stdout, result.stderr)


def test_grpcs_with_the_right_ca_sends_the_header_as_metadata(triton, pki, grpcs_proxy, tmp_path):
    target = targets(triton, grpc=f"grpcs://{grpcs_proxy.address}")
    run = tls_run(triton, tmp_path / "run", "TritonGrpcUser", target, ["--ssl-ca", str(pki.ca), *HEADER_OPTION], ENV)
    result = run.result
    assert result.returncode == 0, result.stderr[-3000:]
    (endpoint,) = run.summary["endpoints"]
    assert endpoint["failures"] == 0 and endpoint["requests"] > 0
    assert endpoint["requests"] == run.served()
    assert grpcs_proxy.counts.without_header == 0  # grpcio's pre-flight calls included
    assert grpcs_proxy.counts.with_header >= endpoint["requests"]
    secret_free(tmp_path / "run", result.stdout, result.stderr)


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_ssl_insecure_accepts_an_unknown_certificate_on_both_protocols(
    triton, pki, https_proxy, grpcs_proxy, tmp_path, protocol
):
    """No CA given: without --ssl-insecure the certificate is refused (see above); with it the
    run goes through, pre-flight and statistics included, on https:// and grpcs:// alike."""
    if protocol == "http":
        user, target = "TritonHttpUser", targets(triton, http=f"https://{https_proxy.address}")
    else:
        user, target = "TritonGrpcUser", targets(triton, grpc=f"grpcs://{grpcs_proxy.address}")
    run = tls_run(triton, tmp_path / "run", user, target, ["--ssl-insecure", *HEADER_OPTION], ENV)
    assert run.result.returncode == 0, run.result.stdout[-2000:] + run.result.stderr[-3000:]
    (endpoint,) = run.summary["endpoints"]
    assert endpoint["failures"] == 0 and endpoint["requests"] > 0
    assert endpoint["requests"] == run.served()


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_mutual_tls_needs_the_client_certificate(triton, pki, tmp_path, protocol):
    upstream = triton.http_address if protocol == "http" else triton.grpc_address
    proxy = TlsProxy(upstream, pki, HEADER, mode=protocol, client_ca=pki.ca)
    if protocol == "http":
        user, target = "TritonHttpUser", targets(triton, http=f"https://{proxy.address}")
    else:
        user, target = "TritonGrpcUser", targets(triton, grpc=f"grpcs://{proxy.address}")
    options = ["--ssl-ca", str(pki.ca), *HEADER_OPTION]
    try:
        refused = tls_run(triton, tmp_path / "refused", user, target, options, ENV).result
        client = ["--ssl-cert", str(pki.client_cert), "--ssl-key", str(pki.client_key)]
        accepted = tls_run(triton, tmp_path / "run", user, target, [*options, *client], ENV)
    finally:
        proxy.close()
    assert refused.returncode == 2, refused.stderr[-3000:]
    (line,) = error_lines(refused)
    assert line.startswith("error: cannot reach Triton"), line
    assert accepted.result.returncode == 0, accepted.result.stderr[-3000:]
    assert accepted.summary["endpoints"][0]["requests"] > 0
    assert proxy.counts.without_header == 0


def test_literal_header_is_redacted_in_config_json(triton, tmp_path):
    header = ["--header", f"X-Literal: {SECRET}"]
    result = tls_run(triton, tmp_path / "run", "TritonHttpUser", targets(triton), header, {}).result
    assert result.returncode == 0, result.stderr[-3000:]
    config = (tmp_path / "run" / "config.json").read_text()
    assert '"X-Literal: <redacted>"' in config
    secret_free(tmp_path / "run", result.stdout, result.stderr)


@contextlib.contextmanager
def web_locust(options: list[str], env: dict[str, str], log: Path) -> Iterator[str]:
    """`locust -f locustfile.py` with its web UI on a free port; yields the page's URL."""
    port = TritonPorts.free().http
    command = [sys.executable, "-m", "locust", "-f", "locustfile.py", "--web-port", str(port), *options]
    with log.open("w") as output:
        web = subprocess.Popen(command, cwd=REPO_ROOT, env={**os.environ, **env}, stdout=output, stderr=output)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while not fetch(url + "/"):
            assert time.monotonic() < deadline and web.poll() is None, log.read_text()[-3000:]
            time.sleep(0.3)
        yield url
    finally:
        web.terminate()
        web.wait(timeout=60)


def fetch(url: str, form: dict[str, str] | None = None) -> str:
    """The body of a GET (or a POST of `form`), "" while nothing answers."""
    data = urllib.parse.urlencode(form).encode() if form is not None else None
    try:
        with urllib.request.urlopen(url, data=data, timeout=10) as response:
            return response.read().decode()
    except OSError:
        return ""


def page_options(page: str) -> dict[str, dict]:
    """The custom options as Locust's page embeds them (window.templateArgs): default_value, is_secret, ..."""
    args = page.split("window.templateArgs = ", 1)[1].split("\n", 1)[0]
    return json.loads(args)["extra_options"]


# Every address the web UI's page reads (Locust 2.47's bundle, and the suite's Model suggestions,
# run/webui_models.py), its report and CSV downloads.
WEB_UI_READS = ("/", "/stats/requests", "/tasks", "/exceptions", "/logs", "/worker-count", "/stats/report",
                "/stats/requests/csv", "/stats/failures/csv", "/exceptions/csv", "/triton-models")  # fmt: skip


def test_web_ui_never_shows_a_literal_header_and_its_runs_still_send_it(triton, pki, https_proxy, tmp_path):
    """A literal --header (a bearer token) is in no page or JSON of the web UI, and a test
    started from the form (which holds the redacted text) sends the real value."""
    options = ["TritonHttpUser", *targets(triton, http=f"https://{https_proxy.address}"), "--ssl-ca", str(pki.ca)]
    options += ["--header", f"X-Api-Key: {SECRET}", "--run-dir", str(tmp_path / "run")]
    before = model_stats(triton.http_address, "identity")
    seen_before = https_proxy.counts.with_header
    with web_locust(options, {}, tmp_path / "locust.log") as url:
        shown = page_options(fetch(url + "/"))["header"]["default_value"]
        assert shown == ["X-Api-Key: <redacted>"]
        # The browser posts a list option's value as the page holds it, joined by commas.
        started = json.loads(fetch(url + "/swarm", {"user_count": "2", "spawn_rate": "2", "header": ",".join(shown)}))
        assert started["success"], started
        time.sleep(4)
        while_running = {path: fetch(url + path) for path in WEB_UI_READS}
        assert json.loads(fetch(url + "/stop", {}))["success"]
        deadline = time.monotonic() + 60
        while not (tmp_path / "run" / "summary.json").exists():
            assert time.monotonic() < deadline, "the run started from the web UI never wrote summary.json"
            time.sleep(0.3)
        after_stop = {path: fetch(url + path) for path in WEB_UI_READS}
    for path, body in [*while_running.items(), *after_stop.items()]:
        assert body, f"{path} answered nothing"
        assert SECRET not in body, path
    secret_free(tmp_path / "run", (tmp_path / "locust.log").read_text())
    (endpoint,) = read_summary(tmp_path / "run")["endpoints"]
    assert endpoint["failures"] == 0 and endpoint["requests"] > 0
    assert endpoint["requests"] == model_stats(triton.http_address, "identity")["requests"] - before["requests"]
    assert https_proxy.counts.without_header == 0  # the proxy answers 403 to a request without it
    assert https_proxy.counts.with_header - seen_before > endpoint["requests"]


def test_web_ui_shows_a_header_reference_as_written(triton, tmp_path):
    options = ["TritonHttpUser", *targets(triton), *HEADER_OPTION]
    with web_locust(options, ENV, tmp_path / "locust.log") as url:
        page = fetch(url + "/")
    header = page_options(page)["header"]
    assert header["default_value"] == ["X-Api-Key: env:LT_TEST_API_KEY"]
    assert header["is_secret"]  # a password field: a token typed into the form is not shown
    assert SECRET not in page and SECRET not in (tmp_path / "locust.log").read_text()


def capacity_args(argv: list[str]):
    from loadtests.__main__ import build_parser

    args, extra = build_parser().parse_known_args(["capacity", "--model", "identity", "--slo", "p99<50ms", *argv])
    args.extra = extra
    return args


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_capacity_reads_the_models_configuration_with_the_tls_files_and_header_its_runs_use(
    triton, pki, https_proxy, grpcs_proxy, protocol, monkeypatch, capsys
):
    """The probe is sized from the model's configuration, read where the search's users send:
    through TLS with --ssl-ca and --header (passed on to Locust) like the runs themselves. They
    were left out: the read failed on the certificate and the probe fell back to its minimum."""
    from loadtests.clients.control import TritonControl
    from loadtests.commands.capacity import sized_probe_users
    from loadtests.levels.capacity_search import probe_users

    monkeypatch.setenv(*next(iter(ENV.items())))
    proxy = https_proxy if protocol == "http" else grpcs_proxy
    seen_before = proxy.counts.with_header
    given = [f"https://{https_proxy.address}", "--triton-grpc", f"grpcs://{grpcs_proxy.address}"]
    args = capacity_args(["--protocol", protocol, "--triton-http", *given, "--ssl-ca", str(pki.ca), *HEADER_OPTION])
    users = sized_probe_users(args)
    assert "not read" not in capsys.readouterr().out
    assert users == probe_users(TritonControl(triton.http_address).model_config("identity"))
    assert proxy.counts.with_header > seen_before and proxy.counts.without_header == 0


def test_tritons_own_grpc_mutual_tls(pki, tmp_path):
    """Triton's own gRPC TLS (`--grpc-use-ssl-mutual`, no proxy): a Triton serving only `identity`."""
    from loadtests.server import TEST_REPOSITORY, LocalTriton

    repository = tmp_path / "repository"
    repository.mkdir()
    (repository / "identity").symlink_to(TEST_REPOSITORY / "identity", target_is_directory=True)
    tls_args = [
        "--grpc-use-ssl-mutual=true",
        f"--grpc-server-cert={pki.server_cert}",
        f"--grpc-server-key={pki.server_key}",
        f"--grpc-root-cert={pki.ca}",
    ]
    with LocalTriton(
        [repository], log_file=tmp_path / "triton.log", extra_args=tls_args, stop_timeout_s=THROWAWAY_STOP_S
    ) as server:
        target = targets(server, grpc=f"grpcs://{server.grpc_address}")
        client = ["--ssl-cert", str(pki.client_cert), "--ssl-key", str(pki.client_key)]
        refused = tls_run(server, tmp_path / "refused", "TritonGrpcUser", target, ["--ssl-ca", str(pki.ca)], {}).result
        run = tls_run(server, tmp_path / "run", "TritonGrpcUser", target, ["--ssl-ca", str(pki.ca), *client], {})
        accepted, before, after = run.result, run.before["identity"], run.after["identity"]
    assert refused.returncode == 2, refused.stderr[-3000:]
    (line,) = error_lines(refused)
    # TLS 1.3: the server refuses a missing client certificate after the handshake, so the line
    # is the pre-flight's "Socket closed" rather than a handshake reason.
    assert line.startswith("error: cannot reach Triton at grpcs://"), line
    assert accepted.returncode == 0, accepted.stderr[-3000:]
    (endpoint,) = read_summary(tmp_path / "run")["endpoints"]
    assert endpoint["failures"] == 0
    assert endpoint["requests"] == after["requests"] - before["requests"] > 0
