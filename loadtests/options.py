"""The suite's Locust options (a declarative table), and `settings_from`, which builds the
one frozen `Settings` (loadtests/settings.py) from them.

Every option has help text and a LOCUST_-prefixed environment variable, so it works
from the command line, `locust.conf`, the environment and the web UI, and reaches
distributed workers in the master's spawn message (at test_start, not at init). This is
the only module that reads Locust's `parsed_options`.

    locust -f locustfile.py --headless -u 4 -t 30s BertQAGrpcUser \\
        --triton-grpc 127.0.0.1:8001 --batch-size 1:0.7,8:0.3 --validate-responses
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from loadtests.addresses import check_address
from loadtests.errors import SpecError
from loadtests.settings import (
    CLOSED_LOOP,
    DATA_MODES,
    DEFAULT_BERT_MODEL,
    DEFAULT_DOC_STRIDE,
    DEFAULT_GRPC_CONNECTIONS,
    DEFAULT_MAX_IN_FLIGHT,
    DEFAULT_PROMETHEUS_HOST,
    DEFAULT_REQUEST_TIMEOUT_S,
    DEFAULT_RESNET_MODEL,
    DEFAULT_SEQ_LEN,
    DEFAULT_SERVER_POLL_S,
    DEFAULT_TRITON_GRPC,
    DEFAULT_TRITON_HTTP,
    DEFAULT_TRITON_METRICS,
    DEFAULT_WINDOW_S,
    NO_SHAPE,
    OPEN_LOOP_HINT,
    TRAFFIC_MODES,
    Settings,
)
from loadtests.traffic.arguments import add_arguments as add_shape_arguments
from loadtests.workloads import parse_batch_size, parse_input_map, parse_shape_overrides

# Locust binds its web UI (no authentication) and the master's ZeroMQ port on every
# interface. The suite binds both to loopback unless told otherwise: enough locally and
# behind `kubectl port-forward`; a Service, an Ingress or workers on other machines need
# --web-host 0.0.0.0 / --master-bind-host 0.0.0.0 (docs/web-ui.md).
LOOPBACK = "127.0.0.1"
GRPC_CONNECTION_POLICIES = MappingProxyType({"per-user": 1, "per-process": 0})


def parse_grpc_connections(text: str) -> int:
    """--grpc-connections as users per connection: per-user -> 1, per-process -> 0 (all), N -> N."""
    if text in GRPC_CONNECTION_POLICIES:
        return GRPC_CONNECTION_POLICIES[text]
    if text.isdigit() and int(text) > 0:
        return int(text)
    raise SpecError(f"--grpc-connections '{text}' is not per-user, per-process or a positive number of users")


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


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register the suite's options on Locust's parser (init_command_line_parser)."""

    def option(name: str, **kwargs) -> None:
        env = "LOCUST_" + name.lstrip("-").upper().replace("-", "_")
        kwargs["help"] = f"{kwargs['help']} [env {env}]"
        # Directly on the parser, not in an argument group: Locust's web UI form lists only
        # arguments added this way (locust/argument_parser.py, ui_extra_args_dict).
        parser.add_argument(name, env_var=env, **kwargs)

    option("--triton-http", default=DEFAULT_TRITON_HTTP, metavar="HOST:PORT", help="Triton HTTP endpoint")
    option("--triton-grpc", default=DEFAULT_TRITON_GRPC, metavar="HOST:PORT", help="Triton gRPC endpoint")
    option("--triton-metrics", default=DEFAULT_TRITON_METRICS, metavar="HOST:PORT", help="Triton Prometheus endpoint")
    option(
        "--model",
        default="",
        help="model for the selected user classes; with several classes, the generic Triton*User model",
    )
    option("--bert-model", default="", help=f"BERT-QA model when classes are mixed (default {DEFAULT_BERT_MODEL})")
    option("--resnet-model", default="", help=f"ResNet model when classes are mixed (default {DEFAULT_RESNET_MODEL})")
    option(
        "--batch-size",
        default="1",
        metavar="SPEC",
        help="batch size per request: 8 | 1,2,4,8 (choice) | 1-16 (range) | 1:0.7,8:0.3 (weighted)",
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
        "--shape",
        default="",
        metavar="NAME:D1,D2",
        help="shape of a variable-size input for generic users (space-separated for several)",
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
    option("--run-dir", default="", metavar="DIR", help="run directory (default runs/<UTC time>-<name>)")
    # Parsed and evaluated by loadtests/slo_gate.py (grammar: loadtests/run_format/slo/, docs/ci.md).
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
    # --load-shape and --shape-args (loadtests/traffic/arguments.py)
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
        elif isinstance(current, int | float):
            try:
                setattr(options, key, type(current)(value))
            except ValueError:
                raise SpecError(f"--{key.replace('_', '-')} '{value}' is not a {type(current).__name__}") from None


def settings_from(options: argparse.Namespace | None) -> Settings:
    """Parse and check every option into the one Settings; raises SpecError naming the bad one.

    Example: settings_from(environment.parsed_options).window_s
    """
    if options is None:
        return Settings()
    return Settings(
        **_target(options),
        **_recording(options),
        **_traffic(options),
        **_locust_run(options),
        as_given=_jsonable(options),
    )


def _text(options: argparse.Namespace, name: str) -> str:
    value = getattr(options, name, "")
    return str(value).strip() if value is not None else ""


def _given(options: argparse.Namespace, name: str, default: str) -> str:
    """The option as given; `default` only when it is absent (`--batch-size ""` is an error, not 1)."""
    return _text(options, name) if getattr(options, name, None) is not None else default


def _path(options: argparse.Namespace, name: str) -> Path | None:
    text = _text(options, name)
    return Path(text) if text else None


def _target(options: argparse.Namespace) -> dict[str, Any]:
    """Where the requests go and what they hold."""
    seq_len_text = _given(options, "seq_len", DEFAULT_SEQ_LEN)
    if seq_len_text == "variable":
        seq_len = None
    elif seq_len_text.isdigit() and int(seq_len_text) > 0:
        seq_len = int(seq_len_text)
    else:
        raise SpecError(f"--seq-len '{seq_len_text}' is not a positive integer or 'variable'")
    timeout = float(getattr(options, "request_timeout", DEFAULT_REQUEST_TIMEOUT_S))
    if not (math.isfinite(timeout) and timeout > 0):
        raise SpecError(f"--request-timeout must be positive, got {timeout}")
    data_mode = _text(options, "data_mode") or "random"
    if data_mode not in DATA_MODES:
        raise SpecError(f"--data-mode '{data_mode}' is not one of {', '.join(DATA_MODES)}")
    input_data, data_mode = _input_data(getattr(options, "input_data", None), data_mode)
    return {
        "triton_http": check_address("--triton-http", _text(options, "triton_http") or DEFAULT_TRITON_HTTP),
        "triton_grpc": check_address("--triton-grpc", _text(options, "triton_grpc") or DEFAULT_TRITON_GRPC),
        "triton_metrics": check_address("--triton-metrics", _text(options, "triton_metrics") or DEFAULT_TRITON_METRICS),
        "model": _text(options, "model"),
        "bert_model": _text(options, "bert_model"),
        "resnet_model": _text(options, "resnet_model"),
        "batch_size": parse_batch_size(_given(options, "batch_size", "1")),
        "seq_len": seq_len,
        "doc_stride": int(getattr(options, "doc_stride", DEFAULT_DOC_STRIDE)),
        "vocab": _path(options, "vocab"),
        "input_map": parse_input_map(_text(options, "input_map") or None),
        "image_dir": _path(options, "image_dir"),
        "shapes": parse_shape_overrides(_text(options, "shape") or None),
        "input_data": input_data,
        "data_mode": data_mode,
        "http_json": bool(getattr(options, "http_json", False)),
        "request_timeout_s": timeout,
        "validate_responses": bool(getattr(options, "validate_responses", False)),
        "grpc_users_per_connection": parse_grpc_connections(
            _given(options, "grpc_connections", DEFAULT_GRPC_CONNECTIONS)
        ),
    }


def _input_data(value: str | list[str] | None, data_mode: str) -> tuple[tuple[Path, ...], str]:
    """perf_analyzer's --input-data: JSON files (repeatable), or its spellings of the data
    modes, `zero` and `random`. The web UI gives one string: several files are separated
    by commas there, as Locust's form does for its own list options."""
    items = value.split(",") if isinstance(value, str) else list(value or [])
    items = [str(item).strip() for item in items if str(item).strip()]
    modes = [item for item in items if item in DATA_MODES]
    if not modes:
        return tuple(Path(item) for item in items), data_mode
    if len(items) > 1:
        raise SpecError(
            f"--input-data {' '.join(items)}: give either JSON files or one of {', '.join(DATA_MODES)}, not both"
        )
    return (), modes[0]


def _recording(options: argparse.Namespace) -> dict[str, Any]:
    """Windows, polling and the run's outputs (SLO text is parsed by loadtests/slo_gate.py)."""
    window_s = float(getattr(options, "window", DEFAULT_WINDOW_S))
    server_poll_s = float(getattr(options, "server_stats_interval", DEFAULT_SERVER_POLL_S))
    if not all(math.isfinite(s) and s > 0 for s in (window_s, server_poll_s)):
        raise SpecError("--window and --server-stats-interval must be positive")
    return {
        "run_dir": _path(options, "run_dir"),
        "window_s": window_s,
        "server_poll_s": server_poll_s,
        "slo": _text(options, "slo"),
        "junit": _text(options, "junit"),
        "prometheus_host": _text(options, "prometheus_host") or DEFAULT_PROMETHEUS_HOST,
        "prometheus_port": int(getattr(options, "prometheus_port", 0) or 0),
        "csv_prefix": _text(options, "csv_prefix"),
    }


def _traffic(options: argparse.Namespace) -> dict[str, Any]:
    """Closed or open loop, the rate, and the load shape."""
    traffic = _text(options, "traffic") or CLOSED_LOOP
    rate = float(getattr(options, "rate", 0.0) or 0.0)
    max_in_flight = int(getattr(options, "max_in_flight", DEFAULT_MAX_IN_FLIGHT))
    if traffic not in TRAFFIC_MODES:
        raise SpecError(f"--traffic '{traffic}' is not one of {', '.join(TRAFFIC_MODES)}")
    if not math.isfinite(rate) or rate < 0:
        raise SpecError(f"--rate must be a finite number >= 0, got {rate}")
    if traffic == CLOSED_LOOP and rate:
        raise SpecError(f"--rate applies to open-loop traffic: add {OPEN_LOOP_HINT}")
    if max_in_flight < 1:
        raise SpecError(f"--max-in-flight must be at least 1, got {max_in_flight}")
    return {
        "traffic": traffic,
        "rate": rate,
        "max_in_flight": max_in_flight,
        "drop_when_saturated": bool(getattr(options, "drop_when_saturated", False)),
        "burstiness": _burstiness(options, traffic),
        "load_shape": _text(options, "load_shape") or NO_SHAPE,
        "shape_args": _text(options, "shape_args"),
    }


def _burstiness(options: argparse.Namespace, traffic: str) -> float | None:
    """--burstiness: required by --traffic gamma, refused with any other traffic."""
    value = getattr(options, "burstiness", None)
    if value is None or (isinstance(value, str) and not value.strip()):  # the web UI sends ""
        if traffic == "gamma":
            raise SpecError("--traffic gamma needs --burstiness CV (the gaps' coefficient of variation; 1 = Poisson)")
        return None
    if traffic != "gamma":
        raise SpecError(f"--burstiness applies to --traffic gamma, not --traffic {traffic}")
    try:
        burstiness = float(value)
    except ValueError:
        raise SpecError(f"--burstiness '{value}' is not a number") from None
    if not (math.isfinite(burstiness) and burstiness > 0):
        raise SpecError(f"--burstiness must be a finite number > 0, got {value}")
    return burstiness


def _locust_run(options: argparse.Namespace) -> dict[str, Any]:
    """Locust's own options the suite reads (already parsed by Locust: timespans in seconds)."""
    num_users = getattr(options, "num_users", None)
    spawn_rate = getattr(options, "spawn_rate", None)
    run_time = getattr(options, "run_time", None)
    return {
        "num_users": int(num_users) if num_users is not None else None,
        "spawn_rate": float(spawn_rate) if spawn_rate is not None else None,
        "run_time_s": float(run_time) if run_time else None,
        "stop_timeout_s": float(getattr(options, "stop_timeout", 0) or 0),
        "headless": bool(getattr(options, "headless", False)),
        "autostart": bool(getattr(options, "autostart", False)),
    }


def _jsonable(options: argparse.Namespace) -> dict[str, Any]:
    """Every option as given, for config.json."""
    out: dict[str, Any] = {}
    for key, value in sorted(vars(options).items()):
        if isinstance(value, str | int | float | bool) or value is None:
            out[key] = value
        elif isinstance(value, list | tuple):
            out[key] = [v if isinstance(v, str | int | float | bool) else str(v) for v in value]
        else:
            out[key] = str(value)
    return out
