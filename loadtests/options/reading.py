"""Locust's parsed options read into the one frozen `Settings` (loadtests/config/settings.py):
every option checked, a bad one raising SpecError that names it (exit 2 before any load).

    settings = settings_from(environment.parsed_options)
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

from loadtests.config.addresses import TritonTarget
from loadtests.config.batch_size import BatchSizeSpec
from loadtests.config.security import ConnectionSecurity, TlsFiles, parse_header, redact_header
from loadtests.config.settings import (
    BALANCE_POLICIES,
    CLOSED_LOOP,
    DATA_MODES,
    DEFAULT_DOC_STRIDE,
    DEFAULT_GRPC_CONNECTIONS,
    DEFAULT_MAX_IN_FLIGHT,
    DEFAULT_PROMETHEUS_HOST,
    DEFAULT_REQUEST_TIMEOUT_S,
    DEFAULT_SEQ_LEN,
    DEFAULT_SEQUENCE_LENGTH,
    DEFAULT_SERVER_POLL_S,
    DEFAULT_TRITON_GRPC,
    DEFAULT_TRITON_HTTP,
    DEFAULT_TRITON_METRICS,
    DEFAULT_WINDOW_S,
    IMAGE_FORMATS,
    IMAGE_TENSOR,
    NO_SHAPE,
    OPEN_LOOP_HINT,
    ROUND_ROBIN,
    TRAFFIC_MODES,
    Settings,
)
from loadtests.config.trace_sample import TraceSample
from loadtests.errors import SpecError
from loadtests.run_format.files import SUMMARY_JSON
from loadtests.run_format.slo.relative import GateError, parse_gate
from loadtests.run_format.storage import is_url
from loadtests.workloads import parse_batch_size, parse_input_map, parse_shape_overrides
from loadtests.workloads.mix import parse_mix

GRPC_CONNECTION_POLICIES = MappingProxyType({"per-user": 1, "per-process": 0})


def parse_grpc_connections(text: str) -> int:
    """--grpc-connections as users per connection: per-user -> 1, per-process -> 0 (all), N -> N."""
    if text in GRPC_CONNECTION_POLICIES:
        return GRPC_CONNECTION_POLICIES[text]
    if text.isdigit() and int(text) > 0:
        return int(text)
    raise SpecError(f"--grpc-connections '{text}' is not per-user, per-process or a positive number of users")


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
    mix = parse_mix(_text(options, "mix"))
    if mix is not None and _text(options, "model"):
        raise SpecError("--mix and --model both name the generic users' models: give one of them")
    http = _triton_http(options)
    grpc = TritonTarget.parse("--triton-grpc", _text(options, "triton_grpc") or DEFAULT_TRITON_GRPC, "grpc")
    return {
        "triton_http": http,
        "triton_grpc": grpc,
        "triton_metrics": TritonTarget.parse(
            "--triton-metrics", _text(options, "triton_metrics") or DEFAULT_TRITON_METRICS, "http"
        ),
        "security": connection_security(options),
        "model": _text(options, "model"),
        "mix": mix,
        "bert_model": _text(options, "bert_model"),
        "resnet_model": _text(options, "resnet_model"),
        "batch_size": parse_batch_size(_given(options, "batch_size", "1")),
        "sequence_length": BatchSizeSpec.parse(
            _given(options, "sequence_length", DEFAULT_SEQUENCE_LENGTH), "--sequence-length"
        ),
        "seq_len": seq_len,
        "doc_stride": int(getattr(options, "doc_stride", DEFAULT_DOC_STRIDE)),
        "vocab": _path(options, "vocab"),
        "input_map": parse_input_map(_text(options, "input_map") or None),
        "image_dir": _path(options, "image_dir"),
        "image_format": _image_format(options),
        "shapes": parse_shape_overrides(_text(options, "shape") or None),
        "input_data": input_data,
        "data_mode": data_mode,
        "http_json": bool(getattr(options, "http_json", False)),
        "request_timeout_s": timeout,
        "validate_responses": bool(getattr(options, "validate_responses", False)),
        "grpc_users_per_connection": parse_grpc_connections(
            _given(options, "grpc_connections", DEFAULT_GRPC_CONNECTIONS)
        ),
        "balance": _balance(_text(options, "balance") or ROUND_ROBIN),
    }


def _triton_http(options: argparse.Namespace) -> TritonTarget:
    """--triton-http, or Locust's -H/--host as a Locust user gives it (http://HOST:PORT): the
    suite's users send to Triton's addresses, so -H is read as Triton's HTTP one."""
    given = _text(options, "triton_http") or DEFAULT_TRITON_HTTP
    http = TritonTarget.parse("--triton-http", given, "http")
    host = _text(options, "host").rstrip("/")
    if not host:
        return http
    from_host = TritonTarget.parse("-H", host, "http")
    if given != DEFAULT_TRITON_HTTP and from_host != http:
        raise SpecError(
            f"-H {host} and --triton-http {given} name different Triton addresses: give one of them "
            "(-H is read as --triton-http)"
        )
    return from_host


