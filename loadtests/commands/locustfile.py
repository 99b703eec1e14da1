"""`python -m loadtests locustfile` (or `triton-loadtest locustfile`): the path of the suite's own
locustfile, for Locust's -f wherever the package is installed:

    locust -f $(triton-loadtest locustfile) --headless -u 4 -t 1m TritonHttpUser --model NAME
    locust -f $(triton-loadtest locustfile),mine.py ...     # beside a locustfile of your own
"""

from __future__ import annotations

import argparse

from loadtests.commands.args import subcommand
from loadtests.server.launcher import SUITE_LOCUSTFILE


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subcommand(subparsers, "locustfile", "print the path of the suite's locustfile (for locust -f)", __doc__)
    parser.set_defaults(run=run_locustfile)


def run_locustfile(_args: argparse.Namespace) -> int:
    print(SUITE_LOCUSTFILE)
    return 0
