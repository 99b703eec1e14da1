"""The report's findings grouped by model, for runs that drive several models (a --mix run, or
user classes on different models).

Six endpoints (3 models x 2 protocols) give some 30 findings; read as one list, the lines of
one model are scattered among the others'. Grouped, the run as a whole comes first (faults,
"no request failed", the load generator's cost), then one group per model: the models with
failed requests first (the most failures first), then by their share of the requests (the
model that carries most of the traffic first). Every finding stays; within a group the
same finding for each protocol follows the first of them (grpc's and http's p99/p50 side by
side), kinds in their original order; a line names its endpoint's protocol (`grpc: p99 is ...`) where it named
the endpoint (`identity [grpc]: p99 is ...`), the group's title names the model. An
ensemble's composing models go into the ensemble's group under their own name.

    for group in grouped_findings(data, findings(data)):
        group.title    # None for the run as a whole, else "identity: 11,283 requests (59.7 %), p99 11.223 ms"
        group.lines
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from analysis.dataset import Dataset

PROTOCOL_LABELS = ("grpc: ", "http: ")


@dataclass
class FindingGroup:
    """Findings about one model (`model` None: about the run as a whole)."""

    model: str | None
    title: str | None = None
    lines: list[str] = field(default_factory=list)
    requests: int = 0
    failures: int = 0


def grouped_findings(data: Dataset, lines: list[str]) -> list[FindingGroup]:
    """The run-wide group, then one per model in order of importance; one group with every line
    when the run has fewer than two models (nothing to tell apart)."""
    groups = _model_groups(data)
    if len(groups) < 2:
        return [FindingGroup(None, lines=list(lines))]
    run_wide = FindingGroup(None)
    subjects = _subjects(data, groups)
    for line in lines:
        subject = next((s for s in subjects if line.startswith(s.prefix)), None)
        if subject is None:
            run_wide.lines.append(line)
        else:
            groups[subject.model].lines.append(subject.label + line[len(subject.prefix) :])
    total = sum(group.requests for group in groups.values())
    ordered = sorted(groups.values(), key=lambda g: (-g.failures, -g.requests, g.model))
    for group in ordered:
        group.title = _title(data, group, total)
        group.lines = same_kind_together(group.lines)
    return [run_wide, *(group for group in ordered if group.lines)]


@dataclass(frozen=True)
class _Subject:
    """A name that opens a finding ("identity [grpc]: ..."), the group it belongs to, and what
    the line opens with once grouped ("grpc: ", nothing for the model itself)."""

    prefix: str
    model: str
    label: str


def _model_groups(data: Dataset) -> dict[str, FindingGroup]:
    groups: dict[str, FindingGroup] = {}
    for endpoint in data.endpoints:
        group = groups.setdefault(endpoint.model, FindingGroup(endpoint.model))
        group.requests += endpoint.requests
        group.failures += endpoint.failures
    return groups


def _subjects(data: Dataset, groups: dict[str, FindingGroup]) -> list[_Subject]:
    subjects = [_Subject(f"{model}: ", model, "") for model in groups]
    subjects += [_Subject(f"{e.name}: ", e.model, f"{e.protocol}: ") for e in data.endpoints if e.name != e.model]
    ensemble_of = data.run.ensemble_of if data.run is not None else {}
    subjects += [
        _Subject(f"{model}: ", ensemble, f"{model}: ")
        for model, ensemble in ensemble_of.items()
        if ensemble in groups and model not in groups
    ]
    # The longest name first: "identity [grpc]: " is an endpoint of "identity", not the model's own line.
    return sorted(subjects, key=lambda s: len(s.prefix), reverse=True)


def _title(data: Dataset, group: FindingGroup, total: int) -> str:
    share = group.requests / total if total else 0.0
    title = f"{group.model}: {group.requests:,} requests ({share:.1%})"
    latency = _merged_latency(data, group.model or "")
    if "p99" in latency:
        title += f", p99 {latency['p99'] / 1000:,.3f} ms"
    if group.failures:
        title += f", {group.failures:,} failed"
    return title


def _merged_latency(data: Dataset, model: str) -> dict:
    """The model's latencies over all its endpoints: summary.json's model_totals, or its one endpoint's."""
    totals = data.run.model_totals.get(model) if data.run is not None else None
    if totals:
        return totals.get("latency_us") or {}
    endpoints = [e for e in data.endpoints if e.model == model]
    return endpoints[0].latency_us if len(endpoints) == 1 else {}


NUMBER = re.compile(r"\d[\d,.]*")


def same_kind_together(lines: list[str]) -> list[str]:
    """Lines in their order, each kind gathered at its first line: two lines are of one kind when
    they read the same with their numbers and protocol label left out (one sentence, two endpoints)."""
    first_of_kind: dict[str, int] = {}
    keyed = []
    for index, line in enumerate(lines):
        kind = NUMBER.sub("#", line.partition(": ")[2] if line.startswith(PROTOCOL_LABELS) else line)
        keyed.append((first_of_kind.setdefault(kind, index), index, line))
    return [line for *_, line in sorted(keyed)]
