"""What the run was measured against: Triton's server metadata and each model's metadata and config."""

from __future__ import annotations

from loadtests.clients.control import DEFAULT_TIMEOUT_S
from loadtests.clients.control_grpc import open_control
from loadtests.connection_security import ConnectionSecurity
from loadtests.errors import ServerError
from loadtests.run_format.ensembles import composing_models


def fetch_triton_info(
    http_address: str,
    models: list[str],
    timeout_s: float = DEFAULT_TIMEOUT_S,
    security: ConnectionSecurity | None = None,
) -> dict:
    """{"server": /v2, "models": {m: {"metadata": ..., "config": ...}}}; errors recorded, not raised.

    The models of the run, then the composing models of its ensembles (their configs'
    `ensemble_scheduling` steps, recursively), each marked with the ensembles it serves
    (`"part_of": ["bert_ensemble"]`): Triton runs and counts every step's model on its own,
    so the server-side breakdown watches them too (`watched_models`).

    Example: fetch_triton_info("127.0.0.1:8000", ["bert_qa"])["models"]["bert_qa"]["config"]["max_batch_size"]
    """
    control = open_control(http_address, timeout_s=timeout_s, security=security)  # or grpc://HOST:PORT
    info: dict = {"http": http_address, "models": {}}
    try:
        info["server"] = control.server_metadata()
    except ServerError as error:
        info["error"] = f"server metadata: {error}"
    pending = [(model, None) for model in models]
    while pending:
        model, ensemble = pending.pop(0)
        if model in info["models"]:
            _mark_part_of(info["models"][model], ensemble)
            continue
        entry: dict = {}
        _mark_part_of(entry, ensemble)
        try:
            entry["metadata"] = control.model_metadata(model)
            entry["config"] = control.model_config(model)
        except ServerError as error:
            entry["error"] = str(error)
        info["models"][model] = entry
        pending.extend((step, model) for step in composing_models(entry.get("config") or {}))
    return info


def watched_models(info: dict) -> list[str]:
    """Every model of `fetch_triton_info`'s answer: the run's and its ensembles' composing models."""
    return list(info["models"])


def _mark_part_of(entry: dict, ensemble: str | None) -> None:
    if ensemble is not None and ensemble not in entry.setdefault("part_of", []):
        entry["part_of"].append(ensemble)
