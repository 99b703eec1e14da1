"""`python -m loadtests serve` as a user runs it: URLs, clean stop, one-line errors for bad setup."""

from __future__ import annotations

import socket
import subprocess

import pytest

from loadtests.errors import ServerError
from loadtests.server import TEST_REPOSITORY, TritonInstallation, TritonPorts
from tests.helpers import run_cli


def serve_args(ports: TritonPorts, *extra: str) -> list[str]:
    return [
        "-m",
        "loadtests",
        "serve",
        f"--http-port={ports.http}",
        f"--grpc-port={ports.grpc}",
        f"--metrics-port={ports.metrics}",
        *extra,
    ]


def assert_one_line_error(result: subprocess.CompletedProcess, *fragments: str) -> None:
    assert result.returncode == 2, result.stderr
    message = result.stderr.strip()
    assert "\n" not in message, message
    assert "Traceback" not in message
    assert message.startswith("error: ")
    for fragment in fragments:
        assert fragment in message, message


def test_port_in_use_is_a_one_line_error():
    ports = TritonPorts.free()
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", ports.http))
        blocker.listen()
        result = run_cli(serve_args(ports, "--model-repository", str(TEST_REPOSITORY)))
    assert_one_line_error(result, f"port {ports.http} is already in use", "--http-port")


def test_missing_model_repository_is_a_one_line_error(tmp_path):
    missing = tmp_path / "nowhere"
    result = run_cli(serve_args(TritonPorts.free(), "--model-repository", str(missing)))
    assert_one_line_error(result, f"model repository {missing} does not exist")


def test_missing_python_runtime_library_is_reported(tmp_path):
    with pytest.raises(ServerError, match=r"Python runtime library libpython3\.\d+\.so\.1\.0 not found in"):
        TritonInstallation.locate(python_libdir=tmp_path)


def test_serve_help_lists_the_contract_flags():
    result = run_cli(["-m", "loadtests", "serve", "--help"])
    assert result.returncode == 0
    for flag in ("--preset", "--model-repository", "--http-port", "--grpc-port", "--metrics-port"):
        assert flag in result.stdout


def test_cli_without_command_fails_cleanly():
    result = run_cli(["-m", "loadtests"])
    assert result.returncode == 2
    assert "COMMAND" in result.stderr
