"""The suite's Locust options: a declarative table (`option_values.settings_from` reads
them into the one frozen `Settings` of loadtests/config/settings.py).

Every option has help text and a LOCUST_-prefixed environment variable, so it works
from the command line, `locust.conf`, the environment and the web UI, and reaches
distributed workers in the master's spawn message (at test_start, not at init). Only this
module and `reading.py` read Locust's `parsed_options`.

    locust -f locustfile.py --headless -u 4 -t 30s BertQAGrpcUser \\
        --triton-grpc 127.0.0.1:8001 --batch-size 1:0.7,8:0.3 --validate-responses
"""

from __future__ import annotations

import argparse
import difflib
import sys
from collections.abc import Mapping

from loadtests.config.settings import (
    BALANCE_POLICIES,
    CLOSED_LOOP,
    DATA_MODES,
    DEFAULT_BERT_MODEL,
    DEFAULT_DOC_STRIDE,
    DEFAULT_GRPC_CONNECTIONS,
    DEFAULT_MAX_IN_FLIGHT,
    DEFAULT_PROMETHEUS_HOST,
    DEFAULT_REQUEST_TIMEOUT_S,
    DEFAULT_RESNET_JPEG_MODEL,
    DEFAULT_RESNET_MODEL,
    DEFAULT_SEQ_LEN,
    DEFAULT_SEQUENCE_LENGTH,
    DEFAULT_SERVER_POLL_S,
    DEFAULT_TRITON_GRPC,
    DEFAULT_TRITON_HTTP,
    DEFAULT_TRITON_METRICS,
    DEFAULT_WINDOW_S,
    IMAGE_FORMATS,
    IMAGE_TENSOR,
    ROUND_ROBIN,
    TRAFFIC_MODES,
)
from loadtests.errors import SpecError
from loadtests.options.shapes import add_arguments as add_shape_arguments
from loadtests.workloads.kinds import DEFAULT_USER_CLASS
from loadtests.workloads.kinds import user_class_names as workload_classes

# Locust binds its web UI (no authentication) and the master's ZeroMQ port on every
# interface. The suite binds both to loopback unless told otherwise: enough locally and
# behind `kubectl port-forward`; a Service, an Ingress or workers on other machines need
# --web-host 0.0.0.0 / --master-bind-host 0.0.0.0 (docs/guides/web-ui.md).
LOOPBACK = "127.0.0.1"
LOCUST_BIND_OPTIONS = ("web_host", "master_bind_host")
# Fields of the web UI's /swarm form that Locust itself interprets (locust/web.py, swarm()); the rest are options.
LOCUST_FORM_FIELDS = frozenset(
    {"user_count", "spawn_rate", "host", "user_classes", "run_time", "profile", "shape_class"}
)


def bind_loopback_by_default(parser: argparse.ArgumentParser) -> None:
    """Make Locust's --web-host and --master-bind-host default to loopback (init_command_line_parser).

    The command line, LOCUST_WEB_HOST / LOCUST_MASTER_BIND_HOST and locust.conf still override it.
    """
    parser.set_defaults(**dict.fromkeys(LOCUST_BIND_OPTIONS, LOOPBACK))


def user_class_names() -> list[str]:
    """Every concrete User class imported so far (the locustfile's among them: Locust imports
    it before it parses the command line)."""
    from locust import User  # here: importing locust patches the standard library (gevent)

    found, pending = set(), list(User.__subclasses__())
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        if not getattr(cls, "abstract", False) and not cls.__module__.startswith("locust."):
            found.add(cls.__name__)
    return sorted(found)


def known_user_class(name: str) -> str:
    """A user class named on the command line, checked as it is parsed: a mistyped one is one
    error line and exit 2 (Locust's own check says `Unknown User(s)` and exits 1, which a CI
    job reads as "some requests failed")."""
    names = user_class_names()
    if name in names or not names:
        return name
    close = difflib.get_close_matches(name, names, n=1)
    hint = f"did you mean {close[0]}? " if close else ""
    print(f"error: unknown user class '{name}': {hint}the classes are {', '.join(names)}", file=sys.stderr)
    sys.exit(2)


def check_user_class_names(parser: argparse.ArgumentParser) -> None:
    """Check Locust's positional user classes as they are parsed (init_command_line_parser)."""
    for action in parser._actions:
        if action.dest == "user_classes":
            action.type = known_user_class


