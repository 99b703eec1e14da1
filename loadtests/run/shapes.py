"""Putting the shapes into a Locust Environment: `--load-shape` at init, the web UI's choice later.

Locust runs any shape class it finds in the locustfile's namespace (the first one when there
are several: locust/main.py, `merge_locustfiles_content`), and shape classes cannot be named
on the command line like user classes. So the locustfile imports none: `install_shape`
selects one at init from `--load-shape`, the web UI's `load_shape` field selects one when a
test starts, and `--class-picker`'s shape dropdown lists them all. Without a shape,
`-u/-r/-t` runs are unchanged.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from loadtests.config.settings import NO_SHAPE, Settings
from loadtests.errors import SpecError
from loadtests.events import SuiteEvents
from loadtests.options.shapes import SHAPES, parse_shape_args, shape_name
from loadtests.traffic.shape import TrafficShape

logger = logging.getLogger(__name__)


def installed_shapes(environment: Any) -> dict[str, TrafficShape]:
    """The suite's shape instances in an environment (one of each, by class name), if installed."""
    available = environment.available_shape_classes or {}
    return {name: shape for name, shape in available.items() if isinstance(shape, TrafficShape)}


def install_shape(
    environment: Any, web_ui: Any, events: SuiteEvents, settings: Callable[[], Settings]
) -> TrafficShape | None:
    """Select the `--load-shape` at init (master or single process); raises SpecError.

    Every suite shape is listed in `environment.available_shape_classes` (the web UI's
    shape picker with `--class-picker`), each holding `events` and `settings`. Without the
    picker, the web UI's "load_shape" field selects the shape when a test starts. Returns
    the selected shape, if any. Calling it again reuses the same instances.
    """
    from locust.runners import WorkerRunner

    if isinstance(environment.runner, WorkerRunner):
        return None  # shapes tick on the master only
    shapes = installed_shapes(environment)
    if not shapes:
        shapes = {cls.__name__: cls(events, settings) for cls in SHAPES.values()}
        environment.available_shape_classes = {**(environment.available_shape_classes or {}), **shapes}
        if web_ui is not None:
            _install_web_ui(environment, web_ui, shapes)
    for shape in shapes.values():
        shape.runner = environment.runner
    current = settings()
    if current.load_shape == NO_SHAPE:
        if current.shape_args:
            logger.info("--shape-args applies only when a shape is chosen (--load-shape, or the web UI)")
        return None
    name = shape_name(current.load_shape)
    parse_shape_args(name, current.shape_args)
    if environment.shape_class is not None and not isinstance(environment.shape_class, TrafficShape):
        logger.info("--load-shape %s replaces the locustfile's %s", name, type(environment.shape_class).__name__)
    environment.shape_class = shapes[SHAPES[name].__name__]
    return environment.shape_class


def _install_web_ui(environment: Any, web_ui: Any, shapes: dict[str, TrafficShape]) -> None:
    from flask import jsonify, request

    @web_ui.app.before_request
    def _select_shape():
        # Locust decides between a shape and -u/-r/-t from environment.shape_class when
        # /swarm arrives; the form's load_shape field must be applied before that.
        if request.method != "POST" or not request.path.endswith("/swarm"):
            return None
        if web_ui.userclass_picker_is_active or "load_shape" not in request.form:
            return None  # the picker's shape dropdown decides
        name = request.form.get("load_shape") or NO_SHAPE
        try:
            if name == NO_SHAPE:
                environment.shape_class = None
            else:
                parse_shape_args(name, request.form.get("shape_args", ""))
                environment.shape_class = shapes[SHAPES[shape_name(name)].__name__]
        except SpecError as error:
            return jsonify({"success": False, "message": str(error), "host": environment.host})
        return None
