"""The suite's options grouped by task, with written labels: what `python -m loadtests options`
prints and the order and labels of the web UI's form (loadtests/run/webui.py).

Locust prints `--help` before it loads a locustfile, so `locust -f locustfile.py --help`
never shows these; this listing is where a person reads them.

    python -m loadtests options            # every option: group, default, LOCUST_ variable, help
"""

from __future__ import annotations

import argparse
import textwrap

# (group, what it is for, ((dest, written label), ...)); every option of loadtests/options/table.py once.
# Workload first: which class and model is a newcomer's first choice (the web form's first fields),
# Triton's addresses next (their defaults fit `python -m loadtests serve`).
GROUPS: tuple[tuple[str, str, tuple[tuple[str, str], ...]], ...] = (
    (
        "Workload",
        "which model and what each request holds",
        (
            ("user_class", "Workload (user class)"),
            ("model", "Model"),
            ("mix", "Model mix"),
            ("batch_size", "Batch size (SPEC)"),
            ("shape", "Input shape"),
            ("input_data", "Input data (perf_analyzer JSON)"),
            ("data_mode", "Generated data"),
            ("http_json", "HTTP: send JSON tensors"),
            ("validate_responses", "Validate responses"),
            ("bert_model", "BERT-QA model (mixed classes)"),
            ("seq_len", "BERT sequence length"),
            ("doc_stride", "BERT document stride"),
            ("vocab", "BERT vocabulary file"),
            ("input_map", "BERT input names"),
            ("resnet_model", "ResNet model (mixed classes)"),
            ("image_dir", "ResNet image folder"),
            ("image_format", "ResNet image format"),
            ("sequence_length", "Sequence users: requests per sequence"),
        ),
    ),
    (
        "Target",
        "where the requests go and how they connect (Locust's -H http://HOST:PORT is read as --triton-http)",
        (
            ("triton_http", "Triton HTTP address"),
            ("triton_grpc", "Triton gRPC address"),
            ("triton_metrics", "Triton metrics address"),
            ("balance", "Several replicas: balance"),
            ("request_timeout", "Request timeout (s)"),
            ("grpc_connections", "gRPC connections"),
            ("header", "Extra header"),
            ("ssl_ca", "TLS: CA bundle"),
            ("ssl_cert", "TLS: client certificate"),
            ("ssl_key", "TLS: client key"),
            ("ssl_insecure", "TLS: accept any certificate (testing only)"),
        ),
    ),
    (
        "Traffic",
        "closed or open loop, the rate, a load shape over time",
        (
            ("traffic", "Traffic"),
            ("rate", "Open loop: rate (req/s)"),
            ("burstiness", "Gamma traffic: burstiness"),
            ("max_in_flight", "Open loop: most in flight"),
            ("drop_when_saturated", "Open loop: drop when saturated"),
            ("load_shape", "Load shape"),
            ("shape_args", "Load shape arguments"),
        ),
    ),
    (
        "Measurement and outputs",
        "the run directory, its windows, Triton's statistics, exports",
        (
            ("run_dir", "Run directory"),
            ("window", "Window length (s)"),
            ("server_stats_interval", "Triton statistics interval (s)"),
            ("upload", "Upload the run directory to"),
            ("prometheus_port", "Own metrics: port"),
            ("prometheus_host", "Own metrics: address"),
            ("trace_sample", "Trace this share of requests in Triton"),
            ("trace_file", "Triton's trace file, as readable here"),
            ("trace_receiver", "Receive Triton's OpenTelemetry traces on"),
        ),
    ),
    (
        "Gates",
        "pass or fail the run (exit code 3): docs/guides/ci.md",
        (
            ("slo", "SLO clauses"),
            ("junit", "JUnit XML file"),
            ("baseline", "Baseline run (directory or URL)"),
            ("gate", "Regression gate against the baseline"),
        ),
    ),
)

# Locust's own options whose defaults the suite changes, or that a distributed run needs.
DISTRIBUTED = (
    ("--processes N", "workers on this machine (-1: one per core)"),
    (
        "--master / --worker --master-host HOST",
        "workers on other machines (README: Distributed, on Kubernetes; docs/guides/gke.md)",
    ),
    ("--master-bind-host", "the suite's default 127.0.0.1 (Locust's help says *): 0.0.0.0 for remote workers"),
    ("--web-host", "the suite's default 127.0.0.1 (Locust's help says *): 0.0.0.0 behind a Service"),
    ("--expect-workers N", "with --headless: wait for N workers before the load"),
)


def labels() -> dict[str, str]:
    """The written label of every option, by dest (the web form's)."""
    return {dest: label for _group, _about, options in GROUPS for dest, label in options}


def form_order() -> list[tuple[str, str]]:
    """(dest, group) in the listing's order: the web form's order, each group named at its first field."""
    return [(dest, group) for group, _about, options in GROUPS for dest, _label in options]


def _default(action: argparse.Action) -> str:
    if action.default is None or action.default is False:
        return "off"
    return str(action.default) if action.default != "" else "none"


def _spelling(action: argparse.Action) -> str:
    if action.nargs == 0:  # a flag
        return action.option_strings[-1]
    value = action.metavar or ("|".join(map(str, action.choices)) if action.choices else "VALUE")
    return f"{action.option_strings[-1]} {value}"


def _help(action: argparse.Action) -> str:
    text = str(action.help or "").replace("%%", "%")
    return text.split(" [env ")[0]  # the variable has its own place


def listing(parser: argparse.ArgumentParser, width: int = 100) -> str:
    """Every option of `parser` that GROUPS names, grouped: spelling, default, variable, help."""
    actions = {action.dest: action for action in parser._actions if action.option_strings}
    lines = [
        "The suite's options for `locust -f locustfile.py`, by task. Each also works as its LOCUST_",
        "variable and in locust.conf (without the dashes). Locust's own options: locust --help.",
    ]
    for group, about, options in GROUPS:
        lines += ["", f"{group}: {about}"]
        for dest, _label in options:
            action = actions[dest]
            env = getattr(action, "env_var", "")
            lines.append(f"  {_spelling(action)}   [default {_default(action)}; {env}]")
            lines += textwrap.wrap(_help(action), width=width, initial_indent=" " * 6, subsequent_indent=" " * 6)
    lines += ["", "Distributed: Locust's own options that a distributed run uses"]
    for spelling, about in DISTRIBUTED:
        lines += [f"  {spelling}", f"      {about}"]
    return "\n".join(lines)
