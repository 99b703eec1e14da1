"""The code's shape, checked with `ast` (docs/explanation/architecture.md): packages by purpose whose
imports only point down the package table, no import cycles, short functions.

    .venv/bin/python -m pytest tests/unit/test_code_shape.py -q

Project code only (loadtests/, analysis/, models/*.py; tests aside). An import counts wherever
it is written: at the top, inside a function, or under `if TYPE_CHECKING:` (a type-only
import still couples the two modules, and a hidden cycle is still a cycle).
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from functools import cache
from pathlib import Path

import pytest

from tests.helpers import REPO_ROOT

MAX_MODULE_LINES = 800
MAX_FUNCTION_LINES = 60

# Functions allowed over MAX_FUNCTION_LINES: declarative tables only, each with its reason.
LONG_FUNCTION_ALLOWED = {
    "loadtests/options/table.py::add_arguments": "the option table: one declaration per option, help text included",
}

# The packages, lowest first: a module imports only from its own package or from packages
# listed before it. Top-level modules of `loadtests` count as packages of their own. The same
# order, with what each package owns, is the table in docs/explanation/architecture.md (checked below).
PACKAGES: tuple[str, ...] = (
    "loadtests.version",  # the version
    "loadtests.errors",  # the refusals and their exit codes
    "loadtests.events",  # the event spine
    "loadtests.run_format",  # the run directory's format (no Locust, no gevent)
    "loadtests.config",  # Settings and every value type it holds, parsed once
    "loadtests.clients",  # the wire (HTTP/1.1, gRPC over HTTP/2) and Triton's control plane
    "loadtests.recording",  # HDR windows, their merge, the run-directory writer, the console
    "loadtests.triton_stats",  # Triton's own view: statistics, metrics, server info, polled
    "loadtests.tracing",  # --trace-sample: Triton's traces joined to the client's timing
    "loadtests.traffic",  # load shapes, open loop
    "loadtests.levels",  # stabilised levels: the sweep and the capacity search, their files
    "loadtests.workloads",  # what is sent: payloads, endpoints, validation, mix, sequences, users
    "loadtests.options",  # the option table, read into Settings; the options by task
    "loadtests.run",  # one SuiteProcess per Locust process: the wiring, web UI, SLO gate
    "loadtests",  # the package itself: the public API (user bases; the suite set up on import)
    "loadtests.locustfile",  # the suite's own locustfile: its concrete user classes
    "analysis",  # reads run directories: reports, comparisons, peers' files
    "models",  # the test models' build scripts (`serve` builds them)
    "loadtests.server",  # the local Triton: install, launch, serve
    "loadtests.tuning",  # the tune command's parts: repository API, variants, ranking
    "loadtests.commands",  # python -m loadtests: demo, serve, sweep, capacity, tune, options
    "loadtests.__main__",
)
# analysis/ must stay importable without Locust or gevent: it imports only these of the suite.
ANALYSIS_MAY_IMPORT = ("analysis", "loadtests.run_format", "loadtests.errors")


def project_files() -> list[Path]:
    files = sorted((REPO_ROOT / "loadtests").rglob("*.py")) + sorted((REPO_ROOT / "analysis").rglob("*.py"))
    return files + sorted((REPO_ROOT / "models").glob("*.py"))


def relative(path: Path) -> str:
    return path.relative_to(REPO_ROOT).as_posix()


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO_ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def modules() -> dict[str, Path]:
    return {module_name(path): path for path in project_files()}


@cache
def tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), filename=str(path))


def imported_modules(path: Path) -> set[str]:
    """The project modules `path` imports, anywhere in it (`from a import b` is `a.b` when
    b is a module, else `a`; relative imports resolved)."""
    known, found = modules(), set()
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    for node in ast.walk(tree(path)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        else:
            continue
        found.update(name for name in names if name in known)
    found.discard(module_name(path))
    return found


def package_of(module: str) -> str | None:
    """The entry of PACKAGES that holds `module`: the longest prefix (the bare `loadtests` is
    only the package's own __init__, not everything below it)."""
    best = None
    for package in PACKAGES:
        below = module.startswith(package + ".") and package != "loadtests"
        if (module == package or below) and (best is None or len(package) > len(best)):
            best = package
    return best


def rank_of(module: str) -> int | None:
    package = package_of(module)
    return None if package is None else PACKAGES.index(package)


def problems_of(path: Path) -> list[str]:
    """Every rule `path` breaks (size, function length, layering), one line each."""
    name, problems = relative(path), []
    lines = len(path.read_text().splitlines())
    if lines > MAX_MODULE_LINES:
        problems.append(f"{name}: {lines} lines (at most {MAX_MODULE_LINES})")
    for node in ast.walk(tree(path)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            length = node.end_lineno - node.lineno + 1
            if length > MAX_FUNCTION_LINES and f"{name}::{node.name}" not in LONG_FUNCTION_ALLOWED:
                problems.append(f"{name}:{node.lineno} {node.name}(): {length} lines (at most {MAX_FUNCTION_LINES})")
    problems.extend(layer_problems(path))
    problems.extend(global_statements(name, tree(path)))
    return problems


def global_statements(name: str, module: ast.Module) -> list[str]:
    """`global` in loadtests/ or analysis/: a run's state belongs to an object (SuiteProcess,
    ActiveRun), not to a module, so two Environments in one process never share it."""
    if not name.startswith(("loadtests/", "analysis/")):
        return []
    return [
        f"{name}:{node.lineno} global {', '.join(node.names)} (keep the state in an object)"
        for node in ast.walk(module)
        if isinstance(node, ast.Global)
    ]


def layer_problems(path: Path) -> list[str]:
    module, name = module_name(path), relative(path)
    if module.startswith("analysis"):
        return [
            f"{name}: imports {target} (analysis imports only {', '.join(ANALYSIS_MAY_IMPORT)})"
            for target in sorted(imported_modules(path))
            if not any(target == ok or target.startswith(ok + ".") for ok in ANALYSIS_MAY_IMPORT)
        ]
    own = package_of(module)
    if own is None:
        return [f"{name}: in no package (add its package to PACKAGES in tests/unit/test_code_shape.py)"]
    return [
        f"{name} ({own}): imports {target} ({package_of(target)}, listed above {own})"
        for target in sorted(imported_modules(path))
        if (rank_of(target) or 0) > PACKAGES.index(own)
    ]


def import_cycles() -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    graph = {module: imported_modules(path) for module, path in modules().items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for target in graph[module]:
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in on_stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return cycles


@pytest.mark.parametrize("path", project_files(), ids=relative)
def test_module_shape(path):
    """At most 400 lines, functions of at most 60 (option tables aside), imports pointing down."""
    problems = problems_of(path)
    assert not problems, "\n".join(problems)


def test_no_import_cycles():
    cycles = import_cycles()
    assert not cycles, "\n".join(" <-> ".join(cycle) for cycle in cycles)


def test_the_checks_catch_what_they_check(tmp_path):
    """The rules themselves: a long module, a long function, an upward import, a cycle."""
    assert package_of("loadtests.recording.windows") == "loadtests.recording"
    assert package_of("loadtests.config.settings") == "loadtests.config"
    assert package_of("loadtests") == "loadtests"
    assert package_of("loadtests.runtime") is None  # a module in no package fails until it is placed
    assert rank_of("loadtests.run.lifecycle") > rank_of("loadtests.workloads.users") > rank_of("loadtests.clients.http")
    assert "loadtests.run.process" in imported_modules(REPO_ROOT / "loadtests/run/wiring.py")
    # The settings module imports only value types of the suite.
    assert imported_modules(REPO_ROOT / "loadtests/config/settings.py") == {
        "loadtests.config.addresses",
        "loadtests.config.batch_size",
        "loadtests.config.security",
        "loadtests.config.mix",
        "loadtests.config.trace_sample",
    }
    module_state = ast.parse("_enabled = False\n\n\ndef enable():\n    global _enabled\n    _enabled = True\n")
    assert global_statements("loadtests/probe.py", module_state) == [
        "loadtests/probe.py:5 global _enabled (keep the state in an object)"
    ]
    assert global_statements("tests/probe.py", module_state) == []  # tests may keep module state
    long_function = "def f():\n" + "    x = 1\n" * MAX_FUNCTION_LINES + "    return x\n"
    source = tmp_path / "long.py"
    source.write_text(long_function)
    node = ast.parse(source.read_text()).body[0]
    assert node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES


def documented_table(marker: str) -> list[list[str]]:
    """The rows of the table that follows `<!-- marker: ... -->` in docs/explanation/architecture.md."""
    text = (REPO_ROOT / "docs/explanation/architecture.md").read_text()
    assert f"<!-- {marker}:" in text, f"docs/explanation/architecture.md lost its {marker} table"
    lines = text.split(f"<!-- {marker}:", 1)[1].splitlines()[1:]
    rows = []
    for line in lines:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows[2:]  # header and rule aside


def documented_package(cell: str) -> str:
    path = cell.strip("`").removesuffix("/").removesuffix(".py").removesuffix("/__init__")
    return path.replace("/", ".")


def test_the_package_table_in_architecture_md_is_the_code_s():
    """docs/explanation/architecture.md names every package, in PACKAGES' order, and no other."""
    documented = [documented_package(row[0]) for row in documented_table("packages")]
    assert documented == list(PACKAGES)
    real = {package_of(module) for module in modules()} - {None}
    assert real == set(PACKAGES), f"packages with no module: {set(PACKAGES) - real}"


def event_calls() -> dict[tuple[str, str], set[str]]:
    """(event, "fire" or "add_listener") -> the files (relative to loadtests/) that do it."""
    import loadtests.events as spine

    names = set(spine.SuiteEvents.__annotations__)
    calls: dict[tuple[str, str], set[str]] = {}
    for path in sorted((REPO_ROOT / "loadtests").rglob("*.py")):
        for node in ast.walk(tree(path)):
            if not (isinstance(node, ast.Attribute) and node.attr in ("fire", "add_listener")):
                continue
            if isinstance(node.value, ast.Attribute) and node.value.attr in names:
                key = (node.value.attr, node.attr)
                calls.setdefault(key, set()).add(path.relative_to(REPO_ROOT / "loadtests").as_posix())
    return calls


def test_the_event_table_in_architecture_md_names_who_fires_and_who_listens():
    import loadtests.events as spine

    rows = {row[0].strip("`").split("(")[0]: row for row in documented_table("events")}
    assert set(rows) == set(spine.SuiteEvents.__annotations__)
    missing = [
        f"{event}: {'fired by' if kind == 'fire' else 'listened to by'} {path} (not in its row)"
        for (event, kind), paths in event_calls().items()
        for path in sorted(paths)
        if path not in rows[event][1 if kind == "fire" else 2]
    ]
    assert not missing, "\n".join(missing)


def test_test_folders_mirror_the_packages():
    """tests/ holds the four folders by need (tests/shards.py): in tests/unit/, tests/refusals/ and
    tests/system/, `<name>/` holds the tests of the package PACKAGES names `name` (loadtests.<name>
    or analysis), and only the suite-wide checks (the code's shape, the docs, the split of
    `make test`, the measurement tier's margins, the tests' warm interpreter) sit beside them;
    tests/measurement/ is flat. The shared helpers sit at the top of tests/."""
    names = {package.split(".")[-1] for package in PACKAGES}
    tests = REPO_ROOT / "tests"
    folders = {path.name for path in tests.iterdir() if (path / "__init__.py").exists()}
    assert folders == {"unit", "refusals", "system", "measurement"}, folders
    assert not list(tests.glob("test_*.py"))
    for need in ("unit", "refusals", "system"):
        packages = {path.name for path in (tests / need).iterdir() if (path / "__init__.py").exists()}
        assert packages <= names, (need, packages - names)
    assert {path.name for path in (tests / "measurement").iterdir() if path.is_dir()} <= {"__pycache__"}
    top = sorted(path.name for path in (tests / "unit").glob("test_*.py"))
    assert top == ["test_code_shape.py", "test_docs.py", "test_margins.py", "test_shards.py", "test_warm_python.py"], (
        top
    )
    assert sorted(path.name for path in (tests / "system").glob("test_*.py")) == ["test_docs.py"]


# "x.py" or "dir/x.py" in a docstring or a comment: a file the text sends a reader to.
NAMED_FILE = re.compile(r"(?<![\w/.-])((?:[a-z_][a-z0-9_]*/)*[a-z_][a-z0-9_]*\.py)\b")
# A package docstring's table of its modules: "name.py    what it holds" (or "name/", "name"), one a line.
TABLE_ROW = re.compile(r"^\s*([a-z_][a-z0-9_]*)(?:\.py|/)?\s{2,}\S", re.M)
# Files the code's text names that are not the project's, each with its reason.
NAMED_ELSEWHERE = {
    "locust/": "Locust's own sources, where the suite follows them",
    "mine.py": "a user's own locustfile, in examples",
    "model.py": "a Python-backend model's file in a model repository",
    "run_squad.py": "Google's BERT SQuAD script, whose preprocessing bert_qa.py follows",
}


def named_file_exists(name: str, directory: Path) -> bool:
    """`x.py` or `dir/x.py` as the code's text means it: beside the text's own module, or from
    loadtests/, analysis/ or the checkout's root."""
    bases = (directory, REPO_ROOT / "loadtests", REPO_ROOT / "analysis", REPO_ROOT)
    return any((base / name).is_file() for base in bases) or name.startswith(tuple(NAMED_ELSEWHERE))


def texts_of(source: str) -> list[str]:
    """A module's docstrings (its own, its classes' and functions') and its comments."""
    module = ast.parse(source)
    texts = [
        ast.get_docstring(node) or ""
        for node in ast.walk(module)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
    ]
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    return texts + [token.string for token in tokens if token.type == tokenize.COMMENT]


def named_file_problems(path: Path) -> list[str]:
    """The files `path`'s docstrings and comments name that do not exist."""
    names = {name for text in texts_of(path.read_text()) for name in NAMED_FILE.findall(text)}
    return [
        f"{path.name} names {name}, which does not exist"
        for name in sorted(names)
        if not named_file_exists(name, path.parent)
    ]


def package_docstring_problems(init: Path) -> list[str]:
    """A package's docstring names only modules of that package that exist, and once it names
    one of them (a table "name    what it holds", or `name.py` in its text), it names them all:
    it is the package's map (tuning's once named restore, pbtxt and comparison, which were
    functions elsewhere, and not measure, which was its module)."""
    doc = ast.get_docstring(ast.parse(init.read_text())) or ""
    here = {path.stem for path in init.parent.glob("*.py") if path.name != "__init__.py"}
    here |= {path.parent.name for path in init.parent.glob("*/__init__.py")}
    named = {name.removesuffix(".py") for name in NAMED_FILE.findall(doc) if "/" not in name}
    named |= set(TABLE_ROW.findall(doc))
    where = init.parent.name
    problems = [f"{where}/__init__.py names a module '{name}' that does not exist" for name in sorted(named - here)]
    if named & here:
        problems += [f"{where}/__init__.py lists its modules but not '{name}'" for name in sorted(here - named)]
    return problems


def package_inits() -> list[Path]:
    return sorted([*(REPO_ROOT / "loadtests").rglob("__init__.py"), *(REPO_ROOT / "analysis").rglob("__init__.py")])


def test_package_docstrings_name_their_modules_and_only_those():
    problems = [problem for init in package_inits() for problem in package_docstring_problems(init)]
    assert not problems, "\n".join(problems)
    listing = [init for init in package_inits() if TABLE_ROW.search(ast.get_docstring(tree(init)) or "")]
    assert len(listing) >= 4  # tuning's, plots', run's and run_format's tables at least


def test_docstrings_and_comments_name_files_that_exist():
    """A module's docstrings and comments that send a reader to `x.py` or `dir/x.py` name a file
    there is (a fold or a move leaves no pointer to a module that is gone)."""
    problems = [f"{relative(path)}: {problem}" for path in project_files() for problem in named_file_problems(path)]
    assert not problems, "\n".join(problems)


def test_the_package_table_names_modules_that_exist():
    """docs/explanation/architecture.md: each package's row names files of that package (`x.py`)
    or paths from the checkout (`dir/x.py`), and every path in its text is a file there is."""
    problems = []
    for row in documented_table("packages"):
        package = REPO_ROOT / row[0].strip("`")
        directory = package if row[0].strip("`").endswith("/") else package.parent
        problems += [
            f"{row[0]} row: {name}"
            for name in NAMED_FILE.findall(row[1].replace("`", " "))
            if not named_file_exists(name, directory)
        ]
    text = (REPO_ROOT / "docs/explanation/architecture.md").read_text()
    problems += [
        f"text: {name}" for name in NAMED_FILE.findall(text) if "/" in name and not named_file_exists(name, REPO_ROOT)
    ]
    assert not problems, "files the map names that do not exist:\n" + "\n".join(problems)


def test_the_map_checks_catch_a_missing_module(tmp_path):
    """The three checks above, on a package made for the purpose."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "alpha.py").write_text('"""Beside `beta.py` and loadtests/events.py."""\n# see gone/module.py\n')
    (package / "gamma.py").write_text("")
    (package / "__init__.py").write_text('"""The package.\n\n    alpha.py    one\n    beta.py     two\n"""\n')
    assert package_docstring_problems(package / "__init__.py") == [
        "pkg/__init__.py names a module 'beta' that does not exist",
        "pkg/__init__.py lists its modules but not 'gamma'",
    ]
    assert named_file_problems(package / "alpha.py") == [
        "alpha.py names beta.py, which does not exist",
        "alpha.py names gone/module.py, which does not exist",
    ]


# The run's end: recording merges the totals once (RunTotals) and computes their percentiles and
# intervals (run_dir.py); run/ hands them on to the gate and the console and computes none.
RUN_END = ("loadtests/run/finish.py", "loadtests/run/slo_gate.py", "loadtests/recording/console.py")
COMPUTING = {"merge_stats", "by_model", "merge", "latency_summary_us", "latency_ci_us", "uncorrected_summary_us"}


def computed_in(path: Path) -> set[str]:
    """The merging and percentile calls in `path` (COMPUTING's names, called as functions or methods)."""
    names = set()
    for node in ast.walk(tree(path)):
        if isinstance(node, ast.Call):
            function = node.func
            names.add(function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", ""))
    return names & COMPUTING


@pytest.mark.parametrize("name", RUN_END)
def test_the_run_end_is_merged_once_in_recording_and_handed_on(name):
    assert computed_in(REPO_ROOT / name) == set(), f"{name} merges or computes percentiles; take them from RunTotals"
