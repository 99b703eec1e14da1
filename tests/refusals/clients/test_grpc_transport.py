"""The gRPC client's own HTTP/2 transport against the real Triton: connection sharing, messages larger
than HTTP/2's default windows, deadlines, and the --grpc-connections option.

The tests here need a Triton only to show a refused command left it untouched; the others, and this
feature's account, are in tests/unit/clients/test_grpc_transport.py.
"""

from __future__ import annotations

from tests.helpers import model_stats, run_cli


def test_bad_grpc_connections_is_refused_before_any_load(triton, tmp_path):
    before = model_stats(triton.http_address, "identity")
    result = run_cli(
        [
            "-m",
            "locust",
            "-f",
            "locustfile.py",
            "--headless",
            "-u",
            "1",
            "-t",
            "3s",
            "TritonGrpcUser",
            "--model",
            "identity",
            "--triton-grpc",
            triton.grpc_address,
            "--triton-http",
            triton.http_address,
            "--grpc-connections",
            "lots",
            "--run-dir",
            str(tmp_path / "run"),
        ],
        timeout=300,
    )
    assert result.returncode == 2, result.stderr[-2000:]
    assert "error: --grpc-connections 'lots'" in result.stderr
    assert model_stats(triton.http_address, "identity") == before
