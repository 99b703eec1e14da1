"""`make bench-gate` (`python -m bench.gate`): what the regression gate catches on this machine.

The gate (`compare --gate`, analysis/gate.py) judges a candidate run against a baseline run.
This bench measures, against a real local Triton in explicit model-control mode serving
`sleep_10ms_single` (one instance, `sleep_ms` per request, set by its config), with USERS
closed-loop HTTP users, for each run length in LENGTHS_S, three runs back to back:

    baseline    sleep_ms 10
    same        sleep_ms 10 again, gated against the baseline: should pass
    slower      sleep_ms 13 (the model reloaded over the same name, 30 % slower), gated: should fail

Each gated run is `locust ... --baseline BASELINE_RUN --gate GATE` (its exit code is the one
reported); the verdicts, figures and intervals are `analysis.compare.compare_and_gate` on the
same two run directories (the same code, the same fixed seed, so the same verdicts).

From the same-configuration pair it derives the smallest change a clause with no allowance
would flag at that length (smallest_flagged: the gate's own rule, inverted): a change smaller
than that reads "within noise". At CHECK_LENGTH_S, candidates slowed by CHECK_FACTORS times
that amount show whether the gate flags them, and at the shortest length one 10 % slower
under TEN_PERCENT_GATE answers the docs' question. The 1-min load average (`os.getloadavg()`)
is taken at the end of every run, since the host is shared.

    python -m bench.gate [--lengths 10,20,40,80] [--check-length 20] [--output bench/gate_results.md]

Writes bench/gate_results.md (the command, date and host, every gate line, the table) and prints it.
"""

from __future__ import annotations

import argparse
import copy
import os
import platform
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from analysis.compare import compare_and_gate
from analysis.gate import CANNOT_JUDGE, EXIT_REGRESSED, GateResult
from loadtests.run_format.slo.relative import parse_gate
from loadtests.server import TEST_REPOSITORY, LocalTriton
from loadtests.server.launcher import locust_command
from loadtests.server.serve import model_control_args
from loadtests.tuning.repository_api import RepositoryApi

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
MODEL = "sleep_10ms_single"
WORKLOAD = ("TritonHttpUser", "--model", MODEL, "--shape", "INPUT0:16")
USERS = 2  # closed loop: each user sends its next request when the last one returns
BASE_SLEEP_MS = 10.0
SLOWER = 0.30  # the regression every length must catch
LENGTHS_S = (10, 20, 40, 80)
GATE = "p50<+10%,p99<+10%,throughput>-5%,fail_ratio<+0.5%"
CHECK_LENGTH_S = 20
CHECK_FACTORS = (1, 2, 4)  # check candidates: slowed by this many times the measured threshold
MIN_STEP_PERCENT = 0.5
TEN_PERCENT = 0.10  # the docs' question: does the shortest run catch a 10 % regression?
TEN_PERCENT_GATE = "p50<+5%,throughput>-5%"
CHECK_GATE = "p50<+0%"  # no allowance: the smallest_flagged figures are for such a clause
NOISE_METRICS = ("p50", "p99", "throughput")
RUN_TIMEOUT_S = 180  # beyond the run's own length: start, the stop, the gate's comparison


@dataclass(frozen=True)
class Run:
    run_dir: Path
    sleep_ms: float
    exit_code: int
    load_1min: float  # os.getloadavg()[0] when the run ended


@dataclass(frozen=True)
class Comparison:
    """One gated candidate against its baseline: the gate's results and the runs' conditions."""

    name: str
    length_s: int
    baseline: Run
    candidate: Run
    gate: str
    results: tuple[GateResult, ...]

    def result(self, metric: str) -> GateResult | None:
        return next((result for result in self.results if result.clause.metric == metric), None)

    def lines(self) -> list[str]:
        """The gate's own lines, and the exit code of the gated load test."""
        head = (
            f"**{self.name}**, {self.length_s} s runs (sleep_ms {self.baseline.sleep_ms:g} -> "
            f"{self.candidate.sleep_ms:g}; load average {self.baseline.load_1min:.1f} / "
            f'{self.candidate.load_1min:.1f}), `--gate "{self.gate}"`: exit code {self.candidate.exit_code}'
        )
        return [head, "", *(f"- `{result.line()}`" for result in self.results), ""]


