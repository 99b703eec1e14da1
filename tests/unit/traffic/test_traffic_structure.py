"""The shape packages' structure (`traffic/`, and `levels/` for the sweep and capacity): one
explicit table of load shapes (options/shapes.py) whose `--load-shape` choices do not depend on
what was imported first or twice, no module-level mutable state, and small single-role modules
(issue 13)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
TRAFFIC = ROOT / "loadtests" / "traffic"
LEVELS = ROOT / "loadtests" / "levels"
EVERY_SHAPE = ("steps", "ramp", "spike", "sine", "trace", "sweep", "capacity")
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60
# Module-level values of these kinds are containers someone means to change later.
MUTABLE_CALLS = {"list", "dict", "set", "defaultdict", "deque", "OrderedDict", "Counter", "WeakKeyDictionary"}
MUTABLE_CALLS |= {"WeakValueDictionary", "WeakSet", "bytearray"}


def test_the_table_has_every_shape_and_nothing_registers_itself():
    from loadtests.options.shapes import SHAPE_KEYS, SHAPE_NAMES, SHAPES
    from loadtests.traffic.shape import TrafficShape

    assert SHAPE_NAMES == EVERY_SHAPE
    for name, cls in SHAPES.items():
        assert cls.name == name and issubclass(cls, TrafficShape)
        assert SHAPE_KEYS[name] == cls.keys and cls.keys, name
    # Every concrete shape class in the package is in the table (none is left to register itself).
    packages = ("loadtests.traffic.", "loadtests.levels.")
    concrete = {cls for cls in _subclasses(TrafficShape) if cls.__module__.startswith(packages)}
    assert concrete == set(SHAPES.values())


def _subclasses(cls: type) -> set[type]:
    found = set()
    for sub in cls.__subclasses__():
        found |= {sub} | _subclasses(sub)
    return found


# Imports the given modules, then re-imports every loaded loadtests.traffic and loadtests.levels
# module (in the given order), the shapes' table and loadtests.options.table, and prints the
# --load-shape choices on Locust's parser.
CHOICES_SCRIPT = """
import importlib, json, sys
from locust.argument_parser import get_parser
first, order = json.loads(sys.argv[1])
for name in first:
    importlib.import_module(name)
def choices():
    import loadtests.options.table
    parser = get_parser()
    loadtests.options.table.add_arguments(parser)
    return list(parser._option_string_actions["--load-shape"].choices)
before = choices()
loaded = sorted(name for name in sys.modules if name.startswith(("loadtests.traffic.", "loadtests.levels.")))
for name in (loaded if order == "sorted" else loaded[::-1]):
    importlib.reload(sys.modules[name])
importlib.reload(sys.modules["loadtests.options.shapes"])
importlib.reload(sys.modules["loadtests.options.table"])
print(json.dumps([before, choices()]))
"""


def test_load_shape_choices_do_not_depend_on_import_order_or_reimport():
    runs = {}
    for first in (
        ["loadtests.options.table"],
        ["loadtests.traffic"],
        ["loadtests.levels.capacity_shape"],
        ["loadtests.traffic.open_loop", "loadtests.run"],
    ):
        for order in ("sorted", "reversed"):
            result = subprocess.run(
                [sys.executable, "-c", CHOICES_SCRIPT, json.dumps([first, order])],
                cwd=ROOT,
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert result.returncode == 0, result.stderr[-2000:]
            runs[(first[0], order)] = json.loads(result.stdout.splitlines()[-1])
    expected = ["none", *EVERY_SHAPE]
    differ = {f"{first} then reload {order}": both for (first, order), both in runs.items() if both != [expected] * 2}
    assert not differ, json.dumps(differ, indent=1)


def _traffic_modules() -> list[Path]:
    return sorted(TRAFFIC.glob("*.py")) + sorted(LEVELS.glob("*.py"))


def test_no_global_statement_and_no_module_level_mutable_containers():
    problems = []
    for path in _traffic_modules():
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Global):
                problems.append(f"{path.name}:{node.lineno}: global {', '.join(node.names)}")
        for node in tree.body:
            value = node.value if isinstance(node, ast.Assign | ast.AnnAssign) else None
            if value is not None and _is_mutable_container(value):
                problems.append(f"{path.name}:{node.lineno}: module-level {ast.unparse(value)[:40]}")
    assert not problems, "\n".join(problems)


def _is_mutable_container(value: ast.expr) -> bool:
    if isinstance(value, ast.List | ast.Dict | ast.Set | ast.ListComp | ast.DictComp | ast.SetComp):
        return True
    if isinstance(value, ast.Call):
        func = value.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        return name in MUTABLE_CALLS
    return False


def test_nothing_assigns_into_a_traffic_module():
    """No `traffic_module.NAME = ...` (or a levels module's) anywhere in the suite (the old
    `set_rate_target` wiring)."""
    problems = []
    for path in sorted((ROOT / "loadtests").rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        aliases = {
            alias.asname or alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom)
            and (node.module or "").startswith(("loadtests.traffic", "loadtests.levels"))
            for alias in node.names
            if (TRAFFIC / f"{alias.name}.py").exists() or (LEVELS / f"{alias.name}.py").exists()
        }
        for node in ast.walk(tree):
            targets = node.targets if isinstance(node, ast.Assign) else []
            for target in targets:
                if isinstance(target, ast.Attribute) and getattr(target.value, "id", None) in aliases:
                    problems.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(target)} = ...")
    assert not problems, "\n".join(problems)


def test_modules_and_functions_are_small():
    problems = []
    for path in [*_traffic_modules(), *sorted((ROOT / "loadtests" / "commands").glob("*.py"))]:
        text = path.read_text()
        if len(text.splitlines()) > MAX_MODULE_LINES:
            problems.append(f"{path.name}: {len(text.splitlines())} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = node.end_lineno - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    problems.append(f"{path.name}:{node.lineno}: {node.name}() is {length} lines")
    assert not problems, "\n".join(problems)
