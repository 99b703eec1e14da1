"""The bad-input table: every kind of bad setup stops with one `error:` line and exit code 2.

Each case is a command a user could type. It must print exactly one error line (``error: ...``,
or argparse's ``PROG: error: ...`` for an option of the wrong type), no traceback, exit 2, and,
when it points at the session's Triton, leave that model's counters where they were.

Three kinds of runs keep the table fast (select it alone with ``-m badinput``):
- in-process Locust init: Locust's real option parser and the suite's real `init` listener, for
  options that are refused before any server is asked (no subprocess, no Triton);
- in-process `python -m loadtests sweep` and `python -m analysis ...` (their `main()`);
- subprocesses, the whole CLI as typed, for everything that reaches a server, a file or a port.
  They run in parallel lanes, one lane per model, so each case's before/after counts are its own.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.badinput

# "error: ..." from the suite; "locust: error: ..." (or "__main__.py: error: ...") and
# "python -m loadtests serve: error: ..." from argparse.
ERROR_LINE = re.compile(r"^(?:(?:[\w.-]+|python -m \w+(?: \w+)?): )?error: ")


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if ERROR_LINE.match(line)]


def assert_one_error(code: int | None, stderr: str, fragment: str) -> None:
    assert "Traceback" not in stderr, stderr[-3000:]
    assert code == 2, (code, stderr[-3000:])
    errors = error_lines(stderr)
    assert len(errors) == 1, stderr[-3000:]
    assert fragment in errors[0], errors[0]


# -- in-process: Locust's parser and the suite's init listener ------------------------------------
def locust_init(argv: list[str], user_classes: tuple[str, ...] = ("ResNetHttpUser",)) -> None:
    """What `locust -f locustfile.py ARGV` does up to the suite's init listener (without pre-flight:
    not headless, so no server is asked). Exits like the CLI (SystemExit) on bad input."""
    from locust.argument_parser import get_empty_argument_parser, setup_parser_arguments
    from locust.env import Environment
    from locust.event import Events

    from loadtests.options import table as suite_options
    from loadtests.run import install
    from loadtests.workloads import users

    parser = get_empty_argument_parser(add_help=False, default_config_files=[])
    parser.prog = "locust"
    setup_parser_arguments(parser)
    suite_options.add_arguments(parser)
    options = parser.parse_args(["-f", "locustfile.py", *argv])
    events = Events()
    install(events)
    # The suite locustfile's concrete twins (importing it would set the suite up on Locust's global events).
    classes = [type(name, (getattr(users, name),), {}) for name in user_classes]
    environment = Environment(user_classes=classes, parsed_options=options, events=events)
    runner = environment.create_local_runner()  # load shapes read their --shape-args through it
    try:
        events.init.fire(environment=environment, runner=runner, web_ui=None)
    finally:
        runner.quit()


INIT_CASES: list[tuple[str, list[str], str]] = [
    # batch-size SPEC forms
    ("batch-zero", ["--batch-size", "0"], "--batch-size"),
    ("batch-negative", ["--batch-size", "-1"], "--batch-size"),
    ("batch-reversed-range", ["--batch-size", "4-2"], "--batch-size"),
    ("batch-open-range", ["--batch-size", "1-"], "--batch-size"),
    ("batch-bad-weight", ["--batch-size", "1:0.5,x"], "--batch-size"),
    ("batch-zero-weight", ["--batch-size", "1:0,2:1"], "--batch-size"),
    ("batch-mixed-forms", ["--batch-size", "1:0.7,8"], "--batch-size"),
    ("batch-empty-item", ["--batch-size", "1,,2"], "--batch-size"),
    ("batch-duplicate", ["--batch-size", "2,2"], "--batch-size"),
    ("batch-word", ["--batch-size", "eight"], "--batch-size"),
    ("batch-fraction", ["--batch-size", "1.5"], "--batch-size"),
    ("batch-empty", ["--batch-size", ""], "--batch-size"),
    ("batch-blank", ["--batch-size", "  "], "--batch-size"),
    # --seq-len
    ("image-format-unknown", ["--image-format", "gif"], "--image-format 'gif' is not one of"),
    ("seq-len-zero", ["--seq-len", "0"], "--seq-len"),
    ("seq-len-word", ["--seq-len", "long"], "--seq-len"),
    ("seq-len-negative", ["--seq-len", "-5"], "--seq-len"),
    ("seq-len-empty", ["--seq-len", ""], "--seq-len"),
    # --trace-sample and what goes with it
    ("trace-sample-word", ["--trace-sample", "some"], "--trace-sample"),
    ("trace-sample-zero", ["--trace-sample", "0%"], "--trace-sample"),
    ("trace-receiver-alone", ["--trace-receiver", "127.0.0.1:4318"], "--trace-receiver"),
    # --shape and --input-map
    ("shape-no-dims", ["--shape", "INPUT0"], "--shape"),
    ("shape-word-dims", ["--shape", "INPUT0:a,b"], "--shape"),
    ("shape-negative-dim", ["--shape", "INPUT0:-1"], "--shape"),
    ("shape-no-name", ["--shape", ":4"], "--shape"),
    ("input-map-no-equals", ["--input-map", "ids"], "--input-map"),
    ("input-map-unknown-role", ["--input-map", "tokens=input_ids"], "--input-map"),
    ("input-map-role-twice", ["--input-map", "ids=a,ids=b"], "--input-map"),
    ("input-map-empty-name", ["--input-map", "ids="], "--input-map"),
    # traffic and rate
    ("traffic-unknown", ["--traffic", "bursty"], "--traffic"),
    ("traffic-without-rate", ["--traffic", "constant"], "--rate"),
    ("rate-in-closed-loop", ["--rate", "10"], "--rate"),
    ("rate-negative", ["--traffic", "poisson", "--rate", "-5"], "--rate"),
    ("rate-nan", ["--traffic", "constant", "--rate", "nan"], "--rate"),
    ("rate-word", ["--rate", "fast"], "--rate"),
    ("max-in-flight-zero", ["--traffic", "constant", "--rate", "5", "--max-in-flight", "0"], "--max-in-flight"),
    ("max-in-flight-word", ["--max-in-flight", "many"], "--max-in-flight"),
    ("gamma-without-burstiness", ["--traffic", "gamma", "--rate", "5"], "--burstiness"),
    ("burstiness-without-gamma", ["--traffic", "poisson", "--rate", "5", "--burstiness", "2"], "--burstiness"),
    ("burstiness-zero", ["--traffic", "gamma", "--rate", "5", "--burstiness", "0"], "--burstiness"),
    ("burstiness-word", ["--traffic", "gamma", "--rate", "5", "--burstiness", "high"], "--burstiness"),
    # load shapes
    ("load-shape-unknown", ["--load-shape", "zigzag"], "--load-shape"),
    ("shape-args-not-a-number", ["--load-shape", "steps", "--shape-args", "start=x"], "--shape-args"),
    ("shape-args-unknown-key", ["--load-shape", "ramp", "--shape-args", "slope=3"], "--shape-args"),
    ("shape-args-no-equals", ["--load-shape", "spike", "--shape-args", "peak"], "--shape-args"),
    ("shape-trace-missing-file", ["--load-shape", "trace", "--shape-args", "file=/nonexistent/t.csv"], "t.csv"),
    ("shape-rate-kind-closed-loop", ["--load-shape", "steps", "--shape-args", "targets=1;2,kind=rate"], "kind=rate"),
    ("shape-users-open-loop", ["--traffic", "constant", "--load-shape", "steps", "--shape-args", "targets=1"], "kind"),
    # --slo grammar and fit
    ("slo-no-unit", ["--slo", "p99<50"], "--slo"),
    ("slo-unknown-metric", ["--slo", "p98<5ms"], "--slo"),
    ("slo-no-operator", ["--slo", "p99 5ms"], "--slo"),
    ("slo-bad-number", ["--slo", "p99<fast"], "--slo"),
    ("slo-ratio-above-one", ["--slo", "fail_ratio<2"], "--slo"),
    ("slo-empty-clause", ["--slo", "p99<5ms,,p50<1ms"], "--slo"),
    ("slo-confidence-on-max", ["--slo", "max<5ms@95%"], "--slo"),
    ("slo-confidence-100", ["--slo", "p99<5ms@100%"], "--slo"),
    ("slo-unknown-target", ["--slo", "no_such_model:p99<5ms"], "no_such_model"),
    ("slo-open-loop-metric-closed", ["--slo", "late_ratio<0.1"], "late_ratio"),
    # timeouts, intervals, windows, ports
    ("request-timeout-zero", ["--request-timeout", "0"], "--request-timeout"),
    ("request-timeout-negative", ["--request-timeout", "-3"], "--request-timeout"),
    ("request-timeout-nan", ["--request-timeout", "nan"], "--request-timeout"),
    ("request-timeout-word", ["--request-timeout", "soon"], "--request-timeout"),
    ("server-stats-interval-zero", ["--server-stats-interval", "0"], "--server-stats-interval"),
    ("server-stats-interval-word", ["--server-stats-interval", "often"], "--server-stats-interval"),
    ("window-negative", ["--window", "-1"], "--window"),
    ("doc-stride-word", ["--doc-stride", "wide"], "--doc-stride"),
    ("data-mode-unknown", ["--data-mode", "ones"], "--data-mode"),
    ("prometheus-port-word", ["--prometheus-port", "http"], "--prometheus-port"),
    # --mix (loadtests/workloads/mix.py): refused as options, before any server is asked
    ("mix-zero-weight", ["--mix", "identity:0,sleep:1"], "weight of 'identity'"),
    ("mix-negative-weight", ["--mix", "identity:-0.5"], "weight of 'identity'"),
    ("mix-word-weight", ["--mix", "identity:lots"], "weight of 'identity'"),
    ("mix-duplicate-model", ["--mix", "identity:0.5,identity:0.5"], "named twice"),
    ("mix-no-weight", ["--mix", "identity"], "MODEL:WEIGHT"),
    ("mix-empty-item", ["--mix", "identity:1,,sleep:1"], "MODEL:WEIGHT"),
    ("mix-only-commas", ["--mix", ","], "MODEL:WEIGHT"),
    ("mix-with-model", ["--mix", "identity:1", "--model", "identity"], "give one of them"),
    ("mix-file-missing", ["--mix", "/nonexistent/mix.yaml"], "cannot read the mix file"),
    # addresses
    # (http://, https://, grpc://, grpcs:// are accepted: issue 16's TLS; other schemes are not)
    ("http-address-with-foreign-scheme", ["--triton-http", "ftp://127.0.0.1:8000"], "--triton-http"),
    ("grpc-address-with-http-scheme", ["--triton-grpc", "https://127.0.0.1:8001"], "--triton-grpc"),
    ("metrics-address-without-port", ["--triton-metrics", "127.0.0.1"], "--triton-metrics"),
    ("http-address-port-word", ["--triton-http", "127.0.0.1:http"], "--triton-http"),
    ("http-address-port-too-big", ["--triton-http", "127.0.0.1:70000"], "--triton-http"),
    # several replicas
    ("address-list-empty-entry", ["--triton-http", "127.0.0.1:8000,"], "--triton-http"),
    ("address-list-twice", ["--triton-grpc", "10.0.0.1:8001,10.0.0.1:8001"], "--triton-grpc"),
    ("address-list-bad-port", ["--triton-metrics", "10.0.0.1:8002,10.0.0.2:metrics"], "--triton-metrics"),
    ("address-list-scheme", ["--triton-http", "10.0.0.1:8000,http://10.0.0.2:8000"], "--triton-http"),
    ("balance-unknown", ["--balance", "least-loaded"], "--balance"),
    # outputs, refused before any load
    ("run-dir-under-dev-null", ["--run-dir", "/dev/null/run"], "--run-dir"),
    ("run-dir-in-proc", ["--run-dir", "/proc/badinput-run"], "--run-dir"),
    ("junit-in-proc", ["--slo", "fail_ratio<1", "--junit", "/proc/badinput.xml"], "--junit"),
    ("junit-under-dev-null", ["--slo", "fail_ratio<1", "--junit", "/dev/null/x.xml"], "--junit"),
]


@pytest.mark.parametrize(("argv", "fragment"), [c[1:] for c in INIT_CASES], ids=[c[0] for c in INIT_CASES])
def test_locust_option_is_refused_at_init(argv, fragment, capsys):
    with pytest.raises(SystemExit) as exited:
        locust_init(argv)
    assert_one_error(exited.value.code, capsys.readouterr().err, fragment)


# -- in-process: python -m loadtests sweep, python -m analysis ------------------------------------
SWEEP_CASES: list[tuple[str, list[str], str]] = [
    ("no-load", ["--model", "identity"], "--concurrency"),
    ("both-loads", ["--model", "identity", "--concurrency", "1:2:1", "--request-rate", "1:2:1"], "--concurrency"),
    ("no-model", ["--concurrency", "1:4:1"], "--model"),
    ("range-reversed", ["--model", "identity", "--concurrency", "8:1:1"], "END"),
    ("range-zero-step", ["--model", "identity", "--concurrency", "1:8:0"], "STEP"),
    ("range-words", ["--model", "identity", "--concurrency", "a:b:c"], "--concurrency"),
    ("range-four-parts", ["--model", "identity", "--concurrency", "1:8:2:4"], "START:END:STEP"),
    ("range-fractional-users", ["--model", "identity", "--concurrency", "1.5:4:1"], "--concurrency"),
    ("rate-range-zero-start", ["--model", "identity", "--request-rate", "0:10:5"], "START"),
    ("rate-range-infinite", ["--model", "identity", "--request-rate", "1:inf:1"], "finite"),
    ("too-many-levels", ["--model", "identity", "--concurrency", "1:100000:1"], "levels"),
    ("measurement-interval-zero", ["--model", "m", "--concurrency", "1:2:1", "--measurement-interval", "0"], "0"),
    ("max-trials-too-few", ["--model", "m", "--concurrency", "1:2:1", "--max-trials", "2"], "--max-trials"),
    ("latency-limit-negative", ["--model", "m", "--concurrency", "1:2:1", "--latency-limit", "-1"], "--latency"),
    ("workers-negative", ["--model", "m", "--concurrency", "1:2:1", "--workers", "-1"], "--workers"),
    ("user-class-unknown", ["--model", "m", "--concurrency", "1:2:1", "--user-class", "FooUser"], "FooUser"),
    (
        "protocol-contradicts-class",
        ["--model", "m", "--concurrency", "1:2:1", "--protocol", "grpc", "--user-class", "ResNetHttpUser"],
        "--protocol",
    ),
    ("traffic-with-concurrency", ["--model", "m", "--concurrency", "1:2:1", "--traffic", "poisson"], "--traffic"),
    ("protocol-unknown", ["--model", "m", "--concurrency", "1:2:1", "--protocol", "quic"], "--protocol"),
    ("max-trials-word", ["--model", "m", "--concurrency", "1:2:1", "--max-trials", "ten"], "--max-trials"),
]
# serve options that argparse refuses (the rest of serve's checks need a subprocess: see CLI_CASES)
SERVE_ARGPARSE_CASES: list[tuple[str, list[str], str]] = [
    ("serve-port-word", ["--grpc-port", "grpc"], "--grpc-port"),
    ("serve-unknown-preset", ["--preset", "huge"], "--preset"),
    ("serve-unknown-option", ["--http-address", "0.0.0.0"], "--http-address"),
]


def run_main(main: Callable[[list[str]], int], argv: list[str]) -> int | None:
    try:
        return main(argv)
    except SystemExit as exited:  # argparse
        return exited.code  # type: ignore[return-value]


@pytest.mark.parametrize(("argv", "fragment"), [c[1:] for c in SWEEP_CASES], ids=[c[0] for c in SWEEP_CASES])
def test_sweep_option_is_refused(argv, fragment, capsys):
    from loadtests.__main__ import main

    code = run_main(main, ["sweep", *argv])
    assert_one_error(code, capsys.readouterr().err, fragment)


@pytest.mark.parametrize(
    ("argv", "fragment"), [c[1:] for c in SERVE_ARGPARSE_CASES], ids=[c[0] for c in SERVE_ARGPARSE_CASES]
)
def test_serve_option_is_refused(argv, fragment, capsys):
    from loadtests.__main__ import main

    code = run_main(main, ["serve", *argv])
    assert_one_error(code, capsys.readouterr().err, fragment)


# serve's checks before Triton starts, on the launcher itself (the CLI path that prints them is
# proven by the serve cases in CLI_CASES); a regression would start Triton, so it is stopped.
# Ports: "h", "g", "m" stand for three free ports, numbers for themselves.
LAUNCHER_CASES: list[tuple[str, tuple[int | str, ...], str, str]] = [
    ("serve-same-grpc-and-metrics-port", ("h", "g", "g"), "", "--grpc-port and --metrics-port are both"),
    ("serve-same-http-and-metrics-port", ("h", "g", "h"), "", "--http-port and --metrics-port are both"),
    ("serve-port-out-of-range", ("h", "g", 70000), "", "--metrics-port 70000 is not a port number"),
    ("serve-port-zero", (0, "g", "m"), "", "--http-port 0 is not a port number"),
    ("serve-port-negative", (-5, "g", "m"), "", "--http-port -5 is not a port number"),
    ("serve-repository-is-a-file", ("h", "g", "m"), "file", "does not exist"),
    ("serve-log-file-is-a-directory", ("h", "g", "m"), "log:emptydir", "is a directory"),
]


@pytest.fixture(scope="module")
def broken_inputs(tmp_path_factory) -> Path:
    """Files an analysis command cannot use: empty, corrupt, half-written run directories, bad CSVs."""
    root = tmp_path_factory.mktemp("broken")
    (root / "empty_run").mkdir()
    corrupt = root / "corrupt_run"
    corrupt.mkdir()
    (corrupt / "summary.json").write_text('{"endpoints": [')
    (corrupt / "config.json").write_text("{}")
    (root / "not_a_run.txt").write_text("hello\n")
    (root / "garbage.csv").write_text("Concurrency;Throughput\nnot,a,perf,analyzer,file\n")
    no_slo = root / "run_without_slo"
    no_slo.mkdir()
    (no_slo / "summary.json").write_text(json.dumps({"endpoints": []}))
    (no_slo / "config.json").write_text(json.dumps({"options": {"slo": ""}}))
    return root


ANALYSIS_CASES: list[tuple[str, list[str], str]] = [
    ("report-missing-dir", ["report", "{root}/nowhere"], "nowhere"),
    ("report-empty-dir", ["report", "{root}/empty_run"], "empty_run"),
    ("report-corrupt-summary", ["report", "{root}/corrupt_run"], "corrupt_run"),
    ("report-not-a-run", ["report", "{root}/not_a_run.txt"], "not_a_run.txt"),
    ("report-garbage-csv", ["report", "{root}/garbage.csv"], "garbage.csv"),
    ("compare-one-run", ["compare", "{root}/empty_run"], "two"),
    ("compare-missing", ["compare", "{root}/nowhere", "{root}/empty_run"], "nowhere"),
    ("compare-corrupt", ["compare", "{root}/corrupt_run", "{root}/corrupt_run"], "corrupt_run"),
    ("check-missing-dir", ["check", "{root}/nowhere", "--slo", "p99<5ms"], "nowhere"),
    ("check-corrupt-summary", ["check", "{root}/corrupt_run", "--slo", "p99<5ms"], "summary.json"),
    ("check-no-slo-anywhere", ["check", "{root}/run_without_slo"], "--slo"),
    ("check-bad-slo", ["check", "{root}/run_without_slo", "--slo", "p99<5"], "--slo"),
    ("check-unknown-command", ["inspect", "{root}/empty_run"], "inspect"),
]


@pytest.mark.parametrize(("argv", "fragment"), [c[1:] for c in ANALYSIS_CASES], ids=[c[0] for c in ANALYSIS_CASES])
def test_analysis_refuses_unusable_input(argv, fragment, broken_inputs, capsys):
    from analysis.__main__ import main

    code = run_main(main, [arg.format(root=broken_inputs) for arg in argv])
    assert_one_error(code, capsys.readouterr().err, fragment)


# -- subprocesses: the whole CLI, against the session's Triton ------------------------------------
@dataclass(frozen=True)
class CliCase:
    """One command line. `model`: the session Triton's model whose counts must not move."""

    id: str
    program: str  # "locust" (headless, 1 s), "serve", "analysis"
    argv: tuple[str, ...]
    fragment: str
    model: str | None = None
    user_class: str = "ResNetHttpUser"


