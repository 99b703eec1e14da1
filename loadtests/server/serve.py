"""`python -m loadtests serve`: the local Triton on the demo models, until Ctrl-C or SIGTERM.

python -m loadtests serve                       # demo models, tiny preset, ports 8000-8002
python -m loadtests serve --preset full         # BERT-base and ResNet-50 dimensions
python -m loadtests serve --model-repository ~/my_models --include-demo
python -m loadtests serve --model-control explicit   # models load/unload through the API (tune)
python -m loadtests serve --latency-summaries   # Triton's latency quantiles on /metrics too
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path

from loadtests.errors import SpecError, StartupError
from loadtests.server.launcher import DEMO_REPOSITORY, LocalTriton, TritonPorts

DEFAULT_PORTS = TritonPorts(http=8000, grpc=8001, metrics=8002)
PRESETS = ("tiny", "full")
MODEL_CONTROL_MODES = ("none", "explicit")
LATENCY_SUMMARIES = "--metrics-config=summary_latencies=true"


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "serve",
        help="start the local Triton on the demo model repository",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--preset", choices=PRESETS, default="tiny", help="demo model size (default: tiny)")
    parser.add_argument(
        "--model-repository",
        action="append",
        type=Path,
        default=[],
        metavar="DIR",
        help="serve this model repository instead of the demo one (repeatable)",
    )
    parser.add_argument(
        "--include-demo", action="store_true", help="with --model-repository: serve the demo models as well"
    )
    parser.add_argument(
        "--model-control",
        choices=MODEL_CONTROL_MODES,
        default="none",
        help="explicit: Triton's --model-control-mode=explicit, so models can be loaded, reloaded with "
        "another config and unloaded through its repository API (python -m loadtests tune); default none",
    )
    parser.add_argument(
        "--load-model",
        action="append",
        default=[],
        metavar="NAME",
        help="with --model-control explicit: load this model at start (repeatable; default: every model)",
    )
    parser.add_argument(
        "--latency-summaries",
        action="store_true",
        help="Triton's own latency quantiles per model on /metrics (--metrics-config summary_latencies=true): "
        "the report's Triton's metrics; off by default, each scrape then reads about 3.5 times the series",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    parser.add_argument("--http-port", type=int, default=DEFAULT_PORTS.http, help="default: 8000")
    parser.add_argument("--grpc-port", type=int, default=DEFAULT_PORTS.grpc, help="default: 8001")
    parser.add_argument("--metrics-port", type=int, default=DEFAULT_PORTS.metrics, help="default: 8002")
    parser.add_argument(
        "--log-file", type=Path, default=Path("runs/triton.log"), help="Triton's log (default: runs/triton.log)"
    )
    parser.set_defaults(run=run)


def demo_environment(preset: str) -> dict[str, str]:
    """Build the demo weights if missing, and tell the demo models where they are; raises
    StartupError where there are no demo models (a pip-installed suite has no models/)."""
    if not DEMO_REPOSITORY.is_dir():
        raise StartupError(
            "the demo models are in the repository's models/ (a checkout, not the pip package): serve "
            "your own with --model-repository DIR, or run from a checkout"
        )
    from models.build import ensure_built  # onnx is only needed when the demo models are served

    return {"TRITON_LOADTEST_WEIGHTS_DIR": str(ensure_built(preset))}


def model_control_args(mode: str, load_models: list[str]) -> list[str]:
    """Triton's options for a model control mode. Explicit mode loads nothing at start unless
    told: `--load-model=*` (alone) loads every model, as the default mode does."""
    if mode == "none":
        if load_models:
            raise SpecError("--load-model needs --model-control explicit")
        return []
    if "*" in load_models and len(load_models) > 1:
        raise SpecError("--load-model '*' loads every model: give it alone")
    return ["--model-control-mode=explicit", *(f"--load-model={name}" for name in load_models or ["*"])]


def run(args: argparse.Namespace) -> int:
    control = model_control_args(args.model_control, args.load_model)
    summaries = [LATENCY_SUMMARIES] if args.latency_summaries else []
    repositories = list(args.model_repository)
    include_demo = args.include_demo or not repositories
    if include_demo:
        repositories.insert(0, DEMO_REPOSITORY)
    environment = demo_environment(args.preset) if include_demo else {}
    triton = LocalTriton(
        repositories,
        ports=TritonPorts(args.http_port, args.grpc_port, args.metrics_port),
        host=args.host,
        log_file=args.log_file,
        environment=environment,
        extra_args=control + summaries,
    )
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    triton.start()
    try:
        print(f"Triton is ready (log: {triton.log_file})", flush=True)
        print(f"  HTTP     {triton.http_url}", flush=True)
        print(f"  gRPC     {triton.grpc_url}", flush=True)
        print(f"  metrics  {triton.metrics_url}", flush=True)
        print(f"  traces   {triton.trace_file}.<n> (off until a run's --trace-sample)", flush=True)
        if control:
            print("  model control: explicit (load/unload through Triton's model repository API)", flush=True)
        print("Ctrl-C stops it.", flush=True)
        while not stop.wait(1.0):
            if triton.process is None or triton.process.poll() is not None:
                print("error: tritonserver exited unexpectedly; see " + str(triton.log_file), file=sys.stderr)
                return 1
        print("stopping Triton ...", flush=True)
        return 0
    finally:
        triton.stop()
