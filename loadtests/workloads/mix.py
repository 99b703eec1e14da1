"""`--mix` read into a `ModelMix`: a MODEL:WEIGHT list, or a YAML/JSON file with per-model options.

    --mix "identity:0.6,sleep:0.3,text_reverse:0.1"
    --mix docs/mix-example.yaml

The file (docs/guides/mixes.md) holds a `models` mapping, in order; per model its `weight` and,
where they differ from the run's options, `batch_size` (a SPEC), `shape` (NAME:D1,D2, space-
separated for several), `input_data` (a perf_analyzer JSON file or a list of them, relative
to the mix file) and `data_mode` (random|zero):

    models:
      identity: {weight: 0.6, batch_size: "1-4"}
      sleep: {weight: 0.3, shape: "INPUT0:4"}

Every malformed value raises SpecError naming it (exit 2 before any load); whether the models
exist is the pre-flight's question, below.

Pre-flight of a `--mix`: one prepared endpoint per model, and the per-request choice between them.

The generic users (TritonHttpUser, TritonGrpcUser) take a `MixedEndpoint` where they would
take one model's `Endpoint`: it has the same `pick(rng)` and `validator`, so closed and open
loop need no change. Each request draws its model from the user's seeded rng (one uniform
draw, then that model's own batch size and body), so the shares follow the weights whatever
each model's latency; in open loop the one schedule's sends draw the same way, which splits
the rate by weight.

    target = prepare_mix(client, settings.mix, settings)
    request = target.pick(rng)  # request.model is "identity" about 60 % of the time
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from loadtests.clients import PreparedRequest, TritonClient
from loadtests.clients.base import Validator
from loadtests.config.batch_size import UniformSource, parse_batch_size
from loadtests.config.mix import MixEntry, ModelMix
from loadtests.config.model_spec import ModelSpec
from loadtests.config.settings import DATA_MODES, Settings
from loadtests.errors import ModelMismatchError, SpecError
from loadtests.workloads import parse_shape_overrides
from loadtests.workloads.endpoints import Endpoint, build_endpoint, fetch_model
from loadtests.workloads.kinds import MIX_KIND, WorkloadKind

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
        raise SpecError(
            f"--mix {path}: expected a 'models' mapping of MODEL: {{weight: W, ...}} (docs/guides/mixes.md)"
        )
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


logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class MixedEndpoint:
    """The endpoints of a mix's models on one protocol, picked by weight per request.

    Example: MixedEndpoint(mix, (identity_http, sleep_http), None).pick(rng).model in ("identity", "sleep")
    """

    mix: ModelMix
    endpoints: tuple[Endpoint, ...]  # in the mix's order
    validator: Validator | None

    def pick(self, rng: UniformSource) -> PreparedRequest:
        return self.endpoints[self.mix.pick_index(rng)].pick(rng)


def check_mix_applies(class_kinds: dict[str, WorkloadKind]) -> None:
    """--mix drives the users of one kind (MIX_KIND, the generic users) only: refuse it beside
    BERT-QA or ResNet users (SpecError).

    `class_kinds`: the run's user class names -> their workload kind.
    """
    others = sorted(name for name, kind in class_kinds.items() if not kind.takes_mix)
    if others:
        raise SpecError(
            f"--mix drives the {MIX_KIND.name} {'/'.join(MIX_KIND.user_classes.values())}, not {', '.join(others)}: "
            "run those in a run of their own, or put their models in the mix (a mix file's input_data gives each "
            "its payload)"
        )


def prepare_mix(client: TritonClient, mix: ModelMix, settings: Settings) -> MixedEndpoint:
    """Every model of the mix fetched and checked, then its pools built; raises StartupError."""
    specs = [fetch_model(client, entry.model) for entry in mix.entries]
    decoupled = [spec.name for spec in specs if spec.decoupled]
    if decoupled:
        raise ModelMismatchError(
            f"model '{decoupled[0]}' is decoupled (model_transaction_policy {{ decoupled: true }}): a --mix sends "
            "one request for one response; load-test it alone with TritonGrpcUser or TritonHttpUser --model, "
            "which stream it"
        )
    _check_shapes_used(settings.shapes, specs)
    endpoints = tuple(
        build_endpoint(MIX_KIND, client, spec, settings_for(entry, spec, settings))
        for entry, spec in zip(mix.entries, specs, strict=True)
    )
    for endpoint in endpoints:
        logger.info("prepared %s: weight %.3g", endpoint.name, mix.weights[endpoint.model.name])
    return MixedEndpoint(mix, endpoints, _validator_by_model(endpoints))


def settings_for(entry: MixEntry, model: ModelSpec, settings: Settings) -> Settings:
    """The run's settings as one model of the mix sees them: its own options where it sets them.

    The run's --shape applies to each model that has the named input (a mix's models rarely
    share every input name, and a name none of them has is refused by `_check_shapes_used`).
    """
    names = {tensor.name for tensor in model.inputs}
    shapes = entry.shapes if entry.shapes is not None else {n: s for n, s in settings.shapes.items() if n in names}
    return replace(
        settings,
        model=entry.model,
        batch_size=entry.batch_size or settings.batch_size,
        shapes=shapes,
        input_data=entry.input_data if entry.input_data is not None else settings.input_data,
        data_mode=entry.data_mode or settings.data_mode,
    )


def _check_shapes_used(shapes: dict[str, tuple[int, ...]], models: Iterable[ModelSpec]) -> None:
    names = {tensor.name for model in models for tensor in model.inputs}
    unused = sorted(set(shapes) - names)
    if unused:
        raise SpecError(f"--shape {unused[0]}: no model of the --mix has an input named {unused[0]!r}")


def _validator_by_model(endpoints: Iterable[Endpoint]) -> Validator | None:
    """One validator that hands each response to its own model's (None without --validate-responses)."""
    by_model = {endpoint.model.name: endpoint.validator for endpoint in endpoints if endpoint.validator is not None}
    if not by_model:
        return None

    def validate(outputs, datatypes, request: PreparedRequest) -> None:
        check = by_model.get(request.model)
        if check is not None:
            check(outputs, datatypes, request)

    return validate