def smallest_flagged(result: GateResult) -> float | None:
    """The change (percent) that a clause of this metric with no allowance would just flag,
    for runs as noisy as this pair: the gate's rule inverted. A latency regresses when the
    candidate's lower bound is above the baseline's upper bound; scaling the candidate by
    1 + d moves its lower bound, so d must exceed 1 / (1 + low) - 1, where low is the pair's
    interval's lower bound. A rate regresses when the candidate's upper bound is below the
    baseline's lower bound: a drop beyond 1 / (1 + high) - 1 (negative). A clause allowing
    N % flags about N % more. None when the gate could not judge the pair."""
    if result.difference is None:
        return None
    low, high = result.difference
    if result.clause.higher_is_worse:
        return (1 / (1 + low / 100) - 1) * 100
    return (1 / (1 + high / 100) - 1) * 100


def _interval(result: GateResult | None) -> str:
    if result is None or result.difference is None:
        return CANNOT_JUDGE
    low, high = result.difference
    return f"{low:+.1f} to {high:+.1f} %"


def _change(result: GateResult | None) -> str:
    if result is None or not result.baseline or result.candidate is None:
        return CANNOT_JUDGE
    return f"{(result.candidate / result.baseline - 1) * 100:+.1f} %"


def _flagged(result: GateResult | None) -> str:
    change = None if result is None else smallest_flagged(result)
    return "-" if change is None else f"{change:+.1f} %"


def noise_row(same: Comparison, slower: Comparison) -> str:
    """A length's row: the same-configuration pair's intervals and thresholds, the slower
    candidate's verdicts, the load averages."""
    cells = [f"{same.length_s} s"]
    for metric in NOISE_METRICS:
        result = same.result(metric)
        cells += [_interval(result), _flagged(result)]
    for metric in NOISE_METRICS:
        result = slower.result(metric)
        change = _change(result)
        cells.append(change if result is None or change == CANNOT_JUDGE else f"{change} {result.verdict}")
    cells += [f"{same.candidate.exit_code} / {slower.candidate.exit_code}"]
    loads = (same.baseline.load_1min, same.candidate.load_1min, slower.candidate.load_1min)
    cells.append(" / ".join(f"{load:.1f}" for load in loads))
    return "| " + " | ".join(cells) + " |"


NOISE_HEADER = (
    "| run length | p50 interval (same config) | p50 smallest flagged | p99 interval | p99 smallest flagged "
    "| throughput interval | throughput smallest flagged | 30 % slower: p50 | p99 | throughput "
    "| exit codes same / slower | load avg base / same / slower |\n"
    "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
)


def check_row(check: Comparison) -> str:
    """A check candidate's row: how much slower it was made, its p50's change and verdict."""
    result = check.result("p50")
    verdict = result.verdict if result is not None else CANNOT_JUDGE
    loads = f"{check.baseline.load_1min:.1f} / {check.candidate.load_1min:.1f}"
    return (
        f"| {check.length_s} s | {check.name} | {check.candidate.sleep_ms:.2f} | {_change(result)} "
        f"| {_interval(result)} | `{check.gate}` | {verdict} | {check.candidate.exit_code} | {loads} |"
    )


CHECK_HEADER = (
    "| run length | candidate | sleep_ms | p50 change | p50 interval | gate | p50 verdict | exit code "
    "| load avg base / candidate |\n"
    "| ---: | --- | ---: | ---: | ---: | --- | --- | ---: | ---: |"
)


