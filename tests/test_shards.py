"""`make test`'s split into shards (tests/shards.py), and the markers it relies on.

The background shard runs every test that is neither `triton`, `browser` nor `drill`, and the
`refusal`s, at a low CPU priority, beside everything else: a test that starts a Triton in its
body without the `triton` marker (or with `refusal`) would land there and time its server and
its runs on whatever CPU is left.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests import shards
from tests.shards import REPO_ROOT, deal, measurement, updated_durations

STARTS_TRITON = "LocalTriton"
KEPT_APART = {"triton", "browser", "drill"}  # the markers that keep a test out of the background shard


def test_files_go_longest_first_to_the_shard_with_the_least_work():
    assert deal(["a", "b", "c", "d"], {"a": 10, "b": 6, "c": 5, "d": 1}, 2) == [["a", "d"], ["b", "c"]]
    # A file with no measured time counts as the median file.
    assert deal(["a", "b", "new"], {"a": 10, "b": 2}, 2) == [["a"], ["b", "new"]]


def test_step_two_is_the_measurement_folder_and_nothing_else():
    files = shards.test_files([])
    alone = measurement(files)
    assert alone == shards.test_files(["tests/measurement"]), alone
    assert "tests/measurement/test_capacity.py" in alone and "tests/measurement/test_tune.py" in alone
    assert "tests/commands/test_tune.py" not in alone and "tests/run/test_drills.py" not in alone


def marks(decorators: list[ast.expr]) -> set[str]:
    """The names X of the `pytest.mark.X` decorators (with or without arguments)."""
    found = set()
    for decorator in decorators:
        node = decorator.func if isinstance(decorator, ast.Call) else decorator
        if isinstance(node, ast.Attribute) and ast.unparse(node).startswith("pytest.mark."):
            found.add(node.attr)
    return found


def calls(node: ast.AST) -> set[str]:
    names = set()
    for call in ast.walk(node):
        if isinstance(call, ast.Call):
            func = call.func
            names.add(func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else "")
    return names


def starts(function: ast.FunctionDef, starters: set[str]) -> bool:
    """It builds a Triton launcher (LocalTriton or a module helper returning one) and starts
    it: `with` on it, or a `.start()` call."""
    built = calls(function) & starters
    entered = any(
        isinstance(item.context_expr, ast.Call) and calls(item.context_expr) & starters
        for node in ast.walk(function)
        if isinstance(node, ast.With)
        for item in node.items
    )
    return bool(built) and (entered or "start" in calls(function))


def unmarked_triton_starters(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    functions = [node for node in tree.body if isinstance(node, ast.FunctionDef)]
    # Module functions that start one (helpers such as `identity_triton(...)`), one level deep.
    starters = {STARTS_TRITON} | {f.name for f in functions if STARTS_TRITON in calls(f)}
    module_marks = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "pytestmark" for t in node.targets):
            value = node.value
            module_marks |= marks(list(value.elts) if isinstance(value, (ast.List, ast.Tuple)) else [value])
    unmarked = []
    for function in functions:
        if not function.name.startswith("test_"):
            continue
        if any(arg.arg.endswith("triton") for arg in function.args.args):
            continue  # marked by its fixture (tests/conftest.py)
        marked = marks(function.decorator_list) | module_marks
        if starts(function, starters) and (not marked & KEPT_APART or "refusal" in marked):
            unmarked.append(f"{path.relative_to(REPO_ROOT)}::{function.name}")
    return unmarked


def test_a_file_whose_tests_all_ran_in_the_background_weighs_nothing_in_the_next_deal():
    here, there = "tests/test_shards.py", "tests/test_docs.py"
    old = {here: 3.0, there: 30.0, "tests/no_longer_there.py": 9.0}
    # This run dealt `here` (its tests ran in the background: not measured) and not `there`.
    assert updated_durations(old, [here], {}) == {there: 30.0, here: 0.0}
    assert updated_durations(old, [here, there], {there: 27.46}) == {there: 27.5, here: 0.0}


def test_every_test_that_starts_a_triton_is_kept_out_of_the_background_shard():
    unmarked = [name for file in shards.test_files([]) for name in unmarked_triton_starters(REPO_ROOT / file)]
    assert not unmarked, f"start a Triton without @pytest.mark.triton: {unmarked}"
