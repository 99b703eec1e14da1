"""`python -m loadtests options`: the suite's Locust options grouped by task, each with its
default and LOCUST_ variable (Locust's own --help cannot show them: it prints before it
loads the locustfile).

    python -m loadtests options
"""

from __future__ import annotations

import argparse

from loadtests.commands.args import subcommand
from loadtests.options import groups as option_groups
from loadtests.options import table as options


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subcommand(
        subparsers, "options", "list the suite's options for locust -f locustfile.py, grouped by task", __doc__
    )
    parser.set_defaults(run=run_options)


def suite_parser() -> argparse.ArgumentParser:
    """A parser holding the suite's options only, with the defaults a run has."""
    # Imported here, not by `python -m loadtests`: importing locust patches the standard
    # library for gevent, which the other commands (serve, sweep, ...) must not get.
    from locust.argument_parser import LocustArgumentParser

    parser = LocustArgumentParser(add_help=False)
    options.add_arguments(parser)
    return parser


def run_options(_args: argparse.Namespace) -> int:
    print(option_groups.listing(suite_parser()))
    return 0
