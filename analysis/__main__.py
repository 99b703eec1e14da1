"""`python -m analysis report|compare`: reports from run directories and perf_analyzer CSVs.

    python -m analysis report runs/20261122T014233Z-demo
    python -m analysis report results.csv --out /tmp/pa
    python -m analysis compare runs/a runs/b --labels bert_qa,bert_qa_dynbatch
    python -m analysis check runs/a --slo "p99<50ms" --junit slo.xml

Prints the HTML path. Input it cannot use (missing, not a run directory, malformed file,
runs that are not comparable, an --out or --junit that cannot be written) is one line on
stderr and exit code 2; a write that fails anyway (disk full, say) is one line and exit code 4.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from analysis.check import check_run
from loadtests.run_format.output_paths import EXIT_OUTPUT_FAILED, directory_problem

EXIT_BAD_INPUT = 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m analysis", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    report = commands.add_parser("report", help="report.html/report.md/PNGs for one run or perf_analyzer CSV")
    report.add_argument("source", metavar="RUN_DIR|CSV", help="a run directory or a perf_analyzer -f CSV")
    report.add_argument("--out", metavar="DIR", help="write here instead of the run directory / beside the CSV")
    compare = commands.add_parser("compare", help="compare.html/compare.md/PNGs for two or more runs")
    compare.add_argument("sources", nargs="+", metavar="RUN_DIR|CSV", help="two or more runs")
    compare.add_argument("--labels", help="comma-separated names, one per run (default: directory names)")
    compare.add_argument("--out", metavar="DIR", help="output directory (default: runs/compare-<UTC time>)")
    compare.add_argument("--force", action="store_true", help="compare runs even if their traffic differs")
    # SLO gates on a finished run: analysis/check.py (exit 0 pass, 3 a clause failed, 2 bad input).
    check = commands.add_parser("check", help="evaluate SLO clauses on a finished run directory")
    check.add_argument("run_dir", metavar="RUN_DIR")
    check.add_argument(
        "--slo", default=None, help="clauses, e.g. 'p99<50ms@95%%,fail_ratio<1%%' (default: the run's own)"
    )
    check.add_argument("--junit", default=None, metavar="FILE", help="also write the results as JUnit XML")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "check":
        return check_run(args.run_dir, args.slo, args.junit)  # without pandas and matplotlib: fast in CI
    from analysis.compare import NotComparableError, default_out_dir, write_comparison
    from analysis.dataset import SourceError
    from analysis.report import write_report

    try:
        problem = directory_problem(args.out) if args.out else None
        if problem:
            raise SourceError(f"--out {args.out}: {problem}")
        if args.command == "report":
            path = write_report(args.source, args.out)
        else:
            if len(args.sources) < 2:
                raise SourceError("compare needs at least two runs")
            labels = args.labels.split(",") if args.labels else [Path(s).name for s in args.sources]
            out = Path(args.out) if args.out else default_out_dir()
            path = write_comparison(args.sources, labels, out, force=args.force)
    except (SourceError, NotComparableError) as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except OSError as error:  # checked above, yet the write failed (disk full, a read-only run directory)
        print(f"error: {args.command}: {error.filename}: {error.strerror or error}", file=sys.stderr)
        return EXIT_OUTPUT_FAILED
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
