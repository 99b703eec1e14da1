"""The package's file lists and dependencies, read from the repository (pyproject.toml has the rest).

`pip install .` installs `loadtests` and `analysis`, the payloads the workloads read (as
`loadtests/payloads`) and the dependencies pinned in requirements.txt above its `[server]`
line; `pip install '.[server]'` adds the ones below it (the local Triton and its demo models).
One pinned file serves the tests, the image and the package, so the three never drift.
"""

from pathlib import Path

from setuptools import find_packages, setup

HERE = Path(__file__).resolve().parent
SERVER_MARKER = "# ---- [server]"


def requirements() -> tuple[list[str], list[str]]:
    """requirements.txt's pins: (everyone's, the server extra's)."""
    core: list[str] = []
    server: list[str] = []
    target = core
    for line in (HERE / "requirements.txt").read_text().splitlines():
        if line.startswith(SERVER_MARKER):
            target = server
        line = line.split("#", 1)[0].strip()
        if line:
            target.append(line)
    return core, server


def payload_packages() -> list[str]:
    """payloads/ and its folders, installed as loadtests.payloads.*."""
    folders = [HERE / "payloads", *sorted(p for p in (HERE / "payloads").rglob("*") if p.is_dir())]
    return [".".join(("loadtests", *p.relative_to(HERE).parts)) for p in folders]


CORE, SERVER = requirements()
setup(
    packages=[*find_packages(include=["loadtests", "loadtests.*", "analysis", "analysis.*"]), *payload_packages()],
    package_dir={"loadtests.payloads": "payloads"},
    package_data={name: ["*"] for name in payload_packages()},
    install_requires=CORE,
    extras_require={"server": SERVER},
)
