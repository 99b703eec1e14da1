"""What the run was measured against: Triton's server metadata and each model's metadata and config."""

from __future__ import annotations

from loadtests.clients.control import DEFAULT_TIMEOUT_S, TritonControl
from loadtests.errors import ServerError
from loadtests.run_format.ensembles import composing_models


def fetch_triton_info(http_address: str, models: list[str], timeout_s: float = DEFAULT_TIMEOUT_S) -> dict:
    """{"server": /v2, "models": {m: {"metadata": ..., "config": ...}}}; errors recorded, not raised.

    Example: fetch_triton_info("127.0.0.1:8000", ["bert_qa"])["models"]["bert_qa"]["config"]["max_batch_size"]
    """
    control = TritonControl(http_address, timeout_s=timeout_s)
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


def with_composing_models(http_address: str, models: list[str], timeout_s: float = DEFAULT_TIMEOUT_S) -> list[str]:
    """`models` and, for each ensemble among them, the models its steps call (nested ensembles
    too): Triton counts an ensemble's work in its composing models' statistics, so a run that
    targets an ensemble must poll them as well. A config Triton does not give is left out here
    (fetch_triton_info records the error).

    Example: with_composing_models("127.0.0.1:8000", ["resnet50_jpeg"])
    # ["resnet50_jpeg", "resnet50_preprocess", "resnet50"]
    """
    control = TritonControl(http_address, timeout_s=timeout_s)
    found = list(models)
    pending = list(models)
    while pending:
        model = pending.pop(0)
        try:
            config = control.model_config(model)
        except ServerError:
            continue
        for step_model in composing_models(config):
            if step_model not in found:
                found.append(step_model)
                pending.append(step_model)
    return found
