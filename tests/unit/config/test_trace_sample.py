"""--trace-sample's value: a percentage, turned into Triton's 1-in-N rate once."""

from __future__ import annotations

import pytest

from loadtests.config.trace_sample import TraceSample
from loadtests.errors import SpecError


@pytest.mark.parametrize(("text", "fraction", "rate"), [("1%", 0.01, 100), ("100%", 1.0, 1), ("0.3 %", 0.003, 333)])
def test_a_percentage_becomes_tritons_one_in_n(text, fraction, rate):
    sample = TraceSample.parse(text)
    assert sample.fraction == pytest.approx(fraction)
    assert sample.triton_rate == rate


@pytest.mark.parametrize("text", ["1", "0%", "101%", "abc", "-5%", "nan%", ""])
def test_anything_else_is_refused_with_the_option_named(text):
    with pytest.raises(SpecError, match="--trace-sample"):
        TraceSample.parse(text)