class JoinRepeated(argparse.Action):
    """A repeatable option whose values join with spaces into one string, the form its web UI
    field holds: `--shape a:16 --shape b:16` is `--shape "a:16 b:16"`, as perf_analyzer repeats it
    (a plain option would keep the last and refuse the model for the inputs before it)."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        previous = getattr(namespace, self.dest, None)
        setattr(namespace, self.dest, f"{previous} {values}" if previous else values)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register the suite's options on Locust's parser (init_command_line_parser)."""

    def option(name: str, **kwargs) -> None:
        env = "LOCUST_" + name.lstrip("-").upper().replace("-", "_")
        kwargs["help"] = f"{kwargs['help']} [env {env}]"
        # Directly on the parser, not in an argument group: Locust's web UI form lists only
        # arguments added this way (locust/argument_parser.py, ui_extra_args_dict).
        parser.add_argument(name, env_var=env, **kwargs)

    # Several replicas: a comma-separated list, or a DNS name with several addresses (a headless
    # Service), resolved again every 30 s (loadtests/clients/replicas.py).
    replicas = "; several replicas: HOST:PORT,HOST:PORT or a name resolving to several addresses"
    option("--triton-http", default=DEFAULT_TRITON_HTTP, metavar="HOST:PORT", help=f"Triton HTTP endpoint{replicas}")
    option("--triton-grpc", default=DEFAULT_TRITON_GRPC, metavar="HOST:PORT", help=f"Triton gRPC endpoint{replicas}")
    option(
        "--triton-metrics",
        default=DEFAULT_TRITON_METRICS,
        metavar="HOST:PORT",
        help=f"Triton Prometheus endpoint{replicas} (one per HTTP replica, in the same order)",
    )
    option(
        "--balance",
        default=ROUND_ROBIN,
        choices=BALANCE_POLICIES,
        help="several replicas: round-robin (each request to the next replica, over a connection to each) "
        "or pin-user (each user stays on one replica, users assigned round robin)",
    )
    # TLS and headers for every connection to Triton (loadtests/config/security.py, docs/reference/users.md):
    # https://HOST:PORT and grpcs://HOST:PORT in the three options above turn TLS on.
    option("--ssl-ca", default="", metavar="FILE", help="CA bundle (PEM) that verifies Triton's TLS certificate")
    option("--ssl-cert", default="", metavar="FILE", help="client certificate (PEM) for mutual TLS")
    option("--ssl-key", default="", metavar="FILE", help="private key (PEM) of --ssl-cert")
    option(
        "--ssl-insecure",
        action="store_true",
        default=False,
        help="for testing only: accept any server certificate (no verification, no hostname check)",
    )
    option(
        "--header",
        action="append",
        default=None,
        metavar="'NAME: VALUE'",
        is_secret=True,
        help="extra header on every request to Triton, HTTP and gRPC (repeatable); VALUE env:VAR or "
        "file:PATH reads the secret from there, so it stays out of config.json and the web UI",
    )
    option(
        "--user-class",
        default=DEFAULT_USER_CLASS,
        choices=workload_classes(),
        help="the user class a test started from the web UI runs when none is named on the command line "
        "(and --class-picker is off): BertQA* and ResNet* run on the demo's models, Triton*User on any "
        "model (Model), TritonSequence*User on a sequence-batching model; Http or Grpc",
    )
    option(
        "--model",
        default="",
        help="model for the selected user classes; with several classes, the generic Triton*User model",
    )
    # --mix: loadtests/workloads/mix.py reads it, loadtests/workloads/mix.py prepares it (docs/guides/mixes.md).
    option(
        "--mix",
        default="",
        metavar="MODEL:WEIGHT,...|FILE",
        help="generic users drive several models at once, each request choosing its model by weight "
        "(e.g. 'identity:0.6,sleep:0.3,text_reverse:0.1'; open loop splits --rate by weight), or a "
        "YAML/JSON mix file with per-model weight, batch_size, shape, input_data, data_mode; not with --model",
    )
    option("--bert-model", default="", help=f"BERT-QA model when classes are mixed (default {DEFAULT_BERT_MODEL})")
    option("--resnet-model", default="", help=f"ResNet model when classes are mixed (default {DEFAULT_RESNET_MODEL})")
    option(
        "--batch-size",
        default="1",
        metavar="SPEC",
        help="batch size per request: 8 | 1,2,4,8 (choice) | 1-16 (range) | 1:0.7,8:0.3 (weighted)",
    )
    option(
        "--sequence-length",
        default=DEFAULT_SEQUENCE_LENGTH,
        metavar="SPEC",
        help="sequence users: requests per sequence, drawn per sequence: 20 | 5,10,20 (choice) | 5-50 (range) | "
        "10:0.9,100:0.1 (weighted)",
    )
    option("--seq-len", default=DEFAULT_SEQ_LEN, help="BERT sequence length: N (padded/truncated) or 'variable'")
    option("--doc-stride", type=int, default=DEFAULT_DOC_STRIDE, help="BERT document stride for long contexts")
    option("--vocab", default="", metavar="FILE", help="WordPiece vocabulary of the target BERT model")
    option(
        "--input-map",
        default="",
        metavar="ids=NAME,segments=NAME,mask=NAME",
        help="BERT input names, when the model's are not recognised",
    )
    option("--image-dir", default="", metavar="DIR", help="images for ResNet users (default payloads/images)")
    option(
        "--image-format",
        default=IMAGE_TENSOR,
        metavar="|".join(IMAGE_FORMATS),
        help="what ResNet users send: tensor (images preprocessed by the client, FP32), or jpeg / png (the JPEG or "
        "PNG files of --image-dir as they are, BYTES [1] or UINT8 [-1] as the model takes them, decoded on the "
        f"server; default model {DEFAULT_RESNET_JPEG_MODEL})",
    )
    option(
        "--shape",
        action=JoinRepeated,
        default="",
        metavar="NAME:D1,D2",
        help="shape of a variable-size input for generic users (repeatable, or space-separated for several)",
    )
    option(
        "--input-data",
        action="append",
        default=None,
        metavar="FILE|zero|random",
        help="generic users' data: a perf_analyzer --input-data JSON file (repeat for several: their "
        "entries are used in order, as perf_analyzer does), or zero|random (same as --data-mode)",
    )
    option("--data-mode", default="random", choices=DATA_MODES, help="generic users' generated data")
    option("--http-json", action="store_true", default=False, help="send HTTP tensors as JSON instead of binary")
    option(
        "--request-timeout",
        type=float,
        default=DEFAULT_REQUEST_TIMEOUT_S,
        metavar="SECONDS",
        help="per-request timeout",
    )
    # --grpc-connections: how many users share one HTTP/2 connection (loadtests/clients/grpc.py).
    option(
        "--grpc-connections",
        default=DEFAULT_GRPC_CONNECTIONS,
        metavar="per-user|per-process|N",
        help="gRPC connection sharing: a connection per user, one per worker process, or up to N users per "
        f"connection (default {DEFAULT_GRPC_CONNECTIONS}, perf_analyzer's sharing)",
    )
    option(
        "--validate-responses",
        action="store_true",
        default=False,
        help="check every response's outputs (names, dtypes, batch dim, values)",
    )
    # Per-request attribution of the tail from Triton's traces (loadtests/tracing/).
    option(
        "--trace-sample",
        default="",
        metavar="PERCENT",
        help="trace this share of the requests in Triton (e.g. 1%%) and join each trace to the client's timing: "
        "the run directory's traces.csv and the report's 'What made the slow requests slow'",
    )
    option(
        "--trace-file",
        default="",
        metavar="PATH",
        help="where Triton's trace file (--trace-config triton,file=PATH) is readable on this machine "
        "(default: the path Triton's trace settings name)",
    )
    option(
        "--trace-receiver",
        default="",
        metavar="HOST:PORT",
        help="with --trace-sample and a Triton in opentelemetry mode: where the suite receives its OTLP/HTTP "
        "traces (Triton's --trace-config opentelemetry,url=HOST:PORT/v1/traces)",
    )
    option("--run-dir", default="", metavar="DIR", help="run directory (default runs/<UTC time>-<name>)")
    # Copied at the end of the run by loadtests/run/upload.py (fsspec: loadtests/run_format/storage.py).
    option(
        "--upload",
        default="",
        metavar="URL",
        help="copy the finished run directory to URL/<run name>/ (gs://bucket/prefix, s3://bucket/prefix, "
        "file:///dir; gs:// needs gcsfs, s3:// s3fs); checked writable before any load",
    )
    # Parsed and evaluated by loadtests/run/slo_gate.py (grammar: loadtests/run_format/slo/, docs/guides/ci.md).
    option(
        "--slo",
        default="",
        metavar="CLAUSES",
        help="SLO gates checked at the end of the run, exit code 3 if one fails: comma-separated "
        "[MODEL_OR_ENDPOINT:]METRIC OP VALUE[UNIT], e.g. 'p99<50ms,bert_qa:p95<20ms,fail_ratio<0.01,"
        "infer_per_s>100'; metrics p50 p90 p95 p99 p99.9 max mean (us|ms|s), fail_ratio, failures, "
        "rps, infer_per_s, late_ratio, dropped; 'p99<50ms@95%%' judges a percentile on its 95 %% "
        "confidence interval (pass, fail or inconclusive); presets mlperf-resnet50, mlperf-bert",
    )
    option("--junit", default="", metavar="FILE", help="write --slo verdicts as JUnit XML (a testcase per clause)")
    # Judged at the end of the run by `python -m analysis compare --gate` (loadtests/run/baseline_gate.py).
    option(
        "--baseline",
        default="",
        metavar="DIR_OR_URL",
        help="a run directory (or the URL --upload wrote) this run is gated against with --gate",
    )
    option(
        "--gate",
        default="",
        metavar="CLAUSES",
        help="exit code 3 when this run regressed against --baseline beyond noise: clauses relative to "
        "the baseline, e.g. 'p99<+10%%,throughput>-5%%,fail_ratio<+0.5%%' (docs/guides/ci.md)",
    )
    option(
        "--window",
        type=float,
        default=DEFAULT_WINDOW_S,
        metavar="SECONDS",
        help="length of the time windows that timeseries.csv and the HDR logs are cut into",
    )
    option(
        "--prometheus-port",
        type=int,
        default=0,
        metavar="PORT",
        help="serve the load generator's own metrics at http://HOST:PORT/metrics (master only; 0: off)",
    )
    option(
        "--prometheus-host",
        default=DEFAULT_PROMETHEUS_HOST,
        metavar="HOST",
        help="address for --prometheus-port (0.0.0.0 to let a Prometheus in the cluster scrape it)",
    )
    option(
        "--server-stats-interval",
        type=float,
        default=DEFAULT_SERVER_POLL_S,
        metavar="SECONDS",
        help="how often Triton's statistics and Prometheus metrics are read during a run",
    )
    option(
        "--traffic",
        default=CLOSED_LOOP,
        choices=TRAFFIC_MODES,
        help="closed: each user sends its next request when the last one returns; constant|poisson|gamma: "
        "open loop, requests sent on a schedule at --rate (fixed, exponential or gamma gaps), latency "
        "measured from each request's intended send time",
    )
    option(
        "--burstiness",
        type=float,
        default=None,
        metavar="CV",
        help="--traffic gamma: coefficient of variation of the gaps between requests (1 = Poisson, "
        "3 = bursts and lulls, 0.5 = more regular); the mean rate stays --rate",
    )
    option(
        "--rate",
        type=float,
        default=0.0,
        metavar="REQ_PER_S",
        help="open-loop target rate in requests/s, in total across all workers (each takes its share)",
    )
    option(
        "--max-in-flight",
        type=int,
        default=DEFAULT_MAX_IN_FLIGHT,
        metavar="N",
        help="open loop: most requests in flight per worker; at the cap the next request waits (late)",
    )
    option(
        "--drop-when-saturated",
        action="store_true",
        default=False,
        help="open loop: at the --max-in-flight cap, drop a due request (counted) instead of sending it late",
    )
    # --load-shape and --shape-args (loadtests/options/shapes.py)
    add_shape_arguments(parser)


def apply_form(options: argparse.Namespace, form: Mapping[str, str]) -> None:
    """The web UI form's option values onto the parsed options, converted as Locust's /swarm
    does (to the type of the current value); raises SpecError for a value of the wrong type."""
    for key, value in form.items():
        if key in LOCUST_FORM_FIELDS or not hasattr(options, key):
            continue
        current = getattr(options, key)
        if isinstance(current, bool):
            setattr(options, key, value == "true")
        elif current is None or isinstance(current, str):
            setattr(options, key, value)
        elif isinstance(current, list):  # a repeatable option (--header): Locust splits at commas
            setattr(options, key, value.split(","))
        elif isinstance(current, int | float):
            try:
                setattr(options, key, type(current)(value))
            except ValueError:
                raise SpecError(f"--{key.replace('_', '-')} '{value}' is not a {type(current).__name__}") from None
