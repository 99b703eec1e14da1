"""`python -m analysis report|compare`: reports from run directories and perf_analyzer CSVs.

    python -m analysis report runs/20261122T014233Z-demo
    python -m analysis report results.csv --out /tmp/pa
    python -m analysis compare runs/a runs/b --labels bert_qa,bert_qa_dynbatch
    python -m analysis check runs/a --slo "p99<50ms" --junit slo.xml
    python -m analysis first-screen runs/a     # the report's first lines: outcome, headline, diagnosis
    python -m analysis compare runs/main runs/pr --gate "p99<+10%,throughput>-5%" --junit gate.xml
    python -m analysis report gs://bucket/runs/20261122T014233Z-demo   # what --upload wrote

A run may be a URL (gs://, s3://, file://, memory://; what `--upload` writes; gs:// needs gcsfs,
s3:// s3fs): it is copied into a temporary directory through fsspec
(loadtests/run_format/storage.py) and read from there like a local run, and the copy is removed
when the command ends (`local_sources`); a report of it goes to --out (default
runs/<run name>-report). A local path is used as it is.

Prints the HTML path. Input it cannot use (missing, not a run directory, malformed file,
runs that are not comparable, an --out or --junit that cannot be written, a malformed --gate)
is one line on stderr and exit code 2; a write that fails anyway (disk full, say) is one line and
exit code 4. compare --gate exits 3 when a clause regressed beyond noise (analysis/gate.py).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from analysis.check import check_run
from loadtests.errors import SpecError
from loadtests.run_format.output_paths import EXIT_OUTPUT_FAILED, directory_problem
from loadtests.run_format.storage import download, is_url

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
    compare.add_argument(
        "--gate",
        metavar="CLAUSES",
        help="fail (exit 3) when the second run regressed against the first beyond noise, e.g. "
        "'p99<+10%%,throughput>-5%%,fail_ratio<+0.5%%' (docs/guides/ci.md)",
    )
    compare.add_argument("--junit", metavar="FILE", help="with --gate: the clauses' verdicts as JUnit XML")
    # SLO gates on a finished run: analysis/check.py (exit 0 pass, 3 a clause failed, 2 bad input).
    check = commands.add_parser("check", help="evaluate SLO clauses on a finished run directory")
    check.add_argument("run_dir", metavar="RUN_DIR")
    check.add_argument(
        "--slo", default=None, help="clauses, e.g. 'p99<50ms@95%%,fail_ratio<1%%' (default: the run's own)"
    )
    check.add_argument("--junit", default=None, metavar="FILE", help="also write the results as JUnit XML")
    screen = commands.add_parser(
        "first-screen", help="print what a run's report says first: outcome, headline, first diagnosis"
    )
    screen.add_argument("run_dir", metavar="RUN_DIR")
    screen.add_argument("--json", action="store_true", help="as a JSON list (the web UI's health line reads it)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    single = args.command in ("check", "first-screen")
    sources = [args.run_dir] if single else [args.source] if args.command == "report" else args.sources
    try:
        with local_sources(sources) as local:
            return _run(args, sources, local)
    except SpecError as error:  # a URL that cannot be read
        print(f"error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT


def _run(args: argparse.Namespace, sources: list[str], local: list[str]) -> int:
    if args.command == "check":
        return check_run(local[0], args.slo, args.junit)  # without pandas and matplotlib: fast in CI
    if args.command == "first-screen":
        return _first_screen(local[0], args.json)  # without matplotlib: the web UI asks it during a run
    from analysis.compare import NotComparableError, compare_and_gate, default_out_dir
    from analysis.dataset import SourceError
    from analysis.gate import EXIT_REGRESSED, write_junit
    from analysis.gate import summary_lines as gate_lines
    from analysis.report import write_report
    from loadtests.run_format.slo.relative import GateError, parse_gate

    try:
        problem = directory_problem(args.out) if args.out else None
        if problem:
            raise SourceError(f"--out {args.out}: {problem}")
        if args.command == "report":
            out = args.out or (f"runs/{source_name(sources[0])}-report" if is_url(sources[0]) else None)
            path = write_report(local[0], out)
        else:
            if len(local) < 2:
                raise SourceError("compare needs at least two runs")
            labels = args.labels.split(",") if args.labels else [source_name(s) for s in sources]
            out = Path(args.out) if args.out else default_out_dir()
            if args.junit and not args.gate:
                raise SourceError("--junit needs --gate")
            if args.junit and (problem := directory_problem(str(Path(args.junit).parent or "."))):
                raise SourceError(f"--junit {args.junit}: {problem}")
            gate = parse_gate(args.gate) if args.gate is not None else None
            path, results = compare_and_gate(local, labels, out, force=args.force, gate=gate)
            if gate is not None:
                print(path)
                print("\n".join(gate_lines(results)))
                if args.junit:
                    write_junit(args.junit, results)
                return EXIT_REGRESSED if any(result.failed for result in results) else 0
    except (SourceError, NotComparableError, GateError) as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except OSError as error:  # checked above, yet the write failed (disk full, a read-only run directory)
        print(f"error: {args.command}: {error.filename}: {error.strerror or error}", file=sys.stderr)
        return EXIT_OUTPUT_FAILED
    print(path)
    return 0


def _first_screen(path: str, as_json: bool) -> int:
    import json

    from analysis.dataset import SourceError, load
    from analysis.outcome import first_screen
    from analysis.run import RunDirectoryError

    try:
        data = load(path)
        if data.kind != "run":
            raise SourceError(f"{path}: first-screen reads a run directory")
        lines = first_screen(data)
    except (SourceError, RunDirectoryError) as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    print(json.dumps(lines) if as_json else "\n".join(lines))
    return 0


def source_name(source: str) -> str:
    """The run's name, for labels and default output directories: its last path component."""
    return source.rstrip("/").rpartition("/")[2] if is_url(source) else Path(source).name


@contextmanager
def local_sources(sources: list[str]) -> Iterator[list[str]]:
    """Local paths for `sources`, URLs downloaded; raises SpecError (one line) for a URL that cannot be read.

    with local_sources(["gs://bucket/runs/a", "runs/b"]) as (a, b):
        write_comparison([a, b], ...)
    """
    if not any(is_url(source) for source in sources):
        yield list(sources)
        return
    with tempfile.TemporaryDirectory(prefix="triton-loadtest-runs-") as temporary:
        local = []
        for index, source in enumerate(sources):
            if is_url(source):
                into = Path(temporary) / str(index) / (source_name(source) or f"run{index}")
                local.append(str(download(source.rstrip("/"), into, option="")))
            else:
                local.append(source)
        yield local


if __name__ == "__main__":
    sys.exit(main())
