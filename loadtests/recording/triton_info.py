"""What the run was measured against: Triton's server metadata and each model's metadata and config."""

from __future__ import annotations

from loadtests.clients.control import DEFAULT_TIMEOUT_S, TritonControl
from loadtests.connection_security import ConnectionSecurity
from loadtests.errors import ServerError


def fetch_triton_info(
    http_address: str,
    models: list[str],
    timeout_s: float = DEFAULT_TIMEOUT_S,
    security: ConnectionSecurity | None = None,
) -> dict:
    """{"server": /v2, "models": {m: {"metadata": ..., "config": ...}}}; errors recorded, not raised.

    Example: fetch_triton_info("127.0.0.1:8000", ["bert_qa"])["models"]["bert_qa"]["config"]["max_batch_size"]
    """
    control = TritonControl(http_address, timeout_s=timeout_s, security=security)
    info: dict = {"http": http_address, "models": {}}
    try:
        info["server"] = control.server_metadata()
    except ServerError as error:
        info["error"] = f"server metadata: {error}"
    for model in models:
        entry: dict = {}
        try:
            entry["metadata"] = control.model_metadata(model)
            entry["config"] = control.model_config(model)
        except ServerError as error:
            entry["error"] = str(error)
        info["models"][model] = entry
    return info
