"""Issue 25's findings, tried as a new user would: each typed command, its exit code, its one `error:`
line, and the numbers it promises (checked against Triton's own statistics).

The tests here need a Triton only to show a refused command left it untouched; the others, and this
feature's account, are in tests/unit/run/test_first_hour.py.
"""

from __future__ import annotations

import re

import pytest

# Imported when collected, before any test file imports ssl (selenium's urllib3): importing
# locust patches the standard library for gevent, and ssl patched after its import recurses.
from tests.helpers import (
    model_stats,
    run_locust,
)
from tests.unit.run.test_bad_input import assert_one_error
from tests.unit.run.test_first_hour import MODEL


def counted(triton, command) -> tuple[object, int]:
    """The command's outcome and how many requests Triton counted for MODEL meanwhile."""
    before = model_stats(triton.http_address, MODEL)
    result = command()
    after = model_stats(triton.http_address, MODEL)
    return result, (after["requests"] + after["failures"]) - (before["requests"] + before["failures"])


def test_host_and_triton_http_that_disagree_are_refused(triton):
    result, requests = counted(
        triton,
        lambda: run_locust(
            ["TritonHttpUser"], ["-H", "http://10.9.9.9:8000", *triton.options, "--model", MODEL], users=1
        ),
    )
    assert_one_error(result.returncode, result.stderr, "-H")
    assert requests == 0


@pytest.mark.parametrize(
    ("classes", "fragment"),
    [([], "user class"), (["TritonHtpUser"], "TritonHtpUser")],
    ids=["no-class", "mistyped-class"],
)
def test_user_class_missing_or_mistyped_is_one_error(triton, classes, fragment):
    result, requests = counted(
        triton, lambda: run_locust(classes, [*triton.options, "--model", MODEL], users=1, run_time="2s")
    )
    assert_one_error(result.returncode, result.stderr, fragment)
    error = next(line for line in result.stderr.splitlines() if "error:" in line)
    assert "TritonHttpUser" in error  # says what to type instead
    assert requests == 0


# -- 5. mixed-up addresses and an unknown model -------------------------------------------------------
@pytest.mark.parametrize(
    ("user_class", "swap", "fragment"),
    [
        ("TritonHttpUser", lambda t: ["--triton-http", t.grpc_address], "gRPC port"),
        ("TritonGrpcUser", lambda t: ["--triton-grpc", t.http_address], "HTTP port"),
    ],
    ids=["http-at-grpc-port", "grpc-at-http-port"],
)
def test_mixed_up_addresses_say_so(triton, user_class, swap, fragment):
    result, requests = counted(
        triton, lambda: run_locust([user_class], [*triton.options, *swap(triton), "--model", MODEL], users=1)
    )
    assert_one_error(result.returncode, result.stderr, fragment)
    error = next(line for line in result.stderr.splitlines() if "error:" in line)
    assert not re.search(r"[\x00-\x08\x0e-\x1f\x7f]", error), repr(error)
    assert requests == 0


@pytest.mark.parametrize("user_class", ["TritonHttpUser", "TritonGrpcUser"])
def test_unknown_model_gets_did_you_mean(triton, user_class):
    result, requests = counted(
        triton, lambda: run_locust([user_class], [*triton.options, "--model", "identiy"], users=1)
    )
    assert_one_error(result.returncode, result.stderr, "did you mean 'identity'")
    assert requests == 0
