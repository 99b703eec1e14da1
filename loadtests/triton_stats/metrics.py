"""Triton's Prometheus metrics (/metrics on port 8002), scraped during a run.

A small parser of the Prometheus text exposition format (version 0.0.4) instead of a
dependency: HELP/TYPE and other comments, labels with escaped quotes, backslashes and
newlines, NaN/+Inf/-Inf values and optional millisecond timestamps.

We keep Triton's per-model counters and gauges (`nv_inference_*`) and its utilisation and
memory gauges where present. On this CPU-only machine Triton 2.51 exports `nv_inference_*`
(per model and version; `nv_inference_request_failure` also per reason), `nv_cpu_*` and
`nv_pinned_memory_pool_*` (not kept); no `nv_gpu_*` and no `nv_energy_consumption`: an
absent metric is simply absent, not an error.

Several replicas (`--triton-metrics A,B` or a name resolving to several): each scrape asks
every replica and labels its series `replica="HOST:PORT"` in server_metrics.csv (GPU
utilisation and memory per replica included); a replica that does not answer is an error
in `errors`, not a failed scrape of the others.
"""

from __future__ import annotations

import csv
import json
import string
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from loadtests.clients.control import DEFAULT_TIMEOUT_S, TritonControl, metrics_url
from loadtests.clients.replicas import ReplicaSet
from loadtests.config.addresses import TritonTarget
from loadtests.config.security import ConnectionSecurity
from loadtests.errors import ServerError
from loadtests.triton_stats.sampler import DEFAULT_INTERVAL_S, PeriodicSampler

KEPT_PREFIXES = (
    "nv_inference_",
    "nv_gpu_utilization",
    "nv_gpu_memory_used_bytes",
    "nv_gpu_memory_total_bytes",
    "nv_gpu_power_usage",
    "nv_cpu_utilization",
    "nv_cpu_memory_used_bytes",
    "nv_cpu_memory_total_bytes",
    "nv_energy_consumption",
)
CSV_HEADER = ("time_s", "metric", "labels", "value")

_LABEL_ESCAPES = {"\\": "\\", '"': '"', "n": "\n"}
_LABEL_CHARS = frozenset(string.ascii_letters + string.digits + "_")
_NAME_CHARS = _LABEL_CHARS | {":"}


@dataclass(frozen=True)
class Sample:
    """One series' value: nv_inference_count{model="resnet50",version="1"} 1234.

    Example:
        Sample("nv_inference_count", {"model": "resnet50", "version": "1"}, 1234.0)
    """

    name: str
    labels: dict[str, str]
    value: float
    timestamp_ms: int | None = None

    @property
    def labels_json(self) -> str:
        """Compact JSON with sorted keys: one spelling per label set, e.g. '{"model":"m","version":"1"}'."""
        return json.dumps(self.labels, sort_keys=True, separators=(",", ":"))


# -- parsing -----------------------------------------------------------------------------------
def parse(text: str) -> list[Sample]:
    """Every sample of a Prometheus text exposition, in order. A malformed line raises ValueError.

    Example:
        parse('# TYPE up gauge\\nup{job="triton"} 1 1700000000000\\n')
        # [Sample(name='up', labels={'job': 'triton'}, value=1.0, timestamp_ms=1700000000000)]
    """
    samples = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue  # HELP, TYPE and free comments carry no sample
        try:
            samples.append(_parse_sample(line))
        except ValueError as exc:
            raise ValueError(f"line {number}: {exc}: {raw!r}") from exc
    return samples


