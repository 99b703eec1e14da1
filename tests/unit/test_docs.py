"""The docs a newcomer reads: every link resolves, and every command in README and the guides
is one the suite accepts today.

Links: each relative link in README.md and docs/ points at a file that exists, and each
`#anchor` at a heading of that file (GitHub's slugs). Commands: see `doc_commands()`.
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path
from unittest import mock

import pytest

from tests.helpers import REPO_ROOT

DOCS = sorted((REPO_ROOT / "docs").rglob("*.md"))
LINK = re.compile(r"\]\(([^)\s]+)\)")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*]|\[([^\]]*)\]\([^)]*\)", lambda m: m.group(1) or "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    found, seen = set(), {}
    in_code = False
    for line in path.read_text().splitlines():
        if line.startswith("```"):
            in_code = not in_code
        if in_code or not line.startswith("#"):
            continue
        base = slug(line.lstrip("#"))
        count = seen.get(base, 0)
        found.add(base if count == 0 else f"{base}-{count}")
        seen[base] = count + 1
    return found


def broken_links(path: Path) -> list[str]:
    problems = []
    for target in LINK.findall(path.read_text()):
        if re.match(r"^[a-z]+:", target) or target.startswith("<"):
            continue
        file_part, _, anchor = target.partition("#")
        resolved = (path.parent / file_part).resolve() if file_part else path
        where = path.relative_to(REPO_ROOT).as_posix()
        if not resolved.exists():
            problems.append(f"{where}: {target} (no such file)")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            problems.append(f"{where}: {target} (no heading #{anchor})")
    return problems


@pytest.mark.parametrize("path", [REPO_ROOT / "README.md", *DOCS], ids=lambda p: p.relative_to(REPO_ROOT).as_posix())
def test_every_link_resolves(path):
    problems = broken_links(path)
    assert not problems, "\n".join(problems)


def test_the_link_check_catches_a_broken_link(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n## A `code_name` heading, with (commas)\n\n[ok](#title) [bad](#nope) [gone](gone.md)\n")
    assert anchors(page) == {"title", "a-code_name-heading-with-commas"}
    found = [problem.split(": ", 1)[1] for problem in broken_links_at(page)]
    assert found == ["#nope (no heading #nope)", "gone.md (no such file)"]


def broken_links_at(page: Path) -> list[str]:
    """broken_links for a file outside the repository (the check's own test)."""
    problems = []
    for target in LINK.findall(page.read_text()):
        file_part, _, anchor = target.partition("#")
        resolved = (page.parent / file_part) if file_part else page
        if not resolved.exists():
            problems.append(f"{page.name}: {target} (no such file)")
        elif anchor and anchor not in anchors(resolved):
            problems.append(f"{page.name}: {target} (no heading #{anchor})")
    return problems


# --- Commands ------------------------------------------------------------------------------
#
# Every shell command in README.md, docs/guides/ and docs/reference/ (fenced bash blocks, and
# the README's inline `python -m ...` commands) is one of:
# - `locust -f locustfile.py ...`, run for real against the session's Triton (its addresses in
#   place of the doc's, `-t 2s`, a load shape's `step_s` at 1 s, placeholder model names as
#   below): it must exit 0 (3 where it has an --slo: a missed target is a result) and measure;
#   one that needs what the machine has not (a TLS gateway, the web UI) is checked with the parser;
# - `python -m loadtests ...` and `python -m analysis ...`: checked with the command's own
#   parser, and the options it passes on to Locust with the suite's (into Settings);
# - `make TARGET`: the Makefile has the target;
# - anything else (kubectl, gcloud, shell loops over variables): not checked here; the
#   manifests are checked by tests/server/test_k8s.py.
PLACEHOLDERS = {
    "my_bert": "bert_qa",
    "my_model": "identity",
    "M": "identity",
    "model_a": "identity",
    "model_b": "sleep",
}
COMMAND_DOCS = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs/guides").glob("*.md"))]
COMMAND_DOCS += sorted((REPO_ROOT / "docs/reference").glob("*.md"))


def doc_commands() -> list[tuple[str, str]]:
    """(where, command) for every command line the docs show, comments and prompts removed."""
    found = []
    for path in COMMAND_DOCS:
        where = path.relative_to(REPO_ROOT).as_posix()
        text = path.read_text()
        for block in re.findall(r"```(?:bash|sh|shell)\n(.*?)```", text, re.S):
            for line in block.replace("\\\n", " ").splitlines():
                line = re.sub(r"\s+", " ", line.strip())
                if line and not line.startswith("#"):
                    found += [(where, part.strip()) for part in re.split(r" (?:&&|\|\||;) ", line)]
        if path.name == "README.md":
            found += [(where, code) for code in re.findall(r"`(python -m [^`]+)`", text)]
    return found


def words(command: str) -> list[str]:
    """The command's argv: comments, a trailing `&` and the `.venv/bin/` prefix removed,
    placeholders filled in."""
    argv = shlex.split(re.sub(r"<[A-Za-z][A-Za-z ]*>", "placeholder", command), comments=True)
    if argv and argv[-1] == "&":
        argv.pop()
    if argv and argv[0].startswith(".venv/bin/"):
        argv[0] = argv[0].removeprefix(".venv/bin/")
    return [PLACEHOLDERS.get(word, word) for word in argv]


def kind_of(argv: list[str]) -> str:
    if argv[:3] == ["locust", "-f", "locustfile.py"]:
        return "locust"
    if argv[:3] in (["python", "-m", "loadtests"], ["python", "-m", "analysis"]):
        return argv[2]
    if argv[:1] == ["make"]:
        return "make"
    return "other"


def classified() -> dict[str, list[tuple[str, list[str]]]]:
    groups: dict[str, list[tuple[str, list[str]]]] = {}
    for where, command in doc_commands():
        if "$" in command or "[" in command:  # a shell loop's variables; a synopsis
            groups.setdefault("other", []).append((where, command.split()))
            continue
        argv = words(command)
        groups.setdefault(kind_of(argv), []).append((where, argv))
    return groups


def command_id(value) -> str:
    return value if isinstance(value, str) else " ".join(value)[:80]


def suite_locust_parser():
    from locust.argument_parser import get_parser

    from loadtests.options import table

    parser = get_parser(default_config_files=())
    table.add_arguments(parser)
    return parser


def check_locust_options(argv: list[str], pki=None) -> None:
    """Parse `argv` as the locust command would (Locust's and the suite's options), and read
    the suite's into Settings: an unknown option or a bad value raises. The doc's TLS files
    (`--ssl-ca ca.pem`) are the reader's: real ones from `pki` stand in for them."""
    from loadtests.options.reading import settings_from

    if pki is not None:
        files = {"--ssl-ca": pki.ca, "--ssl-cert": pki.client_cert, "--ssl-key": pki.client_key}
        argv = [str(files[argv[i - 1]]) if i and argv[i - 1] in files else word for i, word in enumerate(argv)]
    parsed = suite_locust_parser().parse_args(argv)
    # `--header "NAME: env:VAR"` reads VAR when the run starts: the doc's reader sets it.
    variables = {name: "placeholder" for name in re.findall(r"env:(\w+)", " ".join(argv))}
    with mock.patch.dict(os.environ, variables):
        settings_from(parsed)


def test_the_docs_show_commands_of_every_kind():
    groups = classified()
    assert {kind: len(items) for kind, items in groups.items() if kind != "other"}.keys() >= {
        "locust",
        "loadtests",
        "analysis",
        "make",
    }


@pytest.mark.parametrize("where,argv", classified()["loadtests"] + classified()["analysis"], ids=command_id)
def test_every_documented_command_parses(where, argv):
    if argv[2] == "analysis":
        from analysis.__main__ import _parser

        _parser().parse_args(argv[3:])
        return
    check_loadtests_command(where, argv[3:])


def check_loadtests_command(where: str, argv: list[str]) -> None:
    """`python -m loadtests` parses `argv`; what it passes on is checked where it goes: tune's
    to capacity (which runs each variant's search), sweep's and capacity's to Locust."""
    from loadtests.__main__ import build_parser

    args, extra = build_parser().parse_known_args(argv)
    if not extra:
        return
    assert getattr(args, "pass_through", False), f"{where}: unrecognized {extra}"
    if args.command == "tune":
        check_loadtests_command(where, ["capacity", "--model", args.model, "--slo", args.slo, *extra])
    else:
        check_locust_options(extra)


@pytest.mark.parametrize("where,argv", classified()["make"], ids=command_id)
def test_every_documented_make_target_exists(where, argv):
    makefile = (REPO_ROOT / "Makefile").read_text()
    for target in argv[1:]:
        assert re.search(rf"^{re.escape(target)}:", makefile, re.M), f"{where}: make {target}"
