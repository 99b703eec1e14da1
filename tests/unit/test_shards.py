"""`make test`'s split (tests/shards.py): a test's top folder says what it needs, and where it runs.

The background shard runs tests/refusals/ and tests/unit/ at a low CPU priority, beside
everything else: a test there that started a Triton in its body would time its server and its
runs on whatever CPU is left, so none may.
"""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
from pathlib import Path

from tests import shards
from tests.shards import MEASUREMENT, REFUSALS, REPO_ROOT, SYSTEM, UNIT, deal, in_folder, misplaced, updated_durations

STARTS_TRITON = "LocalTriton"


def test_files_go_longest_first_to_the_shard_with_the_least_work():
    assert deal(["a", "b", "c", "d"], {"a": 10, "b": 6, "c": 5, "d": 1}, 2) == [["a", "d"], ["b", "c"]]
    # A file with no measured time counts as the median file.
    assert deal(["a", "b", "new"], {"a": 10, "b": 2}, 2) == [["a"], ["b", "new"]]


def test_step_two_is_the_measurement_folder_and_nothing_else():
    files = shards.test_files([])
    alone = in_folder(files, MEASUREMENT)
    assert alone == shards.test_files(["tests/measurement"]), alone
    assert "tests/measurement/test_capacity.py" in alone and "tests/measurement/test_tune.py" in alone
    assert "tests/system/commands/test_tune.py" not in alone and "tests/system/run/test_drills.py" not in alone


def test_make_test_leaves_the_measurement_folder_to_make_bench_measurement():
    """`make test` (no path named) runs every folder but tests/measurement/; named, it runs;
    `make bench-measurement` runs it (through tests.margins, which tables its margins)."""
    files = shards.test_files([])
    default = shards.selection(files, named=False)
    assert default == [name for name in files if not name.startswith(MEASUREMENT)] and default
    assert {name.split("/")[1] for name in default} == {"unit", "refusals", "system"}
    named = shards.test_files(["tests/measurement"])
    assert shards.selection(named, named=True) == named and named
    makefile = (REPO_ROOT / "Makefile").read_text()
    recipe = makefile.split("\nbench-measurement:", 1)[1].split("\n\n", 1)[0]
    assert "-m tests.margins" in recipe, recipe


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


def triton_starters(path: Path) -> list[str]:
    """The tests of a file that start a Triton in their body (not through a fixture)."""
    tree = ast.parse(path.read_text())
    functions = [node for node in tree.body if isinstance(node, ast.FunctionDef)]
    # Module functions that start one (helpers such as `identity_triton(...)`), one level deep.
    starters = {STARTS_TRITON} | {f.name for f in functions if STARTS_TRITON in calls(f)}
    return [
        f"{path.relative_to(REPO_ROOT)}::{function.name}"
        for function in functions
        if function.name.startswith("test_") and starts(function, starters)
    ]


def test_durations_are_kept_for_the_timed_folders_only():
    """Only tests/system/ is dealt by time (and tests/measurement/'s estimate is printed): a run's
    times replace those it measured, a timed file it did not run keeps its own, and files of the
    background folders or no longer there are not kept."""
    system, other = "tests/system/run/test_drills.py", "tests/system/test_docs.py"
    unit = "tests/unit/test_shards.py"
    old = {system: 3.0, other: 30.0, unit: 0.0, "tests/system/no_longer_there.py": 9.0}
    assert updated_durations(old, [system, unit], {system: 27.46, unit: 5.0}) == {system: 27.5, other: 30.0}
    # A timed file that ran but recorded nothing (every test deselected by -k) keeps its time: a
    # 0 would deal it as free next time (three system files of 7-46 s were at 0 until fresh30).
    assert updated_durations(old, [other], {}) == {system: 3.0, other: 30.0}
    # One never measured is not written: it counts as the median file.
    assert updated_durations(old, ["tests/system/test_new.py"], {}) == {system: 3.0, other: 30.0}


def test_the_durations_file_holds_only_timed_folders():
    durations = json.loads(shards.DURATIONS.read_text())
    assert durations and all(name.startswith((SYSTEM, MEASUREMENT)) for name in durations), sorted(durations)


def test_no_test_in_the_background_shard_starts_a_triton():
    files = shards.test_files([])
    starting = [
        name
        for file in in_folder(files, UNIT) + in_folder(files, REFUSALS)
        for name in triton_starters(REPO_ROOT / file)
    ]
    assert not starting, f"start a Triton in their body: move them to {SYSTEM}: {starting}"
    # The check finds one: tests/system/ has tests that start their own.
    assert any(triton_starters(REPO_ROOT / file) for file in in_folder(files, SYSTEM))


def test_every_test_file_is_in_one_of_the_four_folders():
    files = shards.test_files([])
    assert not shards.outside_the_folders(files)
    assert sum(len(in_folder(files, folder)) for folder in shards.FOLDERS) == len(files)
    assert shards.outside_the_folders(["tests/run/test_x.py"]) == ["tests/run/test_x.py"]


def test_a_test_that_takes_a_triton_or_the_browser_is_refused_where_it_cannot_run():
    assert "tests/system/" in misplaced("tests/unit/run/test_x.py::test_y", ["tmp_path", "explicit_triton"])
    assert "browser" in misplaced("tests/refusals/run/test_x.py::test_y", ["triton", "browser"])
    assert misplaced("tests/refusals/run/test_x.py::test_y", ["triton"]) is None
    assert misplaced("tests/system/run/test_x.py::test_y", ["triton", "browser"]) is None
    assert misplaced("tests/measurement/test_x.py::test_y", ["triton"]) is None


def test_pytest_refuses_a_misplaced_test_at_collection(tmp_path):
    """The rule is enforced where tests are collected (tests/conftest.py), not only here."""
    folder = REPO_ROOT / UNIT / "zz_misplaced_probe"
    folder.mkdir()
    try:
        (folder / "__init__.py").write_text("")
        (folder / "test_probe.py").write_text("def test_probe(triton):\n    pass\n")
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", str(folder)],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        shutil.rmtree(folder)
    assert done.returncode != 0
    assert (
        "test_probe.py::test_probe: takes a Triton (triton): it belongs in tests/system/" in done.stdout + done.stderr
    )


def test_every_test_finds_its_fixtures():
    """A system test whose fixture lives in another folder's module must import it: pytest only
    says so when the test is set up, so a missing one would first show deep into `make test`.
    `--setup-plan` resolves every test's fixtures without running any."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--setup-plan", "-q", "-p", "no:cacheprovider", "tests/"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    missing = sorted({line.strip() for line in done.stdout.splitlines() if line.startswith("ERROR ")})
    assert not missing, "\n".join(missing)
    assert "fixture '" not in done.stdout