def _parse_sample(line: str) -> Sample:
    i = 0
    while i < len(line) and line[i] in _NAME_CHARS:
        i += 1
    name = line[:i]
    if not name or name[0].isdigit():
        raise ValueError("no metric name")
    labels: dict[str, str] = {}
    if i < len(line) and line[i] == "{":
        labels, i = _parse_labels(line, i + 1)
    rest = line[i:].split()
    if len(rest) not in (1, 2) or (i < len(line) and not line[i].isspace()):
        raise ValueError("expected a value and an optional timestamp")
    # float() reads Prometheus' NaN, +Inf and -Inf as they are spelt.
    value = float(rest[0])
    timestamp_ms = int(rest[1]) if len(rest) == 2 else None
    return Sample(name, labels, value, timestamp_ms)


def _parse_labels(line: str, i: int) -> tuple[dict[str, str], int]:
    """Labels from just after '{' to just after '}'. Values may hold ',', '}', '=' and escapes."""
    labels: dict[str, str] = {}
    while True:
        i = _skip_spaces(line, i)
        if i < len(line) and line[i] == "}":
            return labels, i + 1
        start = i
        while i < len(line) and line[i] in _LABEL_CHARS:
            i += 1
        label = line[start:i]
        i = _skip_spaces(line, i)
        if not label or not line.startswith("=", i):
            raise ValueError("malformed label")
        i = _skip_spaces(line, i + 1)
        if not line.startswith('"', i):
            raise ValueError("unquoted label value")
        value, i = _parse_quoted(line, i + 1)
        labels[label] = value
        i = _skip_spaces(line, i)
        if i < len(line) and line[i] == ",":
            i += 1  # a trailing comma before '}' is allowed
        elif not line.startswith("}", i):
            raise ValueError("expected ',' or '}' after a label")


def _parse_quoted(line: str, i: int) -> tuple[str, int]:
    out = []
    while i < len(line):
        char = line[i]
        if char == '"':
            return "".join(out), i + 1
        if char == "\\" and i + 1 < len(line):
            # Prometheus escapes \\, \" and \n; any other backslash is kept as written (Go's
            # parser rejects it; a scrape is better kept than lost over one odd label).
            escaped = line[i + 1]
            out.append(_LABEL_ESCAPES.get(escaped, "\\" + escaped))
            i += 2
            continue
        out.append(char)
        i += 1
    raise ValueError("unterminated label value")


def _skip_spaces(line: str, i: int) -> int:
    while i < len(line) and line[i] in " \t":
        i += 1
    return i


def kept(samples: Iterable[Sample], prefixes: tuple[str, ...] = KEPT_PREFIXES) -> list[Sample]:
    return [sample for sample in samples if sample.name.startswith(prefixes)]


def scrape(
    metrics_address: str,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    prefixes: tuple[str, ...] = KEPT_PREFIXES,
    security: ConnectionSecurity | None = None,
) -> list[Sample]:
    """Triton's metrics whose names start with one of `prefixes`. Raises ServerError if unreachable.

    Example:
        [s.value for s in scrape("localhost:8002") if s.name == "nv_inference_count"]  # [1234.0, ...]
    """
    text = TritonControl("", metrics_address, timeout_s, security).metrics_text()
    try:
        return kept(parse(text), prefixes)
    except ValueError as exc:
        raise ServerError(f"GET {metrics_url(metrics_address)}: not a Prometheus text exposition ({exc})") from exc


