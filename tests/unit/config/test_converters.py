"""The one converter set of the KEY=VALUE grammars (--shape-args of every shape, --vary)."""

from __future__ import annotations

import pytest

from loadtests.config.converters import above, at_least, listed, not_empty, number, one_of, switch, whole


@pytest.mark.parametrize(
    ("convert", "text", "value"),
    [
        (number, "-2.5", -2.5),
        (at_least(0), "0", 0.0),
        (above(0), "1e-3", 0.001),
        (above(1, "must be a number above 1"), "1.5", 1.5),
        (whole(1), "3", 3),
        (whole(0), "0", 0),
        (one_of(("users", "rate")), "rate", "rate"),
        (one_of(("KIND_CPU", "KIND_GPU"), str.upper), "kind_gpu", "KIND_GPU"),
        (switch, "ON", True),
        (switch, "off", False),
        (not_empty, "trace.csv", "trace.csv"),
        (listed(at_least(0), "e.g. targets=1;2", "must be numbers"), " 1; 2 ;4", [1.0, 2.0, 4.0]),
    ],
)
def test_a_good_value_is_read(convert, text, value):
    assert convert(text) == value
    assert convert(str(value) if not isinstance(value, (bool, list)) else text) == value  # read back: the same


@pytest.mark.parametrize(
    ("convert", "text", "message"),
    [
        (number, "ten", "is not a number"),
        (number, "inf", "is not a finite number"),
        (at_least(0), "-1", "must be >= 0"),
        (at_least(0, "must be a percentage >= 0"), "-1", "must be a percentage >= 0"),
        (at_least(0), "nan", "is not a finite number"),
        (above(0), "0", "must be positive"),
        (above(1), "1", "must be above 1"),
        (above(0, "must be a positive number"), "x", "is not a number"),
        (whole(1), "1.5", "is not a whole number"),
        (whole(3), "2", "must be at least 3"),
        (one_of(("users", "rate")), "qps", "must be one of users, rate"),
        (switch, "maybe", "must be on or off"),
        (not_empty, "", "is empty"),
        (listed(above(0), "e.g. levels=1;2", "must be positive numbers"), " ; ", "is empty (expected e.g. levels=1;2)"),
        (
            listed(above(0), "e.g. levels=1;2", "must be positive numbers"),
            "1;0",
            "must be positive numbers (e.g. levels=1;2)",
        ),
    ],
)
def test_a_bad_value_says_what_is_wrong(convert, text, message):
    with pytest.raises(ValueError) as refused:
        convert(text)
    assert str(refused.value) == message


def test_every_grammar_uses_the_one_set():
    """No shape-argument grammar or --vary defines converters of its own any more."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[3] / "loadtests"
    grammars = ["traffic/shape_args.py", "levels/sweep_args.py", "levels/capacity_levels.py", "tuning/variants.py"]
    own = {
        f"{name}:{node.name}"
        for name in grammars
        for node in ast.walk(ast.parse((root / name).read_text()))
        if isinstance(node, ast.FunctionDef)
        and node.name
        in {"_number", "_level", "_positive", "_count", "_kind", "_switch", "_file", "_above_one"}
        | {"int_arg", "percent_arg", "_limit_arg", "_kind_arg", "_levels_arg", "_worded"}
    }
    assert own == set()
