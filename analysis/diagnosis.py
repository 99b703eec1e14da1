"""Diagnosis: what limited each model at each load level, and the next step that tests a fix.

Findings describe; these rules judge. Each rule is small and named, reads only the run's
own numbers (the level tables, Triton's statistics and configuration, its CPU samples, the
client's counts), and judges level by level, not on whole-run averages (a saturated step
hides in an average). A rule that fires gives its evidence (the numbers it rests on), why
(the mechanism, from how Triton schedules requests), and the command that tests the change.
A rule that cannot judge (no server statistics, no model configuration, too few requests)
says so instead of guessing. Every threshold is in `LIMITS`.

The rules, most urgent first:
    failures        requests refused as overload, lost to the network or rejected by the model; per
                    endpoint, named where a model has several
    generator       the load generator itself saturated (its CPU, or open-loop requests sent late)
    host            Triton's host CPU saturated: more instances or batching cannot add compute
    queue           most of the latency is queue, with one instance or no dynamic batching
    batching        dynamic batching on but batches far below the preferred size
    payload         most of the latency is serialising and moving a large payload
    plateau         throughput stopped growing while latency grew, or never got to the peak
                    concurrency (2 x max batch x instances, the user's documents' rule of thumb)
    compute         compute per request grew with the load while the batch size did not
    tail            (--trace-sample) one part of Triton's traces made the slowest requests slow
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, replace

import pandas as pd

from analysis.dataset import Dataset
from analysis.resources import busy_steps
from analysis.suggestions import RunCommands, concurrency_range
from loadtests.run_format.attribution import PART_LABELS
from loadtests.run_format.outcome import FAILURE_SHARE


@dataclass(frozen=True)
class Limits:
    min_requests: int = 100  # a level with fewer requests is not judged
    failure_share: float = FAILURE_SHARE  # failures worth a diagnosis (and an unhealthy outcome line)
    generator_core_share: float = 0.85  # the load generator's CPU, as a share of one core
    late_share: float = 0.01  # open-loop requests sent more than 1 ms late
    host_busy: float = 0.90  # Triton's nv_cpu_utilization over a step
    queue_share: float = 0.50  # queue time / mean latency
    batch_fill: float = 0.50  # executed batch / the size the batcher aims for
    payload_share: float = 1 / 3  # send/recv + network / mean latency, and the largest part of it
    large_payload_bytes: int = 100_000  # bytes per request
    plateau_growth: float = 0.10  # throughput growth below this counts as flat
    plateau_latency_growth: float = 0.20  # ... while the mean latency grew at least this much
    compute_growth: float = 0.50  # compute per request grew this much ...
    batch_growth: float = 0.20  # ... while the executed batch grew less than this


LIMITS = Limits()
RANKS = ("failures", "generator", "host", "queue", "batching", "payload", "plateau", "compute", "tail")
RULE_TITLES = {
    "failures": "Requests failed",
    "generator": "The load generator saturated",
    "host": "Triton's host CPU saturated",
    "queue": "Queue-bound",
    "batching": "Batches below the batcher's size",
    "payload": "Payload-bound",
    "plateau": "Throughput plateau",
    "compute": "Compute per request grew with load",
    "tail": "What made the slow requests slow",
}
# The tail rule: per part its traces can name, why it makes single requests slow and what to try.
TAIL_CAUSES = {
    "queue": (
        "The slowest requests waited in Triton's queue: behind other executions on a busy instance, or for "
        "the dynamic batcher's max_queue_delay_microseconds to expire when the batch did not fill.",
        "a shorter max_queue_delay_microseconds, or another instance, compared under the same latency target",
    ),
    "infer": (
        "The model's own execution was slow for these requests: work that depends on the input, or the "
        "instance's CPU or GPU taken by something else at that moment.",
        "check which inputs are slow (traces.csv has each request's id and time) and whether the host was busy",
    ),
    "compute_input": (
        "Copying these requests' inputs into the model took the time: large or many tensors.",
        "smaller inputs per request, or a model that takes them in their native layout",
    ),
    "compute_output": (
        "Collecting these requests' outputs took the time: large outputs.",
        "ask only for the outputs needed, or smaller ones",
    ),
    "receive": (
        "Triton took long to read these requests off the network: large bodies or a slow sender.",
        "a smaller payload (binary tensors, JPEG images) or gRPC",
    ),
    "send": (
        "Triton took long to write these responses: large responses or a client slow to read them.",
        "a smaller response, or a load generator with CPU to spare",
    ),
    "network_client": (
        "The time went outside Triton: on the network or in the load generator itself (a busy client "
        "process reads its responses late).",
        "more load-generator processes (--processes) or a client closer to Triton",
    ),
}


@dataclass(frozen=True)
class Diagnosis:
    rule: str
    model: str
    where: str  # "at step 4: 8 users", "over the whole run"
    evidence: str
    why: str
    next_step: str
    command: str  # the command that tests the next step ("" when none can)

    @property
    def rank(self) -> int:
        return RANKS.index(self.rule)


@dataclass(frozen=True)
class CannotJudge:
    rule: str
    model: str
    reason: str


@dataclass(frozen=True)
class ModelConfig:
    """What the rules read of a model's configuration (Triton's JSON in config.json)."""

    instances: int
    max_batch: int
    dynamic_batching: bool
    preferred: tuple[int, ...]
    queue_delay_us: int

    @classmethod
    def of(cls, config: dict) -> ModelConfig:
        batching = config.get("dynamic_batching")
        groups = config.get("instance_group") or [{"count": 1}]
        return cls(
            instances=sum(int(group.get("count", 1) or 1) for group in groups),
            max_batch=int(config.get("max_batch_size") or 0),
            dynamic_batching=batching is not None,
            preferred=tuple(int(size) for size in (batching or {}).get("preferred_batch_size") or ()),
            queue_delay_us=int((batching or {}).get("max_queue_delay_microseconds") or 0),
        )

    @property
    def batch_target(self) -> int:
        return max(self.preferred) if self.preferred else self.max_batch

    @property
    def peak_concurrency(self) -> int:
        """The user's documents' rule of thumb for the concurrency of peak throughput."""
        return 2 * max(self.max_batch, 1) * self.instances


@dataclass(frozen=True)
class ModelView:
    """One model's levels (its first endpoint's table; Triton's columns are per model) and what
    the run knows of it."""

    model: str
    endpoints: tuple[str, ...]
    frame: pd.DataFrame
    config: ModelConfig | None
    protocols: tuple[str, ...]
    run_options: dict
    commands: RunCommands  # what a suggested command repeats of the run (analysis/suggestions.py)


def diagnose(data: Dataset) -> list[Diagnosis | CannotJudge]:
    """Every rule on every model, diagnoses ranked most urgent first, then what could not be judged."""
    out: list[Diagnosis | CannotJudge] = []
    out += _failures(data)
    out += _generator(data)
    views = _views(data)
    host = _host(data, views) if data.run is not None else []
    out += host
    saturated = any(isinstance(item, Diagnosis) for item in host)
    for view in views:
        for rule in (_queue, _batching, _payload, _plateau, _compute):
            out += [_caveat(item) if saturated else item for item in rule(data, view)]
    out += _tail(data)
    return sorted(out, key=lambda item: (isinstance(item, CannotJudge), RANKS.index(item.rule)))


def _tail(data: Dataset) -> list[Diagnosis]:
    """--trace-sample: per endpoint, the part that made the traced tail slow (summary.json's
    traces, loadtests/run_format/attribution.py); nothing when no part stood out."""
    traces = data.run.traces if data.run is not None else {}
    out = []
    for name, block in sorted((traces.get("endpoints") or {}).items()):
        cause = block.get("cause")
        if cause is None:
            continue
        band, median = block["bands"][block["band"]], block["bands"]["median"]
        endpoint = data.run.endpoints.get(name)
        why, next_step = TAIL_CAUSES[cause]
        out.append(
            Diagnosis(
                "tail",
                endpoint.model if endpoint is not None else name,
                f"{name}, traced requests {block['band'].replace('_', ' ')}",
                f"{block['sentence']}: {_ms(band['part_mean_us'][cause])} of {PART_LABELS[cause]} against "
                f"{_ms(median['part_mean_us'][cause])} in the median request, the largest extra time in "
                f"{block['cause_requests']} of {band['requests']} requests",
                why,
                next_step,
                "",
            )
        )
    return out


def _caveat(item: Diagnosis | CannotJudge) -> Diagnosis | CannotJudge:
    """Under a saturated host, a change that adds instances or batches cannot add compute."""
    if not isinstance(item, Diagnosis) or item.rule not in ("queue", "compute", "plateau", "batching"):
        return item
    caveat = " But Triton's host CPU was saturated (above): until it is not, this change cannot show its effect here."
    return replace(item, why=item.why + caveat)


def _views(data: Dataset) -> list[ModelView]:
    models = ((data.run.config.get("triton") or {}).get("models") or {}) if data.run is not None else {}
    options = (data.run.config.get("options") or {}) if data.run is not None else {}
    commands = _commands(data)
    # Endpoints by the model they load (a task's own name, "nap", says nothing of its model);
    # another user's requests (no model: a FastHttpUser's, say) have no Triton side to judge.
    endpoints = data.run.endpoints if data.run is not None else {}
    grouped: dict[str, list[str]] = {}
    for name in data.levels:
        endpoint = endpoints.get(name)
        model = endpoint.model if endpoint is not None else name.split(" [")[0]
        if model:
            grouped.setdefault(model, []).append(name)
    views = []
    for model, names in grouped.items():
        config = (models.get(model) or {}).get("config")
        protocols = tuple(
            sorted(
                {
                    endpoints[name].protocol if name in endpoints else name.split(" [")[1].rstrip("]")
                    for name in names
                    if name in endpoints or " [" in name
                }
            )
        )
        frame = data.levels[names[0]]
        config = ModelConfig.of(config) if config else None
        views.append(ModelView(model, tuple(names), frame, config, protocols, options, commands))
    return views


def _judged(frame: pd.DataFrame) -> pd.DataFrame:
    """The levels with enough successful requests to judge (failed ones time no model work)."""
    failures = frame["failures"].fillna(0) if "failures" in frame else 0
    return frame[frame["requests"] - failures >= LIMITS.min_requests]


def _too_few(rule: str, view: ModelView) -> list[CannotJudge]:
    frame = view.frame
    ok = (frame["requests"] - (frame["failures"].fillna(0) if "failures" in frame else 0)).max() if len(frame) else 0
    return [
        CannotJudge(
            rule, view.model, f"too few successful requests ({int(ok)} at most per level; {LIMITS.min_requests} needed)"
        )
    ]


def _has_server(frame: pd.DataFrame) -> bool:
    return "queue_us" in frame and frame["queue_us"].notna().any()


def _where(row, data: Dataset) -> str:
    if data.level_kind == "run":
        return "over the whole run"
    label = str(row["label"])
    return f"at {label}" if data.level_kind == "step" else f"at {data.level_kind.replace('_', ' ')} {label}"


def _ms(us: float) -> str:
    return f"{us / 1000:,.1f} ms"


def _in_flight(row) -> float:
    """Requests in flight at a level (Little's law: throughput x mean latency)."""
    return float(row["rps"]) * float(row["mean_us"]) / 1e6


def _slo_ms(row) -> str:
    return f"{max(1, math.ceil(float(row['p99_us']) / 1000))}ms"


def _commands(data: Dataset) -> RunCommands:
    return RunCommands.of(data.run.config if data.run is not None else None)


def _tune(view: ModelView, row, varies: list[str]) -> str:
    vary = [word for item in varies for word in ("--vary", item)]
    return view.commands.loadtests("tune", view.model, [*vary, "--slo", f"p99<{_slo_ms(row)}"], view.protocols)


# How a failure class's name starts (docs/reference/failures.md): what failed decides the cause.
# (A server error is the model failing a request it received: rejected, with the payload's
# check, not unreachable; "server stopping" is Triton shutting down.)
OVERLOAD_CLASSES = ("overloaded",)
UNREACHABLE_CLASSES = ("connection", "unavailable", "server stopping")
TIMEOUT_CLASSES = ("timeout",)
CUT_CLASSES = ("interrupted",)  # in flight when the stop grace ran out


def _failures(data: Dataset) -> list[Diagnosis]:
    """Per endpoint with failures above the share worth a diagnosis: the cause of its largest
    kind of failure (timeouts, overload, an unreachable server, rejected requests)."""
    out = []
    commands = _commands(data)
    models = [endpoint.model for endpoint in data.endpoints]
    for endpoint in data.endpoints:
        if not endpoint.requests or endpoint.failures / endpoint.requests < LIMITS.failure_share:
            continue
        by_class = endpoint.failures_by_class

        def count(prefixes: tuple[str, ...], by_class=by_class) -> int:
            return sum(n for name, n in by_class.items() if name.startswith(prefixes))

        kinds = {
            "timeout": count(TIMEOUT_CLASSES),
            "overload": count(OVERLOAD_CLASSES),
            "unreachable": count(UNREACHABLE_CLASSES),
            "cut": count(CUT_CLASSES),
        }
        kinds["rejected"] = endpoint.failures - sum(kinds.values())
        kind = max(kinds, key=lambda name: (kinds[name], -list(kinds).index(name)))
        evidence = ", ".join(f"{name} {n:,}" for name, n in sorted(by_class.items(), key=lambda kv: -kv[1])[:4])
        evidence = f"{endpoint.failures:,} of {endpoint.requests:,} requests failed ({evidence})"
        why, step, command = _FAILURE_CAUSES[kind](data, endpoint, commands)
        if kind == "timeout":
            evidence += "; " + _timeout_evidence(data, endpoint)
        where = "over the whole run" if models.count(endpoint.model) == 1 else f"{endpoint.name}, over the whole run"
        out.append(Diagnosis("failures", endpoint.model, where, evidence, why, step, command))
    return out


def _request_timeout_s(data: Dataset) -> float:
    options = (data.run.config.get("options") or {}) if data.run is not None else {}
    return float(options.get("request_timeout") or 30.0)


def _timeout_evidence(data: Dataset, endpoint) -> str:
    """The client's deadline beside the latency the server delivered (its own time per request)."""
    text = f"the client gave each request {_request_timeout_s(data) * 1000:,.0f} ms (--request-timeout)"
    server = (data.run.server or {}).get(endpoint.model, {}) if data.run is not None else {}
    if server.get("request_us"):
        text += f"; Triton spent {_ms(server['request_us'])} per request it answered"
    elif endpoint.latency_us.get("p50"):
        text += f"; the requests that succeeded took {_ms(endpoint.latency_us['p50'])} at p50"
    return text


def _timeout_cause(data: Dataset, endpoint, commands: RunCommands) -> tuple[str, str, str]:
    seconds = _request_timeout_s(data)
    server = (data.run.server or {}).get(endpoint.model, {}) if data.run is not None else {}
    served_us = float(server.get("request_us") or endpoint.latency_us.get("p99") or 0.0)
    longer = _round_up(max(2 * seconds, 4 * served_us / 1e6, 1.0))
    return (
        "The client gave up on the requests before Triton answered: the --request-timeout deadline was shorter "
        "than the time the server took. Triton still executes a request its client gave up on, so the timeouts "
        "add load while measuring nothing.",
        f"give the requests a deadline above what the server delivers (--request-timeout {longer:g}), or find the "
        "load it serves within the latency you need",
        commands.locust(["--request-timeout", f"{longer:g}"]),
    )


def _round_up(value: float) -> float:
    """The next 1, 2 or 5 times a power of ten at or above `value` (a deadline worth typing).

    >>> _round_up(5.37), _round_up(1.0), _round_up(0.012)
    (10, 1, 0.02)
    """
    power = 10 ** math.floor(math.log10(value))
    return next(round(step * power, 12) for step in (1, 2, 5, 10) if step * power >= value * (1 - 1e-9))


def _overload_cause(data: Dataset, endpoint, commands: RunCommands) -> tuple[str, str, str]:
    return (
        "Triton refused requests its queue could not hold or serve in time: the offered load is above what this "
        "configuration serves.",
        "find the highest rate it serves within the latency target",
        commands.loadtests("capacity", endpoint.model, ["--slo", "p99<100ms,fail_ratio<0.001"], (endpoint.protocol,)),
    )


def _unreachable_cause(data: Dataset, endpoint, commands: RunCommands) -> tuple[str, str, str]:
    return (
        "The requests did not reach a serving Triton (refused, reset, unavailable or stopping): an outage or a "
        "restart, not the model's speed. The report's faults say when.",
        "rerun once Triton is stable; every number of this run is read in the outage's light",
        "",
    )


# The users that send generated data to --model (loadtests/workloads/generic.py): random integers
# are drawn from [0, 100), which a model whose integers index a table (token, segment or class
# ids) may fail on, as a server error (the model failed) or an invalid request (it refused them).
GENERIC_CLASSES = ("TritonHttpUser", "TritonGrpcUser")
CONTENT_CLASSES = ("server error", "invalid request")
INTEGER_TYPES = ("INT8", "INT16", "INT32", "INT64", "UINT8", "UINT16", "UINT32", "UINT64")


def _random_integers_failed(data: Dataset, endpoint, commands: RunCommands, classes: list[str]) -> bool:
    """The endpoint's failures are mostly the model failing or refusing content, and that content was
    random integers a generic user generated for an integer input of the model."""
    options = commands.options
    given = [str(value) for value in options.get("input_data") or ()]  # files, or perf_analyzer's zero/random
    mode = next((value for value in given if value in ("zero", "random")), options.get("data_mode") or "random")
    generated = all(value in ("zero", "random") for value in given) and mode == "random"
    models = ((data.run.config.get("triton") or {}).get("models") or {}) if data.run is not None else {}
    inputs = ((models.get(endpoint.model) or {}).get("metadata") or {}).get("inputs") or []
    content = sum(n for name, n in endpoint.failures_by_class.items() if name.startswith(CONTENT_CLASSES))
    return (
        generated
        and any(name in GENERIC_CLASSES for name in classes)
        and options.get("model") == endpoint.model
        and any(tensor.get("datatype") in INTEGER_TYPES for tensor in inputs)
        and content * 2 > endpoint.failures
    )


def _rejected_cause(data: Dataset, endpoint, commands: RunCommands) -> tuple[str, str, str]:
    classes = [name for name in commands.user_classes if ("Grpc" in name) == (endpoint.protocol == "grpc")]
    if _random_integers_failed(data, endpoint, commands, classes):
        return (
            "The model refused or failed the requests it was sent, and what it was sent is random data the "
            "generic users generate (--data-mode random: integers from 0 to 99). A model whose integer inputs "
            "index a table (token, segment or class ids) fails on values outside it, so these failures say "
            "what the data did, not how the model serves.",
            "send zeros (--data-mode zero), or real samples with --input-data FILE (perf_analyzer's JSON format)",
            commands.locust(["--data-mode", "zero"], users=1, run_time="10s", classes=classes),
        )
    return (
        "Triton or the model refused or failed the requests themselves (their shape, type, content or "
        "credentials), or answered what the checks did not expect.",
        "check the payload against the model's metadata, answers checked",
        commands.locust(["--validate-responses"], users=1, run_time="10s", classes=classes or None),
    )


def _cut_cause(data: Dataset, endpoint, commands: RunCommands) -> tuple[str, str, str]:
    return (
        "The requests were still in flight when the run's stop grace ran out: Locust cut them at the end, "
        "unanswered. They say how long the last requests took, not that the server failed them.",
        "give the stop a grace longer than the slowest request (--stop-timeout)",
        commands.locust(["--stop-timeout", "30s"]),
    )


_FAILURE_CAUSES = {
    "cut": _cut_cause,
    "timeout": _timeout_cause,
    "overload": _overload_cause,
    "unreachable": _unreachable_cause,
    "rejected": _rejected_cause,
}


def _generator(data: Dataset) -> list[Diagnosis]:
    if data.run is None:
        return []
    out = []
    generator = data.run.load_generator or {}
    durations = [endpoint.duration_s for endpoint in data.endpoints if endpoint.duration_s]
    cpu_s, workers = float(generator.get("cpu_s") or 0.0), int(generator.get("workers") or 0)
    if durations and cpu_s:
        share = cpu_s / max(durations) / max(workers, 1)
        if share >= LIMITS.generator_core_share:
            out.append(
                Diagnosis(
                    "generator",
                    "(load generator)",
                    "over the whole run",
                    f"the load generator used {cpu_s:,.1f} s of CPU in {max(durations):,.1f} s "
                    f"({share:.0%} of a core per process)",
                    "A saturated load generator sends late and times its own queueing: its latencies include it.",
                    "spread the users over more processes",
                    _commands(data).locust(["--processes", "-1"]),
                )
            )
    late = sum(endpoint.late or 0 for endpoint in data.endpoints)
    sent = sum(endpoint.requests for endpoint in data.endpoints if endpoint.late is not None)
    if sent and late / sent >= LIMITS.late_share:
        out.append(
            Diagnosis(
                "generator",
                "(load generator)",
                "over the whole run",
                f"{late:,} of {sent:,} open-loop requests went out more than 1 ms late",
                "The schedule could not be kept: the client, not the server, set part of the timing.",
                "spread the rate over more processes",
                _commands(data).locust(["--processes", "-1"]),
            )
        )
    return out


def _host(data: Dataset, views: list[ModelView]) -> list[Diagnosis | CannotJudge]:
    """One diagnosis per run: the host is shared by every model on it."""
    models = ", ".join(view.model for view in views) or "(all models)"
    if data.resources is None or data.resources.empty:
        return [CannotJudge("host", models, "no host CPU samples (Triton's nv_cpu_utilization) in the run")]
    cpu = data.resources[(data.resources["metric"] == "nv_cpu_utilization") & (data.resources["time_s"] >= 0)]
    if cpu.empty:
        return [CannotJudge("host", models, "Triton reported no nv_cpu_utilization")]
    busy = [(label, mean) for label, mean, _peak, _n in busy_steps(cpu, data.steps, data.steps_kind)]
    busy = [(label, mean) for label, mean in busy if mean >= LIMITS.host_busy]
    if not data.steps and float(cpu["value"].mean()) >= LIMITS.host_busy:
        busy = [("the whole run", float(cpu["value"].mean()))]
    if not busy:
        return []
    view = views[0] if views else None
    model = view.model if view else "MODEL"
    return [
        Diagnosis(
            "host",
            models,
            ("at " + ", ".join(label for label, _share in busy)) if data.steps else "over the whole run",
            "Triton's nv_cpu_utilization averaged "
            + ", ".join(f"{share:.0%} {'over' if name == 'the whole run' else 'at'} {name}" for name, share in busy),
            "Every instance and batch runs on the same saturated cores: more instances or larger batches cannot "
            "add compute, and a load generator on the same host takes its share.",
            "measure from another machine (or on the GPU the model is meant for) before changing the configuration",
            _commands(data).loadtests("sweep", model, ["--concurrency", "1:8:1"], view.protocols if view else ()),
        )
    ]


def _queue(data: Dataset, view: ModelView) -> list[Diagnosis | CannotJudge]:
    if not _has_server(view.frame):
        return [CannotJudge("queue", view.model, "no Triton statistics for this model")]
    judged = _judged(view.frame)
    if judged.empty:
        return _too_few("queue", view)
    share = judged["queue_us"] / judged["mean_us"]
    hit = judged[share >= LIMITS.queue_share]
    if hit.empty:
        return []
    row = hit.iloc[-1]
    config = view.config
    if config is None:
        return [CannotJudge("queue", view.model, "queue-bound, but the run has no model configuration to suggest from")]
    varies = (["instances=1,2"] if config.instances == 1 else []) + (
        ["dynamic_batching=off,on"] if not config.dynamic_batching and config.max_batch > 0 else []
    )
    if not varies:
        varies = [f"instances={config.instances},{config.instances + 1}"]
    return [
        Diagnosis(
            "queue",
            view.model,
            _where(row, data),
            f"queue {_ms(row['queue_us'])} of a {_ms(row['mean_us'])} mean latency "
            f"({row['queue_us'] / row['mean_us']:.0%}); {config.instances} instance(s), dynamic batching "
            f"{'on' if config.dynamic_batching else 'off'}",
            "Each instance runs one execution at a time, so requests wait their turn; a second instance or the "
            "dynamic batcher serves waiting requests together.",
            "compare the configurations under the same latency target",
            _tune(view, row, varies),
        )
    ]


def _batching(data: Dataset, view: ModelView) -> list[Diagnosis | CannotJudge]:
    config = view.config
    if config is None or not config.dynamic_batching or config.batch_target <= 1:
        return []
    judged = _judged(view.frame)
    if judged.empty or "avg_batch" not in judged or judged["avg_batch"].isna().all():
        return _too_few("batching", view) if judged.empty else []
    row = judged.iloc[-1]
    target, batch = config.batch_target, float(row["avg_batch"])
    if batch >= LIMITS.batch_fill * target:
        return []
    executions = _executions_by_size(data, view.model)
    reached = sum(count for size, count in executions.items() if size in config.preferred)
    total = sum(executions.values())
    if config.preferred and total and reached / total >= LIMITS.batch_fill:
        return []  # most executions were at a size the batcher prefers: it did what it was configured for
    in_flight = _in_flight(row)
    aims = f"one of its preferred sizes {', '.join(map(str, config.preferred))}" if config.preferred else str(target)
    evidence = (
        f"executed batches averaged {batch:.2f} where the batcher aims for {aims} "
        f"(max_queue_delay {config.queue_delay_us} µs); about {in_flight:.1f} requests in flight over "
        f"{config.instances} instance(s)"
    )
    if config.preferred and total:
        evidence += f"; {reached:,} of {total:,} executions reached a preferred size"
    if in_flight / config.instances < target:
        return [
            Diagnosis(
                "batching",
                view.model,
                _where(row, data),
                evidence,
                "The batcher can only group requests that are waiting: with fewer in flight per instance than "
                "the size it aims for, batches stay small whatever the delay.",
                f"offer more concurrent requests (the rule of thumb: {config.peak_concurrency})",
                view.commands.loadtests(
                    "sweep", view.model, ["--concurrency", concurrency_range(config.peak_concurrency)], view.protocols
                ),
            )
        ]
    delay = max(config.queue_delay_us, 100)
    return [
        Diagnosis(
            "batching",
            view.model,
            _where(row, data),
            evidence,
            "Enough requests are in flight, but the batcher waits at most max_queue_delay_microseconds for "
            "more: a longer delay trades a little latency for fuller batches.",
            "compare longer queue delays under the same latency target",
            _tune(view, row, [f"max_queue_delay_us={delay},{4 * delay},{16 * delay}"]),
        )
    ]


def _executions_by_size(data: Dataset, model: str) -> dict[int, int]:
    """Triton's executions of `model` per batch size over the run (summary.json's server block)."""
    server = (data.run.server or {}).get(model, {}) if data.run is not None else {}
    return {int(size): int(count) for size, count in (server.get("batch_sizes") or {}).items()}


def _payload(data: Dataset, view: ModelView) -> list[Diagnosis | CannotJudge]:
    if "client_network_us" not in view.frame or view.frame["client_network_us"].isna().all():
        return [CannotJudge("payload", view.model, "no split of the latency into server and send/recv + network")]
    judged = _judged(view.frame)
    if judged.empty:
        return _too_few("payload", view)
    sizes = [e.bytes_sent_per_request or 0 for e in data.endpoints if e.model == view.model]
    size = max(sizes, default=0)
    share = judged["client_network_us"] / judged["mean_us"]
    server_parts = [column for column in ("queue_us", "compute_infer_us") if column in judged]
    largest = judged[server_parts].max(axis=1).fillna(0) if server_parts else 0
    hit = judged[(share >= LIMITS.payload_share) & (judged["client_network_us"] > largest)]
    if hit.empty or size < LIMITS.large_payload_bytes:
        return []
    row = hit.iloc[-1]
    commands = view.commands
    images = [name for name in commands.user_classes if name.startswith("ResNet")]
    payload = [word for word in commands.payload() if word not in ("--http-json", "--image-format", "tensor")]
    if view.run_options.get("http_json") and "http" in view.protocols:
        step = "send the tensors as binary data (leave out --http-json): Triton parses JSON numbers one by one"
        command = commands.locust([], users=4, payload=payload)
    elif images and str(view.run_options.get("image_format") or "tensor") == "tensor":
        step = "send encoded images to a model that decodes them on the server"
        command = commands.locust([], users=8, classes=["ResNetGrpcUser"], payload=[*payload, "--image-format", "jpeg"])
    elif "http" in view.protocols:
        step = "send the same requests over gRPC (binary protobuf on one HTTP/2 connection)"
        command = commands.loadtests("sweep", view.model, ["--concurrency", "1:8:1", "--protocol", "both"])
    else:
        step = "send only the inputs and outputs the model needs, or a smaller input type (FP16, UINT8)"
        command = ""
    return [
        Diagnosis(
            "payload",
            view.model,
            _where(row, data),
            f"send/recv + network {_ms(row['client_network_us'])} of a {_ms(row['mean_us'])} mean latency "
            f"({row['client_network_us'] / row['mean_us']:.0%}), {size / 1000:,.0f} KB sent per request",
            "Serialising, copying and parsing a large tensor per request costs more than the model's compute.",
            step,
            command,
        )
    ]


def _plateau(data: Dataset, view: ModelView) -> list[Diagnosis | CannotJudge]:
    if data.level_kind not in ("step", "concurrency") or data.open_loop:
        return []
    judged = _judged(view.frame)
    if len(judged) < 2:
        return [CannotJudge("plateau", view.model, "fewer than two load levels with enough requests")]
    config = view.config
    peak = config.peak_concurrency if config else None
    rows = list(judged.itertuples(index=False))
    flat = _flat_pair(rows)
    if flat is not None:
        before, after = flat
        grew = after.rps / before.rps - 1 if before.rps else math.inf
        slower = after.mean_us / before.mean_us - 1 if before.mean_us else 0.0
        below = f", below the {peak} of 2 x max batch x instances" if peak and after.level < peak else ""
        return [
            Diagnosis(
                "plateau",
                view.model,
                f"from {before.label} to {after.label}",
                f"throughput {before.rps:,.1f} -> {after.rps:,.1f} requests/s ({grew:+.0%}) while the mean latency "
                f"went {_ms(before.mean_us)} -> {_ms(after.mean_us)} ({slower:+.0%}){below}",
                "More concurrent requests only queue once the server is saturated: the added load shows up as "
                "latency, not throughput.",
                "find the highest rate that meets a latency target, then change the configuration that limits it",
                view.commands.loadtests(
                    "capacity", view.model, ["--slo", f"p99<{_slo_ms(before._asdict())}"], view.protocols
                ),
            )
        ]
    last = rows[-1]
    if peak and last.level < peak:
        return [
            Diagnosis(
                "plateau",
                view.model,
                f"at {last.label}",
                f"throughput still grew to {last.rps:,.1f} requests/s at the highest load, {last.level:g} "
                f"concurrent users, below the {peak} of 2 x max batch x instances",
                "Peak throughput needs enough requests in flight to fill every instance's batches; this run "
                "stopped before that.",
                "sweep up to the rule of thumb's concurrency",
                view.commands.loadtests(
                    "sweep", view.model, ["--concurrency", concurrency_range(peak)], view.protocols
                ),
            )
        ]
    return []


def _flat_pair(rows: list):
    """The first two consecutive levels between which throughput stopped growing while the mean
    latency grew (the server saturated), or None."""
    for before, after in itertools.pairwise(rows):
        grew = after.rps / before.rps - 1 if before.rps else math.inf
        slower = after.mean_us / before.mean_us - 1 if before.mean_us else 0.0
        if grew < LIMITS.plateau_growth and slower >= LIMITS.plateau_latency_growth:
            return before, after
    return None


def headlines(data: Dataset) -> list[str]:
    """Per model, one line: the throughput reached and at what load, where it saturated (closed
    loop), and the capacity under the SLO when a capacity search measured it. "At most" only
    where several load levels were tried (a ceiling was looked for); a model whose requests
    mostly failed says its figures are of the ones that succeeded."""
    out = []
    several = data.level_kind != "run"
    for view in _views(data):
        judged = _judged(view.frame)
        if judged.empty:
            continue
        best = judged.loc[judged["rps"].idxmax()]
        where = f" {_where(best, data)}" if several else " over the whole run"
        reached = "at most " if several and len(judged) > 1 else ""
        line = (
            f"{view.model}: {reached}{best['rps']:,.1f} requests/s ({best['infer_per_s']:,.1f} inferences/s){where}, "
            f"p99 {_ms(best['p99_us'])}{' there' if several else ''}"
        )
        endpoints = [endpoint for endpoint in data.endpoints if endpoint.model == view.model]
        requests = sum(endpoint.requests for endpoint in endpoints)
        failures = sum(endpoint.failures for endpoint in endpoints)
        if requests and failures / requests >= LIMITS.failure_share:
            line += f" (of the {requests - failures:,} requests that succeeded; {failures:,} of {requests:,} failed)"
        flat = _flat_pair(list(judged.itertuples(index=False))) if data.level_kind in ("step", "concurrency") else None
        if flat is not None and not data.open_loop:
            line += f"; saturated from {flat[0].label} (throughput flat from there while latency grew)"
        if data.capacity and data.capacity.get("capacity_rps") is not None:
            line += f"; capacity {data.capacity['capacity_rps']:g} requests/s under {data.capacity.get('slo')}"
        out.append(line + ".")
    return out


def _compute(data: Dataset, view: ModelView) -> list[Diagnosis | CannotJudge]:
    if not _has_server(view.frame) or "compute_infer_us" not in view.frame:
        return []
    judged = _judged(view.frame).dropna(subset=["compute_infer_us"])
    if len(judged) < 2:
        return []
    first, last = judged.iloc[0], judged.iloc[-1]
    batch_first = float(first.get("avg_batch") or 1.0) or 1.0
    batch_last = float(last.get("avg_batch") or 1.0) or 1.0
    grew = last["compute_infer_us"] / first["compute_infer_us"] - 1 if first["compute_infer_us"] else 0.0
    batch_grew = batch_last / batch_first - 1
    if grew < LIMITS.compute_growth or batch_grew >= LIMITS.batch_growth:
        return []
    instances = view.config.instances if view.config else None
    return [
        Diagnosis(
            "compute",
            view.model,
            f"from {first['label']} to {last['label']}",
            f"compute per request {_ms(first['compute_infer_us'])} -> {_ms(last['compute_infer_us'])} "
            f"({grew:+.0%}) while the executed batch went {batch_first:.2f} -> {batch_last:.2f}",
            "The same work took longer under load: instances (or other models) compete for the same cores or GPU.",
            "compare fewer and more instances" if instances else "check what else runs on Triton's host",
            _tune(view, last, [f"instances={max(1, instances - 1)},{instances}"])
            if instances and instances > 1
            else "",
        )
    ]
