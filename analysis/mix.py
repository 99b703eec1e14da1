"""The report's model-mix section (runs with --mix): each model beside its weight, and the mix total.

Reads summary.json's "mix" (weights asked for, shares measured), each model's merged entry
("model_totals" when the model has several endpoints, else its one endpoint), Triton's count
per model ("server"), and "overall" for the total row.

    headers, rows = mix_table(load_run("runs/20261123T091257Z-mix"))
"""

from __future__ import annotations

from analysis.run import SavedRun
from analysis.tables import count, ms, rate

MIX_HEADERS = [
    "model",
    "weight",
    "share measured",
    "requests",
    "Triton requests",
    "failures",
    "req/s",
    "p50 (ms)",
    "p99 (ms)",
]
TOTAL_ROW = "mix total"


def mix_table(run: SavedRun) -> tuple[list[str], list[list[str]]]:
    """One row per model of the mix, in the mix's order, then the mix total (empty without a mix)."""
    if not run.mix:
        return MIX_HEADERS, []
    rows = []
    for model, weight in run.mix.get("weights", {}).items():
        entry = run.model_totals.get(model) or _single_endpoint(run, model)
        rows.append(
            [
                model,
                _share(weight),
                _share(run.mix.get("shares", {}).get(model)),
                count(run.mix.get("requests", {}).get(model)),
                count((run.server.get(model) or {}).get("requests")),
                *_measured(entry),
            ]
        )
    triton_total = sum(int((run.server.get(model) or {}).get("requests", 0)) for model in run.mix.get("weights", {}))
    total_requests = sum(int(n) for n in run.mix.get("requests", {}).values())
    rows.append(
        [TOTAL_ROW, _share(1.0), _share(1.0), count(total_requests), count(triton_total), *_measured(run.overall)]
    )
    return MIX_HEADERS, rows


def _single_endpoint(run: SavedRun, model: str) -> dict:
    for endpoint in run.endpoints.values():
        if endpoint.model == model:
            return {
                "failures": endpoint.failures,
                "throughput_rps": endpoint.throughput_rps,
                "latency_us": endpoint.latency_us,
            }
    return {}


def _measured(entry: dict) -> list[str]:
    latency = entry.get("latency_us") or {}
    return [
        count(entry.get("failures")),
        rate(entry.get("throughput_rps")),
        ms(latency.get("p50")),
        ms(latency.get("p99")),
    ]


def _share(value) -> str:
    return "n/a" if value is None else f"{float(value) * 100:.2f} %"
