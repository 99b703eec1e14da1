"""--mix: one run drives several models, each request choosing its model by weight (issue 14, item 3).

Against the session's real Triton: three models weighted 0.6/0.3/0.1 over HTTP and gRPC at
once (both generic classes in one run), closed loop and open loop; every model's share of the
requests follows its weight, every model's client count equals Triton's statistics delta for
it, and the report shows the mix. Bad mixes are in tests/run/test_bad_input.py's table.
"""

from __future__ import annotations

import argparse
import math

import numpy as np
import pytest

from loadtests.errors import SpecError
from loadtests.options.reading import settings_from
from loadtests.workloads.mix import _validator_by_model, parse_mix
from tests.helpers import (
    REPO_ROOT,
)

WEIGHTS = {"identity": 0.6, "sleep": 0.3, "text_reverse": 0.1}
MIX = ",".join(f"{model}:{weight}" for model, weight in WEIGHTS.items())
EXAMPLE_FILE = REPO_ROOT / "docs" / "examples" / "mix.yaml"
# ... and, whatever n the run reached, no share may stray more than 4 binomial standard deviations.
SPREAD_LIMIT = 4.0


# -- the value and its parts, without a server --------------------------------------------------------
def test_list_form_normalises_the_weights():
    mix = parse_mix("identity:3, sleep:1.5 ,text_reverse:0.5")
    assert mix.models == ("identity", "sleep", "text_reverse")
    assert mix.weights == pytest.approx(WEIGHTS)
    assert all(entry.batch_size is None and entry.shapes is None for entry in mix.entries)


def test_the_example_file_sets_per_model_options():
    mix = parse_mix(str(EXAMPLE_FILE))
    identity, sleep, text_reverse = mix.entries
    assert mix.weights == pytest.approx(WEIGHTS)
    assert identity.batch_size.sizes == (1, 2, 3, 4)
    assert sleep.shapes == {"INPUT0": (4,)}
    assert text_reverse.input_data == (EXAMPLE_FILE.parent / "text_reverse_input.json",)
    assert text_reverse.input_data[0].is_file()  # relative to the mix file, not to the working directory


def test_json_file_and_short_form(tmp_path):
    path = tmp_path / "mix.json"
    path.write_text('{"models": {"identity": 2, "sleep": {"weight": 2, "data_mode": "zero"}}}')
    mix = parse_mix(str(path))
    assert mix.weights == {"identity": 0.5, "sleep": 0.5}
    assert mix.entries[1].data_mode == "zero"


def test_mix_and_model_are_refused_together():
    with pytest.raises(SpecError, match="--mix and --model"):
        settings_from(argparse.Namespace(mix="identity:1", model="identity"))
    assert settings_from(argparse.Namespace(mix="identity:1", model="")).mix.models == ("identity",)


def test_choices_follow_the_weights():
    """The per-request choice alone, on a seeded rng: 100,000 draws within 4 binomial deviations."""
    mix = parse_mix(MIX)
    rng = np.random.default_rng(7)
    n = 100_000
    counts = np.bincount([mix.pick_index(rng) for _ in range(n)], minlength=3)
    for count, weight in zip(counts, WEIGHTS.values(), strict=True):
        assert abs(count / n - weight) <= SPREAD_LIMIT * math.sqrt(weight * (1 - weight) / n), counts


def test_each_response_is_validated_by_its_own_models_validator():
    seen = []

    class FakeEndpoint:  # only what _validator_by_model reads: the model's name and its validator
        def __init__(self, name, validator):
            self.model = argparse.Namespace(name=name)
            self.validator = validator

    validate = _validator_by_model(
        [FakeEndpoint("a", lambda o, d, r: seen.append(("a", r.model))), FakeEndpoint("b", None)]
    )
    validate({}, {}, argparse.Namespace(model="a"))
    assert seen == [("a", "a")]
    validate({}, {}, argparse.Namespace(model="b"))  # b has no validator: nothing to check
    assert seen == [("a", "a")]
    assert _validator_by_model([FakeEndpoint("a", None)]) is None
