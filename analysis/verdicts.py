"""A comparison's verdicts: for each ratio, whether the difference is beyond noise
(analysis.noise), and the first screen built from them: which configuration wins, by how
much, and at which load levels.

    figure_verdicts(base, other)      # {"p99 (ms)": "slower", "infer/s": "no difference beyond noise", ...}
    level_verdicts(base, other)       # per level (by position): (label, throughput verdict, p99 verdict)
    first_screen(group)               # the Verdict section's sentences for one matched endpoint
"""

from __future__ import annotations

import math

from analysis import noise
from analysis.levels import PERCENTILE_KEYS
from analysis.series import Series, who

INTERVAL_PERCENTILES = ("p50", "p90", "p95", "p99", "p99.9")


def throughput_interval(series: Series, start: float = -math.inf, end: float = math.inf) -> noise.Interval:
    return noise.window_interval(series.timeseries, series.window_s, start, end)


def _latency(series: Series, key: str) -> noise.Interval:
    endpoint = series.endpoint
    if endpoint is None or not endpoint.latency_ci_us:
        return None
    return noise.latency_interval(endpoint.latency_ci_us.get(key))


def figure_verdicts(base: Series, other: Series) -> dict[str, str]:
    """Verdicts for the figures that measure speed: infer/s and the bounded percentiles."""
    out = {"infer/s": noise.verdict(throughput_interval(base), throughput_interval(other), higher_is_faster=True)}
    for key in PERCENTILE_KEYS:
        if key in INTERVAL_PERCENTILES:
            out[f"{key} (ms)"] = noise.verdict(_latency(base, key), _latency(other, key), higher_is_faster=False)
    return out


def _step_bounds(series: Series) -> list[tuple[float, float]]:
    """Each step's [start, end) on the run clock; the first and last open-ended (as analysis.levels)."""
    bounds = [(float(step["start_s"]), float(step["end_s"])) for step in series.steps]
    if bounds:
        bounds[0], bounds[-1] = (-math.inf, bounds[0][1]), (bounds[-1][0], math.inf)
    return bounds


def _p99(record) -> noise.Interval:
    bounds = [record.get(key, math.nan) for key in ("p99_ci_lo_us", "p99_ci_hi_us")]
    return noise.latency_interval([None if v is None or math.isnan(v) else v for v in bounds])


def level_verdicts(base: Series, other: Series) -> list[tuple[str, str, str]]:
    """Per level, matched by position: (base's label, throughput verdict, p99 verdict)."""
    if base.levels is None or other.levels is None:
        return []
    bounds = [_step_bounds(base), _step_bounds(other)]
    out = []
    for i in range(min(len(base.levels), len(other.levels))):
        records = [base.levels.iloc[i].to_dict(), other.levels.iloc[i].to_dict()]
        rates = [
            throughput_interval(s, *b[i]) if len(b) > i else None for s, b in zip((base, other), bounds, strict=True)
        ]
        out.append(
            (
                str(records[0]["label"]),
                noise.verdict(rates[0], rates[1], higher_is_faster=True),
                noise.verdict(_p99(records[0]), _p99(records[1]), higher_is_faster=False),
            )
        )
    return out


def _ratio(a: float, b: float) -> float:
    return a / b if a and b and not math.isnan(a) and not math.isnan(b) else math.nan


def first_screen(base: Series, other: Series, throughput: tuple[float, float], p99: tuple[float, float]) -> list[str]:
    """Who wins, by how much, where: throughput and p99 as (base, other) values (infer/s, µs)."""
    verdicts = figure_verdicts(base, other)
    t_word, l_word = verdicts["infer/s"], verdicts["p99 (ms)"]
    words = {t_word, l_word}
    if noise.FASTER in words and noise.SLOWER not in words:
        winner, loser, w, lo = other, base, 1, 0
    elif noise.SLOWER in words and noise.FASTER not in words:
        winner, loser, w, lo = base, other, 0, 1
    else:
        winner = None
    if winner is not None:
        head = (
            f"{who(winner)} wins against {who(loser)}: {_ratio(throughput[w], throughput[lo]):.2f}x the throughput "
            f"({throughput[w]:,.1f} against {throughput[lo]:,.1f} infer/s; {_beyond(t_word)}), "
            f"p99 {_ratio(p99[w], p99[lo]):.2f}x ({p99[w] / 1000:,.3f} against {p99[lo] / 1000:,.3f} ms; "
            f"{_beyond(l_word)})."
        )
    elif words == {noise.FASTER, noise.SLOWER}:
        head = (
            f"Neither wins: {who(other)} is {t_word} than {who(base)} in throughput "
            f"({_ratio(throughput[1], throughput[0]):.2f}x) but {l_word} in p99 ({_ratio(p99[1], p99[0]):.2f}x)."
        )
    else:
        intervals = [_latency(side, "p99") for side in (base, other)]
        why = (
            f"95 % p99 intervals {_interval_ms(intervals[0])} and {_interval_ms(intervals[1])} ms"
            if None not in intervals
            else "a side has no p99 interval: a CSV holds none, a short run may have too few requests"
        )
        head = (
            f"{who(other)} against {who(base)}: throughput {_ratio(throughput[1], throughput[0]):.2f}x "
            f"({t_word}), p99 {_ratio(p99[1], p99[0]):.2f}x ({l_word}): "
            + ("neither wins beyond noise" if noise.NOISE in words else "no verdict")
            + f" ({why})."
        )
    return [head, _where(base, other)]


def _beyond(word: str) -> str:
    return "beyond the 95 % intervals" if word in (noise.FASTER, noise.SLOWER) else word


def _interval_ms(interval: noise.Interval) -> str:
    return noise.interval_text(interval, 1000.0)


def _where(base: Series, other: Series) -> str:
    levels = level_verdicts(base, other)
    if len(levels) < 2:
        return "One level: the whole run is the comparison."
    apart = [
        f"{label}: throughput {t}, p99 {p}"
        for label, t, p in levels
        if noise.FASTER in (t, p) or noise.SLOWER in (t, p)
    ]
    if all(word == noise.CANNOT_JUDGE for _, t, p in levels for word in (t, p)):
        return f"None of the {len(levels)} levels has intervals to judge noise by."
    if not apart:
        return f"At no level of {len(levels)} is {who(other)} faster or slower than {who(base)} beyond noise."
    return f"Where {who(other)} differs from {who(base)} beyond noise: " + "; ".join(apart) + "."