# -- polling -----------------------------------------------------------------------------------
class MetricsPoller:
    """Scrapes Triton's metrics every `interval_s` in a gevent greenlet; writes server_metrics.csv.

    With `csv_path`, each scrape's rows go straight to server_metrics.csv and nothing is kept:
    Triton exports about 13 kept series per loaded model, so a server with 40 models scraped
    every 2 s for 30 minutes is 470,000 rows, which held in memory grew the master by 160 MB
    (measured: bench/soak.py). Without it (tests, one-off use) rows are kept, about 200
    bytes each, until write_csv().

    Example:
        poller = MetricsPoller(settings.triton_metrics, interval_s=5.0)
        poller.start()
        ...  # the load
        poller.stop()
        poller.write_csv(run_dir / "server_metrics.csv")
    """

    def __init__(
        self,
        target: TritonTarget,
        interval_s: float = DEFAULT_INTERVAL_S,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        prefixes: tuple[str, ...] = KEPT_PREFIXES,
        clock: Callable[[], float] = time.time,
        before_tick: Callable[[], None] | None = None,
        csv_path: str | Path | None = None,
        security: ConnectionSecurity | None = None,
    ) -> None:
        self.target = target
        self.metrics_address = target.text  # https://: every replica speaks TLS
        self._replicas = ReplicaSet(target)
        self.security = security
        self.timeout_s = timeout_s
        self.prefixes = prefixes
        self.rows: list[tuple[float, str, str, float]] = []
        self.rows_written = 0
        self.csv_path = Path(csv_path) if csv_path is not None else None
        self._csv_file = None
        self._csv = None
        self._label_strings: dict[str, str] = {}
        self._sampler = PeriodicSampler(self._scrape, interval_s, clock, before_tick)

    def _scrape(self) -> None:
        if self._replicas.single:
            samples = scrape(self.metrics_address, self.timeout_s, self.prefixes, self.security)
        else:
            samples = self._scrape_replicas()
        now = self._sampler.clock()
        if self._csv is not None:
            self._csv.writerows((f"{now:.3f}", s.name, s.labels_json, _format_value(s.value)) for s in samples)
            self._csv_file.flush()
            self.rows_written += len(samples)
            return
        for sample in samples:
            labels = sample.labels_json
            labels = self._label_strings.setdefault(labels, labels)  # one string object per label set
            self.rows.append((now, sample.name, labels, sample.value))

    def _scrape_replicas(self) -> list[Sample]:
        samples, errors = [], []
        addresses = self._replicas.current()
        for address in addresses:
            try:
                found = scrape(self.target.control_address_of(address), self.timeout_s, self.prefixes, self.security)
            except ServerError as error:
                errors.append(str(error))
                continue
            samples.extend(Sample(s.name, {**s.labels, "replica": address}, s.value, s.timestamp_ms) for s in found)
        if len(errors) == len(addresses):
            raise ServerError("; ".join(errors))
        for error in errors:
            self._sampler.record_error(error)
        return samples

    @property
    def interval_s(self) -> float:
        return self._sampler.interval_s

    @property
    def errors(self) -> list[dict]:
        """[{"time_s": ..., "error": "GET http://...: ..."}] for every scrape that failed."""
        return self._sampler.errors

    @property
    def running(self) -> bool:
        return self._sampler.running

    def start(self) -> None:
        """Scrapes now and starts the periodic greenlet (opening csv_path first, if given)."""
        if self.csv_path is not None:
            self._csv_file = open(self.csv_path, "w", newline="", encoding="utf-8")  # noqa: SIM115
            self._csv = csv.writer(self._csv_file)
            self._csv.writerow(CSV_HEADER)
        self._sampler.start()

    def stop(self) -> None:
        """Stops the greenlet and scrapes a last time."""
        self._sampler.stop()

    def write_csv(self, path: str | Path) -> Path:
        """server_metrics.csv: time_s,metric,labels,value, one row per series per scrape.
        A poller that streamed to this path only closes it."""
        path = Path(path)
        if self._csv_file is not None and path == self.csv_path:
            self._csv_file.close()
            self._csv_file = self._csv = None
            return path
        with open(path, "w", newline="", encoding="utf-8") as f:
            writer = csv.writer(f)
            writer.writerow(CSV_HEADER)
            for time_s, name, labels, value in self.rows:
                writer.writerow((f"{time_s:.3f}", name, labels, _format_value(value)))
        return path


def _format_value(value: float) -> str:
    # Counters are integers: write 1234, not 1234.0; NaN and infinities as 'nan', 'inf', '-inf',
    # which float() and pandas read back.
    if value.is_integer() and abs(value) < 2**53:
        return str(int(value))
    return repr(value)
