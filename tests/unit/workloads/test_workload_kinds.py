"""The workload kinds' one table (loadtests/workloads/kinds.py) is the only place that knows them.

A kind ("bert_qa", "resnet", "generic", "sequence") is a `WorkloadKind` object: the user classes
carry it, and pre-flight, validation, --mix, sequence runs and the sweep command ask it instead
of comparing its name. Checked here with `ast` over the project's code, and by a kind that only
this test defines (built from the generic kind's parts) running end to end against Triton.
"""

from __future__ import annotations

import ast
import dataclasses
import textwrap

from tests.helpers import REPO_ROOT

TABLE = REPO_ROOT / "loadtests" / "workloads" / "kinds.py"
PROTOCOLS = ("http", "grpc")


def kind_names() -> set[str]:
    from loadtests.workloads.kinds import KINDS

    return set(KINDS)


def _literals(node: ast.AST) -> list[str]:
    """The string constants of an expression that is a literal or a tuple/list/set of them."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return [value for item in node.elts for value in _literals(item)]
    return []


def kind_literals(source: str, names: set[str]) -> list[tuple[int, str]]:
    """(line, name) of every comparison against a kind's name, and of a kind's name given to a
    name or attribute that says `kind` or `workload`, in Python source."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            values = [v for operand in (node.left, *node.comparators) for v in _literals(operand)]
        elif isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            text = " ".join(ast.unparse(t).lower() for t in targets)
            values = _literals(node.value) if "kind" in text or "workload" in text else []
        else:
            continue
        found += [(node.lineno, value) for value in values if value in names]
    return found


def test_only_the_table_compares_kind_names():
    names = kind_names()
    files = sorted((REPO_ROOT / "loadtests").rglob("*.py")) + [REPO_ROOT / "locustfile.py"]
    found = [
        f"{path.relative_to(REPO_ROOT)}:{line}: {name!r}"
        for path in files
        if path != TABLE
        for line, name in kind_literals(path.read_text(), names)
    ]
    assert found == []


def test_the_scan_finds_a_kind_comparison():
    # The scan itself, on code it must refuse (a test that cannot fail tests nothing).
    snippet = textwrap.dedent(
        """
        if kind == "resnet": pass
        if endpoint.kind in ("generic", "sequence"): pass
        class U:
            workload = "bert_qa"
        MIX_KIND = "generic"
        label = "resnet"  # a name that is not about kinds: not counted
        """
    )
    assert sorted(kind_literals(snippet, kind_names())) == [
        (2, "resnet"),
        (3, "generic"),
        (3, "sequence"),
        (5, "bert_qa"),
        (6, "generic"),
    ]


def test_every_kind_has_its_user_classes_builder_and_validator():
    from loadtests.workloads import users
    from loadtests.workloads.kinds import KINDS, MIX_KIND, user_class_names

    # The concrete classes are the suite's locustfile's (read, not imported: importing it sets the
    # suite up on Locust's global events): one per name of the kinds' table, each a subclass of
    # users.py's abstract base of that name. Built here the same way.
    locustfile = ast.parse((REPO_ROOT / "loadtests" / "locustfile.py").read_text())
    (exported,) = [
        ast.unparse(node.value)
        for node in locustfile.body
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "__all__"
    ]
    assert exported == "user_class_names()", exported
    assert "type(_name, (_base,)" in ast.unparse(locustfile)
    exported = user_class_names()
    concrete = {name: type(name, (getattr(users, name),), {}) for name in exported}
    named = {}
    for kind in KINDS.values():
        assert callable(kind.validate), kind.name
        # A pool of bodies built before the load, or requests built one by one (sequences).
        assert callable(kind.build) or kind.correlation_ids, kind.name
        assert set(kind.user_classes) == set(PROTOCOLS), kind.name
        for protocol, name in kind.user_classes.items():
            cls = concrete.get(name)
            assert cls is not None, f"{kind.name}: no user class {name} in loadtests/locustfile.py"
            assert cls.kind is kind and cls.protocol == protocol and cls.runs_workload, name
            assert getattr(users, name).abstract and not getattr(users, name).tasks, name
            named[name] = kind
    # Every concrete user class is some kind's, and the checkout's locustfile offers them all.
    assert set(concrete) == set(named) == set(exported)
    top = ast.parse((REPO_ROOT / "locustfile.py").read_text())
    star = [n for n in ast.walk(top) if isinstance(n, ast.ImportFrom) and n.module == "loadtests.locustfile"]
    assert star and any(alias.name == "*" for alias in star[0].names)
    assert set(users.__all__) >= set(concrete)
    assert MIX_KIND.takes_mix and [k for k in KINDS.values() if k.takes_mix] == [MIX_KIND]


def test_the_options_a_kind_reads_are_settings_fields():
    from loadtests.config.settings import Settings
    from loadtests.workloads.kinds import KINDS

    fields = {field.name for field in dataclasses.fields(Settings)}
    for kind in KINDS.values():
        assert set(kind.options) <= fields, kind.name


def test_a_kind_outside_the_table_is_refused_the_same_way():
    """Pre-flight asks the kind, not its name: the fake kind's missing --model is the generic's error."""
    from loadtests.config.settings import Settings
    from loadtests.errors import ModelMismatchError
    from loadtests.workloads.kinds import GENERIC

    echo = dataclasses.replace(GENERIC, name="echo", takes_mix=False)
    try:
        echo.model_name(Settings(), [echo])
    except ModelMismatchError as error:
        assert str(error) == "echo Triton users need --model NAME"
    else:
        raise AssertionError("no --model was not refused")
