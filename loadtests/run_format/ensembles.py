"""Ensembles in a run directory: which recorded models are steps of which ensemble.

Triton keeps statistics per model: an ensemble's own entry says little about where its time
went, its composing models' entries do. The load test records the composing models' statistics
next to the ensemble's (summary.json "server"), and their configs in config.json
("triton" -> "models"); this module reads the pipeline from those configs, for the recording
side (which models to poll) and the reports (which row belongs to which ensemble).

    composing_models(config["triton"]["models"]["resnet50_jpeg"]["config"])
    # ["resnet50_preprocess", "resnet50"]
"""

from __future__ import annotations

ENSEMBLE_PLATFORM = "ensemble"


def composing_models(model_config: dict) -> list[str]:
    """The models an ensemble's steps call, in step order, each once; [] for any other model."""
    if model_config.get("platform") != ENSEMBLE_PLATFORM:
        return []
    steps = (model_config.get("ensemble_scheduling") or {}).get("step") or []
    names: list[str] = []
    for step in steps:
        name = step.get("model_name")
        if name and name not in names:
            names.append(name)
    return names


def ensemble_of(models_info: dict[str, dict]) -> dict[str, str]:
    """{composing model: the ensemble that calls it}, from config.json's triton "models" entries.

    A model several recorded ensembles call names the first of them (sorted by name).
    """
    owners: dict[str, str] = {}
    for ensemble in sorted(models_info):
        for model in composing_models((models_info[ensemble] or {}).get("config") or {}):
            owners.setdefault(model, ensemble)
    return owners
