"""docs/guides/your-locustfile.md: every locustfile it shows (a ```python block whose first line
names the file) and every `locust -f` command that runs them, run against the session's Triton
from a directory that holds only those files: exit 0, requests sent, and per model the client's
count is Triton's."""

from __future__ import annotations

import re

from tests.helpers import REPO_ROOT

GUIDE = REPO_ROOT / "docs/guides/your-locustfile.md"


def guide_files() -> dict[str, str]:
    return dict(re.findall(r"```python\n# (\w+\.py)\n(.*?)```", GUIDE.read_text(), re.S))


def guide_commands() -> list[str]:
    blocks = re.findall(r"```bash\n(.*?)```", GUIDE.read_text(), re.S)
    return [line.strip() for block in blocks for line in block.splitlines() if line.startswith("locust -f ")]


def test_the_guide_shows_its_locustfiles_and_runs_each():
    files, commands = guide_files(), guide_commands()
    assert set(files) == {"journey.py", "ported.py", "beside.py"}
    used = {name for command in commands for name in re.findall(r"(\w+\.py)", command)}
    assert set(files) <= used
