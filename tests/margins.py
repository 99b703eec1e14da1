"""The margins the measurement tier keeps: `python -m tests.margins`.

Each timing check in tests/measurement/ records how far inside its bound the value stayed
(tests/measurement/conftest.py, `bound`). This runs the tier several times, optionally beside
other test folders (what `make test`'s step 1 would run beside it on a busy machine), keeps each
run's checks (a JSON line each, DIR/run-K.jsonl) and pytest's output (DIR/run-K.log), and prints,
per check, its bound, the worst value and the smallest and median headroom over the runs, worst
first:

    python -m tests.margins --runs 10 --beside tests/system/workloads --out /tmp/margins
    python -m tests.margins --table /tmp/margins          # the table again, from the lines kept

A headroom is how far inside its bounds a value stayed: against one bound, the distance over the
bound (0.20 for a p99 of 80 ms under 100 ms); between two, the distance to the nearer over half
the range (1 at the centre, 0 at an edge). A check that failed shows a negative one.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

from tests.measurement.conftest import MARGINS_FILE

REPO_ROOT = Path(__file__).resolve().parent.parent
MEASUREMENT = "tests/measurement"


def read_margins(files: list[Path]) -> dict[tuple[str, str], list[dict]]:
    """{(test, check): [the recorded value and bounds, one per run]} from the runs' JSON lines."""
    found: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for path in files:
        for line in path.read_text().splitlines():
            record = json.loads(line)
            found[(record["test"].split("/")[-1], record["check"])].append(record)
    return found


def _bounds(record: dict) -> str:
    low, high = record["low"], record["high"]
    if low is not None and high is not None:
        return f"{low:.4g} to {high:.4g}"
    return f">= {low:.4g}" if low is not None else f"<= {high:.4g}"


def table(margins: dict[tuple[str, str], list[dict]]) -> str:
    rows = []
    for (test, check), records in margins.items():
        kept = [record["headroom"] for record in records]
        worst = min(records, key=lambda record: record["headroom"])
        rows.append((min(kept), test, check, _bounds(worst), worst["value"], statistics.median(kept), len(kept)))
    rows.sort()
    lines = ["| test | check | bound | worst value | least headroom | median headroom | runs |", "|---" * 7 + "|"]
    for least, test, check, bounds, value, median, runs in rows:
        lines.append(f"| {test} | {check} | {bounds} | {value:.4g} | {least:.1%} | {median:.1%} | {runs} |")
    return "\n".join(lines)


def run(runs: int, beside: list[str], out: Path, tier: list[str]) -> list[Path]:
    """Run the tier `runs` times (each beside `beside`, if any), each run's pytest output kept in
    DIR/run-K.log; the logs of the runs that failed."""
    out.mkdir(parents=True, exist_ok=True)
    failed = []
    for index in range(runs):
        background = None
        if beside:
            command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *beside]
            background = subprocess.Popen(command, cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        lines = out / f"run-{index + 1}.jsonl"
        lines.unlink(missing_ok=True)
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tier]
        env = {**os.environ, MARGINS_FILE: str(lines)}
        result = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, env=env)
        if background is not None:
            background.terminate()
            background.wait(timeout=60)
        last = result.stdout.strip().splitlines()[-1:] or ["(no output)"]
        print(f"run {index + 1}: {last[0]}", flush=True)
        log = out / f"run-{index + 1}.log"
        log.write_text(result.stdout + result.stderr)
        if result.returncode != 0:
            failed.append(log)
    return failed


def main(argv: list[str] | None = None, tier: tuple[str, ...] = (MEASUREMENT,)) -> int:
    """0 when every run passed (or only the table was asked for), 1 when a run failed (its
    checks are in the table, the failed one first), 2 when nothing was recorded."""
    parser = argparse.ArgumentParser(prog="python -m tests.margins", description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="how many times to run the tier (default 10)")
    parser.add_argument("--beside", nargs="*", default=[], help="test paths to run beside each run, as load")
    parser.add_argument("--out", type=Path, help="directory for each run's checks (run-K.jsonl)")
    parser.add_argument("--table", type=Path, metavar="DIR", help="print the table from the runs in DIR; run nothing")
    args = parser.parse_args(argv)
    if args.table is None and args.out is None:
        parser.error("give --out DIR (to run) or --table DIR (to read)")
    failed = [] if args.table is not None else run(args.runs, args.beside, args.out, list(tier))
    directory = args.table or args.out
    margins = read_margins(sorted(directory.glob("*.jsonl")))
    if not margins:
        print(f"error: no margins recorded in {directory}/*.jsonl", file=sys.stderr)
        return 2
    print(table(margins))
    if failed:
        print(f"error: a run failed: its pytest output is in {', '.join(map(str, failed))}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