class Bench:
    """The local Triton, the model's configuration, and the runs made so far."""

    def __init__(self, triton: LocalTriton, workdir: Path) -> None:
        self.triton = triton
        self.workdir = workdir
        self.api = RepositoryApi(triton.http_address)
        self.config = self.api.config(MODEL)
        self.sleep_ms: float | None = None
        self.count = 0

    def set_sleep(self, sleep_ms: float) -> None:
        """Reload the model over the same name with `sleep_ms` (a config override)."""
        if sleep_ms == self.sleep_ms:
            return
        config = copy.deepcopy(self.config)
        config["parameters"]["sleep_ms"]["string_value"] = f"{sleep_ms:g}"
        self.api.load(MODEL, config)
        self.sleep_ms = sleep_ms

    def run(self, length_s: int, sleep_ms: float, baseline: Run | None = None, gate: str = GATE) -> Run:
        """One load test; with a baseline, gated against it at its end (`--baseline --gate`)."""
        self.set_sleep(sleep_ms)
        self.count += 1
        run_dir = self.workdir / f"{self.count:02d}-{length_s}s-{sleep_ms:g}ms"
        options = ["--baseline", str(baseline.run_dir), "--gate", gate] if baseline else []
        users = str(USERS)
        command = locust_command("-u", users, "-r", users, "-t", f"{length_s}s", *WORKLOAD, *self.triton.options)
        command += ["--run-dir", str(run_dir), *options]
        result = subprocess.run(
            command, capture_output=True, text=True, timeout=length_s + RUN_TIMEOUT_S, cwd=REPO_ROOT,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
        if result.returncode not in (0, EXIT_REGRESSED):
            raise SystemExit(f"error: the load test failed ({result.returncode}): {result.stderr.strip()[-800:]}")
        run = Run(run_dir, sleep_ms, result.returncode, os.getloadavg()[0])
        print(f"  {run_dir.name}: exit code {run.exit_code}, load average {run.load_1min:.1f}", flush=True)
        return run

    def gated(self, name: str, length_s: int, baseline: Run, sleep_ms: float, gate: str = GATE) -> Comparison:
        """A candidate run gated against `baseline`, and the gate's results on the two runs."""
        candidate = self.run(length_s, sleep_ms, baseline, gate)
        _path, results = compare_and_gate(
            [baseline.run_dir, candidate.run_dir], ["baseline", "candidate"], candidate.run_dir / "gate-bench",
            gate=parse_gate(gate),
        )  # fmt: skip
        comparison = Comparison(name, length_s, baseline, candidate, gate, tuple(results))
        expected = EXIT_REGRESSED if any(result.failed for result in results) else 0
        if candidate.exit_code != expected:
            print(f"warning: the load test exited {candidate.exit_code}, its gate's verdicts mean {expected}")
        return comparison


def measure(bench: Bench, lengths: list[int], check_length: int) -> tuple[list[Comparison], list[Comparison]]:
    """For each length: baseline, the same again, 30 % slower; then the checks (check_candidates)."""
    comparisons, checks = [], []
    for length_s in lengths:
        print(f"{length_s} s runs:", flush=True)
        baseline = bench.run(length_s, BASE_SLEEP_MS)
        same = bench.gated("The same configuration", length_s, baseline, BASE_SLEEP_MS)
        slower = bench.gated(f"{SLOWER * 100:.0f} % slower", length_s, baseline, BASE_SLEEP_MS * (1 + SLOWER))
        comparisons += [same, slower]
        for name, sleep_ms, gate in check_candidates(same, length_s == check_length, length_s == min(lengths)):
            checks.append(bench.gated(name, length_s, baseline, sleep_ms, gate))
    return comparisons, checks


def check_candidates(same: Comparison, threshold_check: bool, shortest: bool) -> list[tuple[str, float, str]]:
    """(name, sleep_ms, gate) of the candidates checked against this length's baseline: at the
    check length, the sleep raised by CHECK_FACTORS x the p50 threshold of the same-config pair
    (`p50<+0%`); at the shortest length, TEN_PERCENT slower under TEN_PERCENT_GATE."""
    candidates = []
    threshold = smallest_flagged(same.result("p50")) if same.result("p50") else None
    if threshold_check and threshold is not None:
        step = max(threshold, MIN_STEP_PERCENT)  # a pair already apart (threshold <= 0) still gets a step
        candidates += [
            (f"{factor}x the p50 threshold ({threshold:+.1f} %)", BASE_SLEEP_MS * (1 + factor * step / 100), CHECK_GATE)
            for factor in CHECK_FACTORS
        ]
    if shortest:
        candidates.append((f"{TEN_PERCENT * 100:.0f} % slower", BASE_SLEEP_MS * (1 + TEN_PERCENT), TEN_PERCENT_GATE))
    return candidates


def document(comparisons: list[Comparison], checks: list[Comparison], argv: list[str], started: datetime) -> str:
    pairs = [(comparisons[i], comparisons[i + 1]) for i in range(0, len(comparisons), 2)]
    command = " ".join(["python -m bench.gate", *argv])
    lines = [
        "# Gate benchmark: what a run of a given length detects (bench/gate.py)",
        "",
        f"Command: `{command}` (`make bench-gate`), {started:%Y-%m-%d %H:%M} UTC, host `{platform.node()}` "
        f"({os.cpu_count()} CPUs, shared with other work; 1-min load average at the end of each run).",
        "",
        f"Model `{MODEL}` (one instance, no batching; `sleep_ms` per request, set by its config, reloaded "
        f"over the same name in explicit model-control mode) on the local Triton; {USERS} closed-loop "
        "`TritonHttpUser`s, INPUT0 [16], 1-s windows. For each length, back to back: a baseline at "
        f"sleep_ms {BASE_SLEEP_MS:g}, the same configuration again, and the model {SLOWER * 100:.0f} % slower "
        f"(sleep_ms {BASE_SLEEP_MS * (1 + SLOWER):g}), each gated against the baseline with "
        f'`--baseline BASELINE --gate "{GATE}"`.',
        "",
        "## What a run of each length detects",
        "",
        "Intervals: the gate's 95 % interval on the relative difference between two runs of the same "
        "configuration. Smallest flagged: the change a clause with no allowance (`p50<+0%`) flags at "
        "that noise (the gate's rule inverted: a latency rise beyond 1/(1+low)-1, a throughput drop "
        "beyond 1/(1+high)-1); a clause allowing N % needs about N % more. The 30 % slower columns: "
        f'the measured change and the verdict of `"{GATE}"`\'s clause.',
        "",
        NOISE_HEADER,
        *(noise_row(same, slower) for same, slower in pairs),
        "",
    ]
    if checks:
        lines += [
            "## Checks: candidates slowed by about the threshold, and by 10 %",
            "",
            "Each gated against its length's baseline: the sleep raised by "
            + ", ".join(f"{factor}x" for factor in CHECK_FACTORS)
            + " the p50 threshold of that length's same-configuration pair (judged with no allowance), "
            f"and {TEN_PERCENT * 100:.0f} % slower at the shortest length. A sleep raised by x % raises the p50 by a "
            f"little less than x % ({USERS} users on one instance: a request waits out the other's sleep and "
            "its own; the rest of its latency is not sleep).",
            "",
            CHECK_HEADER,
            *(check_row(check) for check in checks),
            "",
        ]
    lines += ["## Every gate line", ""]
    for comparison in [*comparisons, *checks]:
        lines += comparison.lines()
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.gate", description=__doc__)
    parser.add_argument("--lengths", default=",".join(map(str, LENGTHS_S)), help="run lengths in seconds")
    parser.add_argument("--check-length", type=int, default=CHECK_LENGTH_S, help="length of the threshold check")
    parser.add_argument("--output", type=Path, default=BENCH_DIR / "gate_results.md")
    argv = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(argv)
    lengths = [int(length) for length in args.lengths.split(",")]
    started, clock = datetime.now(UTC), time.monotonic()
    with (
        tempfile.TemporaryDirectory(prefix="bench-gate-") as tmp,
        LocalTriton([TEST_REPOSITORY], extra_args=model_control_args("explicit", [MODEL])) as triton,
    ):
        comparisons, checks = measure(Bench(triton, Path(tmp)), lengths, args.check_length)
    text = document(comparisons, checks, argv, started)
    text += f"\nThe bench took {(time.monotonic() - clock) / 60:.1f} min.\n"
    args.output.write_text(text)
    print(text)
    print(f"Written to {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
