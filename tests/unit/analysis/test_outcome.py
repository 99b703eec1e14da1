"""A report read when the run went wrong: the outcome first, the cause from what failed, the
headline honest about whose figures it quotes, commands that carry the run's own options.

On runs recorded once (tests/recorded_runs.py): `diagnosis/timeout` (BERT-QA with a 6-ms
request timeout: every request timed out), `diagnosis/batch_full` (a clean one-level run),
`diagnosis/queue` (three steps), `diagnosis/overload` (a queue of one request under 6 users).
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
from pathlib import Path

import pytest

from analysis.dataset import load
from analysis.diagnosis import Diagnosis, diagnose, headlines
from analysis.outcome import first_screen, outcome
from analysis.report import build, write_report
from analysis.suggestions import RunCommands, concurrency_range, header_variable
from loadtests.commands.sweep import parse_range
from tests.helpers import report_first_screen, run_cli
from tests.recorded_runs import GROUPS, recorded


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("outcome")
    return {name: recorded("diagnosis", name, root) for name in GROUPS["diagnosis"]}


def first_lines(markdown: str, count: int) -> list[str]:
    return [line for line in markdown.splitlines() if line.strip()][:count]


def test_a_run_that_timed_out_says_so_first_and_blames_the_deadline(runs):
    data = load(runs["timeout"])
    (endpoint,) = data.endpoints
    assert endpoint.failures_by_class == {"timeout": endpoint.requests}  # the recording's premise
    markdown = build(data).markdown()
    title, first = first_lines(markdown, 2)
    assert title.startswith("# ")
    assert first == f"**Failed: every one of {endpoint.requests:,} requests in {endpoint.duration_s:,.1f} s failed " \
                    f"(timeout {endpoint.requests:,}); no latency was measured.**"  # fmt: skip
    # The header shows the setting that decided it.
    assert "| request timeout | 0.006 s (--request-timeout) |" in markdown
    (failures, *_) = [item for item in diagnose(data) if isinstance(item, Diagnosis)]
    assert failures.rule == "failures"
    assert "the client gave each request 6 ms (--request-timeout)" in failures.evidence
    assert "Triton spent" in failures.evidence and "per request it answered" in failures.evidence
    assert "gave up on the requests before Triton answered" in failures.why
    assert "refused or failed the requests themselves" not in markdown
    longer = float(re.search(r"--request-timeout (\S+)\)", failures.next_step).group(1))
    assert longer >= 2 * 0.006 and f"--request-timeout {longer:g}" in failures.command
    # No headline quotes latencies no request had.
    assert headlines(data) == []


def test_a_clean_one_level_run_is_healthy_and_claims_no_ceiling(runs):
    data = load(runs["batch_full"])
    (endpoint,) = data.endpoints
    assert outcome(data) == f"Healthy: {endpoint.requests:,} requests in {endpoint.duration_s:,.1f} s, none failed."
    (line,) = headlines(data)
    assert "at most" not in line and "over the whole run" in line
    # Several steps: a ceiling was looked for.
    (stepped,) = headlines(load(runs["queue"]))
    assert "at most" in stepped


def test_a_headline_over_mostly_failed_requests_says_whose_figures_they_are(runs, tmp_path):
    """batch_full's summary.json altered so that most of its requests failed: the headline's
    figures are then of the requests that succeeded, and it says so."""
    altered = Path(runs["batch_full"]).parent / "altered"
    if not altered.exists():
        import shutil

        shutil.copytree(runs["batch_full"], altered)
    summary = json.loads((altered / "summary.json").read_text())
    (endpoint,) = summary["endpoints"]
    failed = endpoint["requests"] * 2 // 3
    endpoint["failures"], endpoint["failures_by_class"] = failed, {"timeout": failed}
    (altered / "summary.json").write_text(json.dumps(summary))
    data = load(altered)
    (line,) = headlines(data)
    succeeded = endpoint["requests"] - failed
    assert f"(of the {succeeded:,} requests that succeeded; {failed:,} of {endpoint['requests']:,} failed)" in line
    assert outcome(data).startswith(f"Unhealthy: {failed:,} of {endpoint['requests']:,} requests")
    assert outcome(data).endswith(f"the latencies below are of the {succeeded:,} that succeeded.")


def test_every_suggested_command_carries_the_runs_target_class_and_payload(runs):
    for name, path in runs.items():
        data = load(path)
        options = data.run.config["options"]
        for item in diagnose(data):
            if not isinstance(item, Diagnosis) or not item.command:
                continue
            words = shlex.split(item.command)
            for flag, key in (("--triton-http", "triton_http"), ("--triton-grpc", "triton_grpc")):
                assert words[words.index(flag) + 1] == options[key], (name, item.command)
            if options.get("shape"):
                assert words[words.index("--shape") + 1] == options["shape"], (name, item.command)
            if words[0] == "locust":
                assert set(words) & set(data.run.config["user_classes"]) or "ResNetGrpcUser" in words, item.command
            elif words[3] in ("sweep", "capacity"):
                classes = data.run.config["user_classes"]
                assert words[words.index("--user-class") + 1] in classes or "--protocol" in words, item.command


@pytest.mark.parametrize("peak", [*range(1, 40), 48, 64, 100, 128, 256])
def test_a_suggested_range_reaches_the_value_it_names(peak):
    text = concurrency_range(peak)
    levels = parse_range(text, "--concurrency", integer=True)
    step = levels[1] - levels[0] if len(levels) > 1 else 1
    assert levels[-1] == peak and 1 <= levels[0] <= step, (text, levels)
    assert len(levels) <= 14, (text, len(levels))  # about 8 levels, not one per user


def test_tls_files_and_header_references_are_repeated_and_literal_headers_never_written():
    commands = RunCommands.of(
        {
            "user_classes": ["TritonGrpcUser"],
            "options": {
                "triton_grpc": "grpcs://triton.example:443",
                "ssl_ca": "/etc/ca.pem",
                "ssl_insecure": True,
                "header": ["Authorization: <redacted>", "X-Tenant: env:TENANT", "X-Key: file:/run/key"],
                "model": "m",
                "shape": "INPUT0:16",
                "batch_size": "1-8",
            },
        }
    )
    words = shlex.split(commands.loadtests("capacity", "m", ["--slo", "p99<50ms"]))
    assert words[:8] == ["python", "-m", "loadtests", "capacity", "--model", "m", "--slo", "p99<50ms"]
    assert words[words.index("--user-class") + 1] == "TritonGrpcUser"
    assert words[words.index("--batch-size") + 1] == "1-8" and words[words.index("--shape") + 1] == "INPUT0:16"
    assert words[words.index("--triton-grpc") + 1] == "grpcs://triton.example:443"
    assert words[words.index("--ssl-ca") + 1] == "/etc/ca.pem" and "--ssl-insecure" in words
    headers = [words[index + 1] for index, word in enumerate(words) if word == "--header"]
    assert headers == [f"Authorization: env:{header_variable('Authorization')}", "X-Tenant: env:TENANT",
                       "X-Key: file:/run/key"]  # fmt: skip
    assert "<redacted>" not in " ".join(words)
    assert commands.header_variables() == ["TRITON_HEADER_AUTHORIZATION"]


def test_the_defaults_a_suggested_command_leaves_out_are_the_option_tables():
    """analysis/ cannot import the option table (it reads run directories without Locust), so
    suggestions.py names the payload options' defaults itself: they must be the table's."""
    from locust.argument_parser import LocustArgumentParser

    from analysis.suggestions import PAYLOAD_OPTIONS
    from loadtests.options.table import add_arguments

    parser = LocustArgumentParser()
    add_arguments(parser)
    for flag, key, default in PAYLOAD_OPTIONS:
        assert str(parser.get_default(key) or "") == str(default or ""), (flag, parser.get_default(key), default)


# Every failure class the suite names (loadtests/clients/failures.py), and the cause it leads to.
CAUSES = {
    "timeout": "gave up on the requests before Triton answered",
    "overloaded (queue full)": "queue could not hold or serve in time",
    "overloaded (queue timeout)": "queue could not hold or serve in time",
    "overloaded": "queue could not hold or serve in time",
    "unavailable": "did not reach a serving Triton",
    "server stopping": "did not reach a serving Triton",
    "connection refused": "did not reach a serving Triton",
    "connection reset": "did not reach a serving Triton",
    "connection error": "did not reach a serving Triton",
    "invalid request": "refused or failed the requests themselves",
    "access denied": "refused or failed the requests themselves",
    "server error": "refused or failed the requests themselves",
    "bad response": "refused or failed the requests themselves",
    "validation": "refused or failed the requests themselves",
    "sequence state": "refused or failed the requests themselves",
    "stream broken": "refused or failed the requests themselves",
    "interrupted": "still in flight when the run's stop grace ran out",
}


def test_every_failure_class_leads_to_its_own_cause(runs, tmp_path):
    """batch_full's summary.json with half its requests failed as each class the suite names, in
    the form the suite writes it (class, then what the server said)."""
    from loadtests.clients import failures

    named = {value.name for value in vars(failures).values() if isinstance(value, failures.FailureClass)}
    assert named == set(CAUSES), named ^ set(CAUSES)
    for name, cause in CAUSES.items():
        run = Path(shutil.copytree(runs["batch_full"], tmp_path / name.replace(" ", "_").replace("(", "")))
        summary = json.loads((run / "summary.json").read_text())
        (endpoint,) = summary["endpoints"]
        failed = endpoint["requests"] // 2
        endpoint["failures"], endpoint["failures_by_class"] = failed, {f"{name}: HTTP 503": failed}
        (run / "summary.json").write_text(json.dumps(summary))
        (failures_rule,) = [item for item in diagnose(load(run)) if getattr(item, "rule", "") == "failures"]
        assert cause in failures_rule.why, (name, failures_rule.why)


@pytest.mark.parametrize("name", ["queue", "scaling", "timeout", "overload"])
def test_the_first_screen_is_what_the_report_says_first(tmp_path, name):
    """`python -m analysis first-screen` (the web UI's health line) says what report.md says first:
    a run with a diagnosis, one where no rule found a limit, one whose requests all failed, one
    mostly failed."""
    run = recorded("diagnosis", name, tmp_path)
    write_report(run)
    lines = first_screen(load(run))
    assert lines == report_first_screen((run / "report.md").read_text())
    printed = run_cli(["-m", "analysis", "first-screen", str(run), "--json"])
    assert printed.returncode == 0, printed.stderr
    assert json.loads(printed.stdout) == lines
