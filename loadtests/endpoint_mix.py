"""Pre-flight of a `--mix`: one prepared endpoint per model, and the per-request choice between them.

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

import logging
from collections.abc import Iterable
from dataclasses import dataclass, replace

from loadtests.batch_size import UniformSource
from loadtests.clients import PreparedRequest, TritonClient
from loadtests.clients.base import Validator
from loadtests.endpoints import Endpoint, build_endpoint, fetch_model
from loadtests.errors import SpecError
from loadtests.mix import MixEntry, ModelMix
from loadtests.model_spec import ModelSpec
from loadtests.settings import Settings

logger = logging.getLogger(__name__)
# The workload kind a mix drives: models described by their metadata (or --input-data files).
MIX_KIND = "generic"


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


def check_mix_applies(class_kinds: dict[str, str]) -> None:
    """--mix drives the generic users only: refuse it beside BERT-QA or ResNet users (SpecError).

    `class_kinds`: the run's user class names -> their workload kind.
    """
    others = sorted(name for name, kind in class_kinds.items() if kind != MIX_KIND)
    if others:
        raise SpecError(
            f"--mix drives the generic TritonHttpUser/TritonGrpcUser, not {', '.join(others)}: run those in a "
            "run of their own, or put their models in the mix (a mix file's input_data gives each its payload)"
        )


def prepare_mix(client: TritonClient, mix: ModelMix, settings: Settings) -> MixedEndpoint:
    """Every model of the mix fetched and checked, then its pools built; raises StartupError."""
    specs = [fetch_model(client, entry.model) for entry in mix.entries]
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