def locust_case(case_id: str, argv: list[str], fragment: str, model: str = "resnet50", user="ResNetHttpUser"):
    return CliCase(case_id, "locust", tuple(argv), fragment, model, user)


CLI_CASES: list[CliCase] = [
    # the server, its models and its addresses
    locust_case("unknown-model", ["--model", "no_such_model"], "no_such_model", "bert_qa", "BertQAHttpUser"),
    locust_case("unknown-model-grpc", ["--model", "no_such_model"], "no_such_model", "identity", "TritonGrpcUser"),
    locust_case(
        "unknown-resnet-model-mixed",
        ["--resnet-model", "resnet18"],
        "resnet18",
        "bert_qa_dynbatch",
        "BertQAHttpUser ResNetHttpUser",
    ),
    locust_case("generic-without-model", [], "--model", "identity", "TritonHttpUser"),
    # a streamed request carries no trace id: Triton's traces of it could never be joined
    locust_case(
        "trace-sample-decoupled",
        ["--model", "stream_gaps", "--trace-sample", "10%"],
        "--trace-sample: model 'stream_gaps' is decoupled",
        "stream_gaps",
        "TritonGrpcUser",
    ),
    locust_case("closed-http-port", ["--triton-http", "127.0.0.1:{closed_http}"], "cannot reach"),
    locust_case(
        "closed-grpc-port", ["--triton-grpc", "127.0.0.1:{closed_grpc}"], "cannot reach", "resnet50", "ResNetGrpcUser"
    ),
    locust_case("unknown-host", ["--triton-http", "no-such-host.invalid:8000"], "no-such-host.invalid"),
    # every replica of a list is asked before any load
    locust_case(
        "replica-closed-http-port",
        ["--triton-http", "{http},127.0.0.1:{closed_http}"],
        "cannot reach Triton at 127.0.0.1:{closed_http}",
    ),
    locust_case(
        "replica-closed-grpc-port",
        ["--triton-grpc", "{grpc},127.0.0.1:{closed_grpc}"],
        "cannot reach Triton at 127.0.0.1:{closed_grpc}",
        "resnet50",
        "ResNetGrpcUser",
    ),
    locust_case("grpc-scheme-in-http-address", ["--triton-http", "grpc://{http}"], "--triton-http"),
    locust_case(
        "http-scheme-in-grpc-address", ["--triton-grpc", "http://{grpc}"], "--triton-grpc", "resnet50", "ResNetGrpcUser"
    ),
    # TLS to a server that does not speak it: the handshake is refused, before any load
    locust_case("https-to-plain-http", ["--triton-http", "https://{http}"], "TLS handshake failed"),
    locust_case(
        "grpcs-to-plain-grpc", ["--triton-grpc", "grpcs://{grpc}"], "TLS handshake failed", "resnet50", "ResNetGrpcUser"
    ),
    # batch sizes and sequence lengths the model cannot take
    locust_case("batch-empty", ["--batch-size", ""], "--batch-size"),
    locust_case("batch-above-max", ["--batch-size", "1-32"], "max_batch_size", "bert_qa", "BertQAGrpcUser"),
    locust_case(
        "batch-above-max-generic",
        ["--model", "sleep", "--shape", "INPUT0:4", "--batch-size", "1,65"],
        "max_batch_size 64",
        "sleep",
        "TritonHttpUser",
    ),
    locust_case(
        "seq-len-above-position-table", ["--model", "bert_qa", "--seq-len", "1024"], "512", "bert_qa", "BertQAHttpUser"
    ),
    locust_case("seq-len-513-dynbatch", ["--seq-len", "513"], "512", "bert_qa_dynbatch", "BertQAGrpcUser"),
    locust_case("seq-len-below-minimum", ["--seq-len", "8"], "--seq-len", "bert_qa_dynbatch", "BertQAHttpUser"),
    locust_case(
        "shape-for-unknown-input",
        ["--model", "sleep", "--shape", "NOT_AN_INPUT:4"],
        "NOT_AN_INPUT",
        "sleep",
        "TritonHttpUser",
    ),
    locust_case(
        "input-map-unknown-name",
        ["--model", "bert_qa", "--input-map", "ids=tokens"],
        "tokens",
        "bert_qa",
        "BertQAHttpUser",
    ),
    locust_case("bert-user-on-identity", ["--model", "identity"], "identity", "identity", "BertQAHttpUser"),
    locust_case("image-user-on-identity", ["--model", "identity"], "identity", "identity", "ResNetGrpcUser"),
    locust_case("jpeg-to-tensor-model", ["--image-format", "jpeg", "--resnet-model", "resnet50"], "BYTES"),
    locust_case(
        "jpeg-from-a-png-file",
        ["--image-format", "jpeg", "--image-dir", "payloads/images/logo2.png"],
        "is not a JPEG file",
        "resnet50_jpeg",
    ),
    # --mix: models the server does not have, classes a mix cannot drive, mix files (docs/guides/mixes.md)
    locust_case(
        "mix-unknown-model",
        ["--mix", "identity:0.5,no_such_model:0.5"],
        "model 'no_such_model' is not",
        "identity",
        "TritonHttpUser",
    ),
    locust_case(
        "mix-unknown-model-grpc",
        ["--mix", "no_such_model:1,sleep:1"],
        "model 'no_such_model' is not",
        "sleep",
        "TritonGrpcUser",
    ),
    locust_case(
        "mix-beside-bert-user",
        ["--mix", "identity:1"],
        "BertQAHttpUser",
        "identity",
        "TritonHttpUser BertQAHttpUser",
    ),
    locust_case("mix-zero-weight-cli", ["--mix", "identity:0"], "weight", "identity", "TritonGrpcUser"),
    locust_case("mix-file-empty", ["--mix", "{tmp}/empty_mix.yaml"], "'models'", "identity", "TritonHttpUser"),
    locust_case("mix-file-unknown-key", ["--mix", "{tmp}/typo_mix.json"], "batchsize", "identity", "TritonHttpUser"),
    locust_case("mix-file-shape-misfit", ["--mix", "{tmp}/misfit_mix.yaml"], "INPUT0", "identity", "TritonGrpcUser"),
    # sequence users: a model without sequence batching, open loop, a bad --sequence-length
    locust_case("sequence-without-model", [], "--model", "accumulator", "TritonSequenceHttpUser"),
    locust_case(
        "sequence-user-on-identity", ["--model", "identity"], "sequence_batching", "identity", "TritonSequenceGrpcUser"
    ),
    locust_case(
        "sequence-open-loop",
        ["--model", "accumulator", "--traffic", "constant", "--rate", "10"],
        "closed loop",
        "accumulator",
        "TritonSequenceHttpUser",
    ),
    locust_case(
        "sequence-length-zero",
        ["--model", "accumulator", "--sequence-length", "0"],
        "--sequence-length",
        "accumulator",
        "TritonSequenceHttpUser",
    ),
    # files that cannot be read or used
    locust_case(
        "input-data-missing",
        ["--model", "identity", "--input-data", "{tmp}/nowhere.json"],
        "nowhere.json",
        "identity",
        "TritonHttpUser",
    ),
    locust_case(
        "input-data-directory",
        ["--model", "identity", "--input-data", "{tmp}/emptydir"],
        "emptydir",
        "identity",
        "TritonHttpUser",
    ),
    locust_case(
        "input-data-not-json",
        ["--model", "identity", "--input-data", "{tmp}/not.json"],
        "not JSON",
        "identity",
        "TritonHttpUser",
    ),
    locust_case(
        "input-data-wrong-shape",
        ["--model", "identity", "--input-data", "{tmp}/short.json"],
        "INPUT0",
        "identity",
        "TritonGrpcUser",
    ),
    locust_case("vocab-missing", ["--vocab", "{tmp}/nowhere.txt"], "nowhere.txt", "bert_qa_dynbatch", "BertQAHttpUser"),
    locust_case("vocab-directory", ["--vocab", "{tmp}/emptydir"], "emptydir", "bert_qa_dynbatch", "BertQAHttpUser"),
    locust_case("vocab-not-wordpiece", ["--vocab", "{tmp}/not.json"], "--vocab", "bert_qa_dynbatch", "BertQAHttpUser"),
    locust_case("image-dir-missing", ["--image-dir", "{tmp}/nowhere"], "nowhere"),
    locust_case("image-dir-without-images", ["--image-dir", "{tmp}/textdir"], "textdir"),
    locust_case("image-dir-corrupt-image", ["--image-dir", "{tmp}/corruptimages"], "broken.jpg"),
    # outputs that cannot be written: refused before the load, not after it
    locust_case("run-dir-is-a-file", ["--run-dir", "{tmp}/file"], "--run-dir"),
    locust_case("run-dir-under-a-file", ["--run-dir", "{tmp}/file/run"], "--run-dir"),
    locust_case("run-dir-in-proc", ["--run-dir", "/proc/badinput-run"], "--run-dir"),
    locust_case("run-dir-under-dev-null", ["--run-dir", "/dev/null/run"], "--run-dir", "identity", "TritonGrpcUser"),
    locust_case("junit-in-proc", ["--slo", "fail_ratio<1", "--junit", "/proc/badinput.xml"], "--junit"),
    locust_case("junit-is-a-directory", ["--slo", "fail_ratio<1", "--junit", "{tmp}/emptydir"], "--junit"),
    # options refused at init, through the real command line
    locust_case("slo-malformed", ["--slo", "p99<50"], "--slo"),
    locust_case("request-timeout-word", ["--request-timeout", "soon"], "--request-timeout"),
    locust_case("traffic-without-rate", ["--traffic", "poisson"], "--rate"),
    locust_case("prometheus-port-in-use", ["--prometheus-port", "{busy}"], "{busy}"),
    # serve: refused before Triton starts
    CliCase("serve-same-http-and-grpc-port", "serve", ("--http-port", "{free}", "--grpc-port", "{free}"), "{free}"),
    CliCase(
        "serve-port-in-use",
        "serve",
        (
            "--http-port",
            "{busy}",
        ),
        "{busy}",
    ),
    CliCase("serve-missing-repository", "serve", ("--model-repository", "{tmp}/nowhere"), "nowhere"),
    CliCase("serve-log-file-unwritable", "serve", ("--log-file", "/proc/badinput/triton.log"), "--log-file"),
    # analysis on a finished run, with an output it cannot write
    CliCase(
        "check-junit-unwritable",
        "analysis",
        ("check", "{run}", "--slo", "fail_ratio<1", "--junit", "/proc/badinput.xml"),
        "--junit",
    ),
    CliCase("report-out-unwritable", "analysis", ("report", "{run}", "--out", "/dev/null/report"), "--out"),
    CliCase("check-unknown-target", "analysis", ("check", "{run}", "--slo", "resnet18:p99<5ms"), "resnet18"),
]


def test_the_table_covers_the_drill():
    """The issue's drill had 83 kinds of bad input; the table keeps at least that many."""
    total = len(INIT_CASES) + len(SWEEP_CASES) + len(SERVE_ARGPARSE_CASES) + len(LAUNCHER_CASES)
    total += len(ANALYSIS_CASES) + len(CLI_CASES)
    assert total >= 83, total