def _image_format(options: argparse.Namespace) -> str:
    value = _text(options, "image_format") or IMAGE_TENSOR
    if value not in IMAGE_FORMATS:
        raise SpecError(f"--image-format '{value}' is not one of {', '.join(IMAGE_FORMATS)}")
    return value


def _balance(text: str) -> str:
    if text not in BALANCE_POLICIES:
        raise SpecError(f"--balance '{text}' is not one of {', '.join(BALANCE_POLICIES)}")
    return text


def _header_texts(value: str | list[str] | None) -> list[str]:
    """--header as given: a list from the command line, one string from the environment or the web UI."""
    items = [value] if isinstance(value, str) else list(value or [])
    return [str(item).strip() for item in items if str(item).strip()]


def connection_security(options: argparse.Namespace) -> ConnectionSecurity:
    """--ssl-* and --header; files checked here, so a bad one stops the run before any load."""
    tls = TlsFiles(
        ca=_path(options, "ssl_ca"),
        cert=_path(options, "ssl_cert"),
        key=_path(options, "ssl_key"),
        insecure=bool(getattr(options, "ssl_insecure", False)),
    )
    security = ConnectionSecurity(
        tls, tuple(parse_header(text) for text in _header_texts(getattr(options, "header", None)))
    )
    if tls != TlsFiles():
        security.context()  # raises SpecError for an unreadable or malformed file
    return security


def connection_security_in(argv: Sequence[str]) -> ConnectionSecurity:
    """--ssl-* and --header among the Locust options a command passes on (capacity, tune): the
    command's own reads of Triton (a model's configuration, tune's loads) authenticate as its runs
    will. SpecError for a bad file or header."""
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    for name in ("--ssl-ca", "--ssl-cert", "--ssl-key"):
        parser.add_argument(name, default="")
    parser.add_argument("--ssl-insecure", action="store_true")
    parser.add_argument("--header", action="append")

    def refuse(message: str) -> None:
        raise SpecError(message)

    parser.error = refuse  # type: ignore[method-assign]
    known, _ = parser.parse_known_args(list(argv))
    return connection_security(known)


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
    """Windows, polling and the run's outputs (SLO text is parsed by loadtests/run/slo_gate.py)."""
    window_s = float(getattr(options, "window", DEFAULT_WINDOW_S))
    server_poll_s = float(getattr(options, "server_stats_interval", DEFAULT_SERVER_POLL_S))
    if not all(math.isfinite(s) and s > 0 for s in (window_s, server_poll_s)):
        raise SpecError("--window and --server-stats-interval must be positive")
    if _text(options, "trace_receiver") and not _text(options, "trace_sample"):
        raise SpecError("--trace-receiver receives traces for --trace-sample: give the share, e.g. --trace-sample 1%")
    return {
        "run_dir": _path(options, "run_dir"),
        "upload": _upload(_text(options, "upload")),
        "window_s": window_s,
        "server_poll_s": server_poll_s,
        "slo": _text(options, "slo"),
        "junit": _text(options, "junit"),
        **_baseline_gate(_text(options, "baseline"), _text(options, "gate")),
        "trace_sample": TraceSample.parse(_text(options, "trace_sample")) if _text(options, "trace_sample") else None,
        "trace_file": _path(options, "trace_file"),
        "trace_receiver": _text(options, "trace_receiver"),
        "prometheus_host": _text(options, "prometheus_host") or DEFAULT_PROMETHEUS_HOST,
        "prometheus_port": int(getattr(options, "prometheus_port", 0) or 0),
        "csv_prefix": _text(options, "csv_prefix"),
        "json_file": _text(options, "json_file"),
        "json_stdout": bool(getattr(options, "json", False)),
    }


