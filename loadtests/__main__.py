"""`python -m loadtests COMMAND` (installed: `triton-loadtest COMMAND`): the suite's command line
(serve, demo, sweep, capacity, tune, options, locustfile)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from loadtests.commands import capacity, demo, locustfile, option_list, sweep, tune
from loadtests.errors import StartupError
from loadtests.server import serve


def build_parser() -> argparse.ArgumentParser:
    # The console script (pip install) says its own name; `python -m loadtests` says that.
    prog = "triton-loadtest" if Path(sys.argv[0]).name == "triton-loadtest" else "python -m loadtests"
    parser = argparse.ArgumentParser(prog=prog, description=__doc__)
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    serve.add_parser(subparsers)
    demo.add_parser(subparsers)
    sweep.add_parser(subparsers)
    capacity.add_parser(subparsers)
    tune.add_parser(subparsers)
    option_list.add_parser(subparsers)
    locustfile.add_parser(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    # A command that passes options on to Locust (sweep, capacity, tune) takes the ones it does not know.
    args, extra = parser.parse_known_args(argv)
    if extra and not getattr(args, "pass_through", False):
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    args.extra = extra
    try:
        return args.run(args)
    except StartupError as error:
        print(f"error: {error}", file=sys.stderr)
        return error.exit_code


if __name__ == "__main__":
    sys.exit(main())
