"""The run-directory format and the analysis stay below the load generator (issue 13).

`analysis/` reads run directories and `loadtests/run_format/` defines them; both must import
without Locust, gevent or gRPC (a report is made on a laptop with neither), and neither may
reach up into the load generator: the measuring side depends on the format, never on the
reporting side, and the reporting side only on the format.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from tests.helpers import REPO_ROOT

# What analysis/ and loadtests/run_format/ may import from the loadtests package.
ALLOWED_FROM_LOADTESTS = ("loadtests.run_format", "loadtests.errors")
BELOW = ("analysis", "loadtests/run_format")
HEAVY = ("locust", "gevent", "grpc")
MAX_MODULE_LINES = 800
MAX_FUNCTION_LINES = 60


def _modules() -> list[Path]:
    files = [path for below in BELOW for path in sorted((REPO_ROOT / below).rglob("*.py"))]
    assert files, "no modules found: the paths in BELOW are wrong"
    return files


def _imported_names(tree: ast.Module) -> list[tuple[int, str]]:
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append((node.lineno, node.module))
    return names


def _allowed(name: str) -> bool:
    if name != "loadtests" and not name.startswith("loadtests."):
        return True
    return any(name == allowed or name.startswith(allowed + ".") for allowed in ALLOWED_FROM_LOADTESTS)


def test_format_and_analysis_import_without_locust_gevent_or_grpc():
    code = (
        "import sys, pkgutil, importlib\n"
        "import analysis, loadtests.run_format\n"
        "for package in (analysis, loadtests.run_format):\n"
        "    for info in pkgutil.walk_packages(package.__path__, package.__name__ + '.'):\n"
        "        importlib.import_module(info.name)\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r}))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]", f"imported: {result.stdout.strip()}"


def test_format_and_analysis_import_nothing_above_the_format():
    wrong = []
    for path in _modules():
        for line, name in _imported_names(ast.parse(path.read_text(), str(path))):
            if not _allowed(name):
                wrong.append(f"{path.relative_to(REPO_ROOT)}:{line} imports {name}")
    assert not wrong, "\n".join(wrong)


def test_loadtests_modules_other_than_commands_do_not_import_analysis():
    # Only the top-level commands may write reports; the measuring side imports the format.
    commands = {"loadtests/commands/demo.py", "loadtests/__main__.py"}
    wrong = []
    for path in sorted((REPO_ROOT / "loadtests").rglob("*.py")):
        relative = path.relative_to(REPO_ROOT).as_posix()
        if relative in commands or relative.startswith("loadtests/commands/"):
            continue
        for line, name in _imported_names(ast.parse(path.read_text(), str(path))):
            if name == "analysis" or name.startswith("analysis."):
                wrong.append(f"{relative}:{line} imports {name}")
    assert not wrong, "\n".join(wrong)


def test_format_and_analysis_modules_are_small():
    too_long = []
    for path in _modules():
        text = path.read_text()
        if (lines := len(text.splitlines())) > MAX_MODULE_LINES:
            too_long.append(f"{path.relative_to(REPO_ROOT)}: {lines} lines")
        for node in ast.walk(ast.parse(text, str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = node.end_lineno - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    too_long.append(f"{path.relative_to(REPO_ROOT)}:{node.lineno} {node.name}(): {length} lines")
    assert not too_long, "\n".join(too_long)
