"""`--mix` read into a `ModelMix`: a MODEL:WEIGHT list, or a YAML/JSON file with per-model options.

    --mix "identity:0.6,sleep:0.3,text_reverse:0.1"
    --mix docs/mix-example.yaml

The file (docs/mixes.md) holds a `models` mapping, in order; per model its `weight` and,
where they differ from the run's options, `batch_size` (a SPEC), `shape` (NAME:D1,D2, space-
separated for several), `input_data` (a perf_analyzer JSON file or a list of them, relative
to the mix file) and `data_mode` (random|zero):

    models:
      identity: {weight: 0.6, batch_size: "1-4"}
      sleep: {weight: 0.3, shape: "INPUT0:4"}

Every malformed value raises SpecError naming it (exit 2 before any load); whether the models
exist is the pre-flight's question (loadtests/endpoint_mix.py).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import yaml

from loadtests.batch_size import parse_batch_size
from loadtests.errors import SpecError
from loadtests.mix import MixEntry, ModelMix
from loadtests.settings import DATA_MODES
from loadtests.workloads import parse_shape_overrides

FILE_SUFFIXES = (".yaml", ".yml", ".json")
ENTRY_KEYS = ("weight", "batch_size", "shape", "input_data", "data_mode")
FORMS = "MODEL:WEIGHT,MODEL:WEIGHT,... or a .yaml/.json mix file"


def parse_mix(text: str) -> ModelMix | None:
    """The --mix option (None when not given); raises SpecError."""
    text = text.strip()
    if not text:
        return None
    if text.lower().endswith(FILE_SUFFIXES):
        entries = _read_file(Path(text))
    else:
        entries = [_list_item(item) for item in text.split(",")]
    _check_models(entries, text)
    return ModelMix(tuple(entries), text)


def _list_item(item: str) -> MixEntry:
    model, sep, weight = item.strip().rpartition(":")
    if not sep or not model.strip():
        raise SpecError(f"--mix item '{item.strip()}' is not MODEL:WEIGHT (accepted: {FORMS})")
    return MixEntry(model.strip(), _weight(weight, model.strip()))


def _weight(value: Any, model: str) -> float:
    try:
        weight = float(value)
    except (TypeError, ValueError):
        raise SpecError(f"--mix: the weight of '{model}' ({value!r}) is not a number") from None
    if not (math.isfinite(weight) and weight > 0):
        raise SpecError(f"--mix: the weight of '{model}' must be a number > 0, got {value!r}")
    return weight


def _check_models(entries: list[MixEntry], text: str) -> None:
    if not entries:
        raise SpecError(f"--mix {text}: names no model (accepted: {FORMS})")
    seen: set[str] = set()
    for entry in entries:
        if entry.model in seen:
            raise SpecError(f"--mix: model '{entry.model}' is named twice (give each model once, with one weight)")
        seen.add(entry.model)


def _read_file(path: Path) -> list[MixEntry]:
    try:
        raw = path.read_text()
    except OSError as error:
        raise SpecError(f"--mix {path}: cannot read the mix file ({error.strerror or error})") from None
    try:
        document = json.loads(raw) if path.suffix.lower() == ".json" else yaml.safe_load(raw)
    except (json.JSONDecodeError, yaml.YAMLError) as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise SpecError(f"--mix {path}: not valid {path.suffix.lstrip('.').upper()} ({first})") from None
    models = document.get("models") if isinstance(document, dict) else None
    if not isinstance(models, dict) or not models:
        raise SpecError(f"--mix {path}: expected a 'models' mapping of MODEL: {{weight: W, ...}} (docs/mixes.md)")
    return [_file_entry(str(model), options, path) for model, options in models.items()]


def _file_entry(model: str, options: Any, path: Path) -> MixEntry:
    if not isinstance(options, dict):
        options = {"weight": options}  # `identity: 0.6` is the short form of {weight: 0.6}
    unknown = sorted(set(options) - set(ENTRY_KEYS))
    if unknown:
        raise SpecError(f"--mix {path}: model '{model}' has unknown key '{unknown[0]}' (keys: {', '.join(ENTRY_KEYS)})")
    if "weight" not in options:
        raise SpecError(f"--mix {path}: model '{model}' has no weight")
    data_mode = options.get("data_mode")
    if data_mode is not None and data_mode not in DATA_MODES:
        raise SpecError(f"--mix {path}: data_mode '{data_mode}' of '{model}' is not one of {', '.join(DATA_MODES)}")
    return MixEntry(
        model=model,
        weight=_weight(options["weight"], model),
        batch_size=parse_batch_size(str(options["batch_size"])) if "batch_size" in options else None,
        shapes=parse_shape_overrides(str(options["shape"])) if "shape" in options else None,
        input_data=_input_files(options["input_data"], path) if "input_data" in options else None,
        data_mode=data_mode,
    )


def _input_files(value: Any, mix_file: Path) -> tuple[Path, ...]:
    """perf_analyzer --input-data files, relative to the mix file (so the file can travel with them)."""
    items = value if isinstance(value, list) else [value]
    return tuple(mix_file.parent / str(item) for item in items)
