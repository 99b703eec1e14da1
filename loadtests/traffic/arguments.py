"""`--load-shape` and `--shape-args` on Locust's parser."""

from __future__ import annotations

from typing import Any

from loadtests.traffic.constants import NO_SHAPE
from loadtests.traffic.table import SHAPE_NAMES


def add_arguments(parser: Any) -> None:
    """Register `--load-shape` and `--shape-args` on Locust's parser (once).

    On the parser itself, not in an argument group: Locust's web UI form lists only
    options added by `LocustArgumentParser.add_argument` (it marks them include_in_web_ui).
    """
    if "--shape-args" in getattr(parser, "_option_string_actions", {}):
        return
    parser.add_argument(
        "--load-shape",
        env_var="LOCUST_LOAD_SHAPE",
        default=NO_SHAPE,
        choices=(NO_SHAPE, *SHAPE_NAMES),
        help=(
            f"load shape: {NO_SHAPE} (the -u/-r/-t users), {', '.join(SHAPE_NAMES[:-1])} or {SHAPE_NAMES[-1]} "
            "[env LOCUST_LOAD_SHAPE]"
        ),
    )
    parser.add_argument(
        "--shape-args",
        env_var="LOCUST_SHAPE_ARGS",
        default="",
        metavar="KEY=VALUE,...",
        help=(
            "the load shape's parameters, e.g. steps: targets=1;2;4;8,step_s=30 | "
            "ramp: start=1,end=32,duration_s=120,hold_s=60 | "
            "spike: baseline=2,peak=20,at_s=60,spike_s=30,duration_s=180 | "
            "sine: baseline=8,amplitude=6,period_s=600,duration_s=1800 | trace: file=trace.csv,hold_s=30; "
            "any: spawn_rate=N, kind=users|rate [env LOCUST_SHAPE_ARGS]"
        ),
    )