def _baseline_gate(baseline: str, gate: str) -> dict[str, str]:
    """--baseline and --gate, both or neither; the clauses parsed and a local baseline read now,
    before any load (the comparison itself runs at the end, loadtests/run/baseline_gate.py)."""
    if bool(baseline) != bool(gate):
        given, missing = ("--baseline", "--gate") if baseline else ("--gate", "--baseline")
        raise SpecError(f"{given} needs {missing} (the clauses and the run they are relative to)")
    if gate:
        try:
            parse_gate(gate)
        except GateError as error:
            raise SpecError(str(error)) from None
        if not is_url(baseline) and not (Path(baseline) / SUMMARY_JSON).is_file():
            raise SpecError(f"--baseline {baseline}: no {SUMMARY_JSON} there (a finished run directory, or a URL)")
    return {"baseline": baseline, "gate": gate}


def _upload(url: str) -> str:
    """--upload: a URL (a local copy is --run-dir's job); its writability is checked in pre-flight."""
    if url and not is_url(url):
        raise SpecError(f"--upload {url} is not a URL (e.g. gs://bucket/runs, s3://bucket/runs, file:///srv/runs)")
    return url


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


# Where -t is kept once the suite times it (headless without a load shape: run/lifecycle.py):
# Locust's own `run_time` is then None, so that Locust sets no timer of its own.
SUITE_RUN_TIME = "triton_loadtest_run_time"


def take_run_time(options: argparse.Namespace) -> None:
    """-t handed from Locust to the suite; the settings and config.json read it as before."""
    setattr(options, SUITE_RUN_TIME, options.run_time)
    options.run_time = None


def give_back_run_time(options: argparse.Namespace) -> None:
    """-t back in Locust's options once its timer can no longer be set (the test has started):
    Locust reads it again as the run ends (--html's {t})."""
    options.run_time = getattr(options, SUITE_RUN_TIME, None) or options.run_time


def _run_time(options: argparse.Namespace) -> Any:
    return getattr(options, "run_time", None) or getattr(options, SUITE_RUN_TIME, None)


def _locust_run(options: argparse.Namespace) -> dict[str, Any]:
    """Locust's own options the suite reads (already parsed by Locust: timespans in seconds)."""
    num_users = getattr(options, "num_users", None)
    spawn_rate = getattr(options, "spawn_rate", None)
    run_time = _run_time(options)
    return {
        "num_users": int(num_users) if num_users is not None else None,
        "spawn_rate": float(spawn_rate) if spawn_rate is not None else None,
        "run_time_s": float(run_time) if run_time else None,
        "stop_timeout_s": float(getattr(options, "stop_timeout", 0) or 0),
        "headless": bool(getattr(options, "headless", False)),
        "autostart": bool(getattr(options, "autostart", False)),
        "user_classes": tuple(getattr(options, "user_classes", None) or ()),
        "user_class": _text(options, "user_class"),
    }


def _jsonable(options: argparse.Namespace) -> dict[str, Any]:
    """Every option as given, for config.json."""
    out: dict[str, Any] = {}
    for key, value in sorted(vars(options).items()):
        if key == SUITE_RUN_TIME:
            continue
        if key == "run_time":
            value = _run_time(options)
        if key == "header":  # a literal value may be a token: written as <redacted>
            value = [redact_header(text) for text in _header_texts(value)]
        if isinstance(value, str | int | float | bool) or value is None:
            out[key] = value
        elif isinstance(value, list | tuple):
            out[key] = [v if isinstance(v, str | int | float | bool) else str(v) for v in value]
        else:
            out[key] = str(value)
    return out
