"""The converters of the KEY=VALUE grammars (`--shape-args` of every shape, `--vary` of tune).

A converter reads one value and returns it, or raises ValueError with what is wrong, worded
to follow the value ("must be positive"); the grammar's reader puts the key and the value
in front (`step_s='0' must be positive`) and the option and its accepted keys around it.

    positive = above(0)
    positive("2.5") == 2.5; positive("0")  # ValueError: must be positive
    whole(1)("0")                           # ValueError: must be at least 1
    listed(at_least(0), "e.g. targets=1;2;4", "must be numbers >= 0 separated by ';'")("1;2") == [1.0, 2.0]
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

T = TypeVar("T")
Converter = Callable[[str], T]


def number(text: str) -> float:
    """A finite number: 'is not a number', 'is not a finite number'."""
    try:
        value = float(text)
    except ValueError:
        raise ValueError("is not a number") from None
    if not math.isfinite(value):
        raise ValueError("is not a finite number")
    return value


def at_least(low: float, message: str = "") -> Converter[float]:
    """A finite number >= `low` ('must be >= 0' unless `message` words it)."""
    message = message or f"must be >= {low:g}"

    def convert(text: str) -> float:
        value = number(text)
        if value < low:
            raise ValueError(message)
        return value

    return convert


def above(low: float, message: str = "") -> Converter[float]:
    """A finite number > `low` ('must be positive' for 0 unless `message` words it)."""
    message = message or ("must be positive" if low == 0 else f"must be above {low:g}")

    def convert(text: str) -> float:
        value = number(text)
        if value <= low:
            raise ValueError(message)
        return value

    return convert


def whole(minimum: int) -> Converter[int]:
    """A whole number of at least `minimum`: 'is not a whole number', 'must be at least N'."""

    def convert(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise ValueError("is not a whole number") from None
        if value < minimum:
            raise ValueError(f"must be at least {minimum}")
        return value

    return convert


def one_of(choices: Iterable[str], fold: Callable[[str], str] = str) -> Converter[str]:
    """One of `choices` (compared after `fold`, e.g. str.upper): 'must be one of a, b'."""
    choices = tuple(choices)

    def convert(text: str) -> str:
        value = fold(text)
        if value not in choices:
            raise ValueError(f"must be one of {', '.join(choices)}")
        return value

    return convert


def switch(text: str) -> bool:
    """on or off (any case): 'must be on or off'."""
    value = {"on": True, "off": False}.get(text.lower())
    if value is None:
        raise ValueError("must be on or off")
    return value


def not_empty(text: str) -> str:
    """Any text but none: 'is empty'."""
    if not text:
        raise ValueError("is empty")
    return text


def listed(item: Converter[Any], example: str, wrong: str, separator: str = ";") -> Converter[list[Any]]:
    """Several `item`s joined by `separator` ('1;2;4'): 'is empty (expected e.g. ...)', or
    `wrong` and the example when one of them is not an item."""

    def convert(text: str) -> list[Any]:
        parts = [part.strip() for part in text.split(separator) if part.strip()]
        if not parts:
            raise ValueError(f"is empty (expected {example})")
        try:
            return [item(part) for part in parts]
        except ValueError:
            raise ValueError(f"{wrong} ({example})") from None

    return convert
