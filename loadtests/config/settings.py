"""The one frozen `Settings` object: every option a run reads, the suite's and Locust's.

Built once per test by `loadtests.options.reading.settings_from(parsed_options)` (which parses and
checks every value), then handed to whoever needs it: nothing else in the suite reads
Locust's `parsed_options`. A base-layer module: it imports nothing of the suite but the
value types its fields hold (`loadtests.config.batch_size`), so any layer can take a Settings.

    settings = settings_from(environment.parsed_options)
    settings.batch_size.sizes, settings.open_loop, settings.slo
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loadtests.config.addresses import TritonTarget
from loadtests.config.batch_size import BatchSizeSpec, parse_batch_size
from loadtests.config.mix import ModelMix
from loadtests.config.security import ConnectionSecurity
from loadtests.config.trace_sample import TraceSample

DEFAULT_TRITON_HTTP = "127.0.0.1:8000"
DEFAULT_TRITON_GRPC = "127.0.0.1:8001"
DEFAULT_TRITON_METRICS = "127.0.0.1:8002"
DEFAULT_HTTP_TARGET = TritonTarget.parse("--triton-http", DEFAULT_TRITON_HTTP, "http")
DEFAULT_GRPC_TARGET = TritonTarget.parse("--triton-grpc", DEFAULT_TRITON_GRPC, "grpc")
DEFAULT_METRICS_TARGET = TritonTarget.parse("--triton-metrics", DEFAULT_TRITON_METRICS, "http")
DEFAULT_BERT_MODEL = "bert_qa_dynbatch"
DEFAULT_RESNET_MODEL = "resnet50"
# --image-format: ResNet users send preprocessed tensors (tensor), or the JPEG (jpeg) or PNG (png)
# files of --image-dir as they are, to a model that decodes them on the server (by default the
# demo ensemble, which decodes either).
IMAGE_TENSOR = "tensor"
IMAGE_JPEG = "jpeg"
IMAGE_PNG = "png"
ENCODED_IMAGE_FORMATS = (IMAGE_JPEG, IMAGE_PNG)
IMAGE_FORMATS = (IMAGE_TENSOR, *ENCODED_IMAGE_FORMATS)
DEFAULT_RESNET_JPEG_MODEL = "resnet50_jpeg"
DEFAULT_SEQ_LEN = "384"
# Requests per sequence of the sequence users (perf_analyzer's --sequence-length default).
DEFAULT_SEQUENCE_LENGTH = "20"
DEFAULT_DOC_STRIDE = 128
DEFAULT_REQUEST_TIMEOUT_S = 30.0
DATA_MODES = ("random", "zero")
DEFAULT_WINDOW_S = 1.0
DEFAULT_SERVER_POLL_S = 5.0
DEFAULT_PROMETHEUS_HOST = "127.0.0.1"
# Per worker: enough for a few hundred requests/s at tens of ms each, small enough
# that a stalled server cannot make one worker open thousands of connections.
DEFAULT_MAX_IN_FLIGHT = 64
# perf_analyzer's gRPC client puts up to 6 of its contexts on one channel (one TCP connection).
DEFAULT_GRPC_CONNECTIONS = "6"
CLOSED_LOOP = "closed"
OPEN_LOOP_MODES = ("constant", "poisson", "gamma")
OPEN_LOOP_HINT = "--traffic " + "|".join(OPEN_LOOP_MODES)
TRAFFIC_MODES = (CLOSED_LOOP, *OPEN_LOOP_MODES)
# --balance: how requests spread over several Triton replicas (loadtests/clients/replicas.py).
ROUND_ROBIN = "round-robin"
PIN_USER = "pin-user"
BALANCE_POLICIES = (ROUND_ROBIN, PIN_USER)
NO_SHAPE = "none"


@dataclass(frozen=True)
class Settings:
    """Everything a run needs from the options, validated once.

    Example: Settings(model="identity", batch_size=parse_batch_size("1-8")).open_loop is False
    """

    # -- the target and the requests
    # --triton-http/--triton-grpc/--triton-metrics, parsed (scheme, replicas, re-resolution).
    triton_http: TritonTarget = DEFAULT_HTTP_TARGET
    triton_grpc: TritonTarget = DEFAULT_GRPC_TARGET
    triton_metrics: TritonTarget = DEFAULT_METRICS_TARGET
    # TLS files and --header values (resolved) for every connection to Triton.
    security: ConnectionSecurity = field(default_factory=ConnectionSecurity)
    model: str = ""
    bert_model: str = ""
    resnet_model: str = ""
    mix: ModelMix | None = None  # --mix: the generic users' models and weights (instead of --model)
    batch_size: BatchSizeSpec = field(default_factory=lambda: parse_batch_size("1"))
    # Sequence users: requests per sequence, drawn per sequence (the --batch-size SPEC grammar).
    sequence_length: BatchSizeSpec = field(
        default_factory=lambda: BatchSizeSpec.parse(DEFAULT_SEQUENCE_LENGTH, "--sequence-length")
    )
    seq_len: int | None = 384  # None: 'variable'
    doc_stride: int = DEFAULT_DOC_STRIDE
    vocab: Path | None = None
    input_map: dict[str, str] = field(default_factory=dict)
    image_dir: Path | None = None
    image_format: str = IMAGE_TENSOR
    shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    input_data: tuple[Path, ...] = ()
    data_mode: str = "random"
    http_json: bool = False
    request_timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S
    validate_responses: bool = False
    grpc_users_per_connection: int = int(DEFAULT_GRPC_CONNECTIONS)  # 1: per user, 0: per process
    balance: str = ROUND_ROBIN  # over the replicas of a --triton-http/--triton-grpc list or DNS name
    # -- recording and outputs
    run_dir: Path | None = None
    upload: str = ""  # --upload URL: where the finished run directory is copied ("" none)
    window_s: float = DEFAULT_WINDOW_S
    server_poll_s: float = DEFAULT_SERVER_POLL_S
    slo: str = ""  # the --slo clauses as given (parsed by loadtests/run/slo_gate.py)
    junit: str = ""
    baseline: str = ""  # --baseline DIR_OR_URL, and --gate's clauses as given (loadtests/run/baseline_gate.py)
    gate: str = ""
    # --trace-sample: Triton traces this share of the requests, joined to the client's timing.
    trace_sample: TraceSample | None = None
    trace_file: Path | None = None  # --trace-file: where Triton's trace file is readable here
    trace_receiver: str = ""  # --trace-receiver HOST:PORT: the suite's OTLP/HTTP receiver ("" none)
    prometheus_host: str = DEFAULT_PROMETHEUS_HOST
    prometheus_port: int = 0  # 0: no exporter
    csv_prefix: str = ""  # Locust's --csv
    json_file: str = ""  # Locust's --json-file (its save resets Locust's per-endpoint stats)
    json_stdout: bool = False  # Locust's --json (its print resets them too)
    # -- traffic
    traffic: str = CLOSED_LOOP
    rate: float = 0.0
    max_in_flight: int = DEFAULT_MAX_IN_FLIGHT
    drop_when_saturated: bool = False
    burstiness: float | None = None  # --traffic gamma only: the gaps' coefficient of variation
    load_shape: str = NO_SHAPE
    shape_args: str = ""
    # -- Locust's own run options
    num_users: int | None = None
    spawn_rate: float | None = None
    run_time_s: float | None = None
    stop_timeout_s: float = 0.0  # 0: not given (the suite's stop grace then follows the run)
    headless: bool = False
    autostart: bool = False
    user_classes: tuple[str, ...] = ()  # the classes named on the command line (none: all of the locustfile's)
    # --user-class: what a test started from the web UI runs when no class is named (run/webui.py).
    user_class: str = ""
    # Every option as given, JSON-friendly (config.json's "options"); not compared.
    as_given: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def open_loop(self) -> bool:
        return self.traffic != CLOSED_LOOP

    @property
    def starts_at_once(self) -> bool:
        """Headless or --autostart: the test starts without the web UI's form."""
        return self.headless or self.autostart
