"""`make test`: `python -m tests.shards [--shards N] [pytest args]`, in one step (two when named).

A test's top folder says what it needs, and that alone decides where it runs:

- `tests/unit/<package>/`: Python only, no Triton, no browser (the k8s manifest checkers skip,
  naming k8s/install_tools.sh, where it has not run). Step 1's background shard, nice 19; and
  `make check`.
- `tests/refusals/<package>/`: a Triton only to show that a refused command left it untouched;
  no timing. Step 1's background shard, first, on a session Triton of its own.
- `tests/system/<package>/`: a real Triton or a browser (runs of a fixed length, models that
  sleep, fault drills). Step 1, dealt over N shards.
- `tests/measurement/`: the host alone (accuracy against a known truth: capacity, sweeps'
  stable levels, open-loop rates, tune's ranking). Not in `make test`: `make bench-measurement`
  runs it (tests/margins.py), or step 2 here when the folder is named, after step 1 has ended.

- Step 1 runs three folders side by side. `tests/system/`'s files are dealt longest first to the
  shard with the least work, by each file's time in tests/durations.json (a file missing there
  counts as the median file), each shard with its own session Triton on free ports and its own
  temporary directory: most of these tests wait, so N shards share 2 cores well. The background
  shard runs `tests/refusals/` then `tests/unit/` (mostly CPU, no waiting) at the lowest CPU
  priority, in the CPU the dealt shards leave idle; its refusals come first so that its session
  Triton starts while the shards start theirs, not in the middle of a measuring run.
- Step 2, only when `tests/measurement/` is named, runs it alone: nothing else on the machine is
  measured with it.
tests/conftest.py refuses a test in `tests/unit/` or `tests/refusals/` that takes a browser, or
a Triton where it may not; tests/unit/test_shards.py checks that no test there starts a Triton
in its body, and that every test file is in one of the four folders.

Paths given (`python -m tests.shards tests/system/traffic`) limit both steps to them; with none,
every folder but `tests/measurement/` runs.
`--update-durations` rewrites tests/durations.json from this run's JUnit XML (the dealt
shards' and step 2's): do it after adding slow tests, on a quiet machine.

Each shard's full output goes to `.pytest_shards/<this process id>/shard-K.log` (the
directories of runs no longer running are removed at the next start). This prints one line per
shard as it ends, the failures of any shard that failed, the slowest tests over all shards, and
exits with the first non-zero pytest exit code (0 when every shard passed).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time
import xml.etree.ElementTree as ElementTree
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
DURATIONS = REPO_ROOT / "tests" / "durations.json"
OUTPUT = REPO_ROOT / ".pytest_shards"
SLOWEST = 30
PROGRESS_EVERY_S = 60.0
# The four folders, by what their tests need (the table above).
UNIT = "tests/unit/"
REFUSALS = "tests/refusals/"
SYSTEM = "tests/system/"
MEASUREMENT = "tests/measurement/"
FOLDERS = (UNIT, REFUSALS, SYSTEM, MEASUREMENT)
BACKGROUND_NICE = 19
# pytest's exit code when a shard's selection holds no test (a file of units only, say).
NO_TESTS = 5


def test_files(under: list[str]) -> list[str]:
    """Every test file (below the given paths, if any), relative to the repository."""
    roots = [(REPO_ROOT / path).resolve() for path in under] or [REPO_ROOT / "tests"]
    found = set()
    for root in roots:
        found.update([root] if root.is_file() else root.rglob("test_*.py"))
    return sorted(str(path.relative_to(REPO_ROOT)) for path in found)


def deal(files: list[str], durations: dict[str, float], shards: int) -> list[list[str]]:
    """The files longest first, each to the shard with the least work so far (ties: fewer files).

    >>> deal(["a", "b", "c", "d"], {"a": 10, "b": 6, "c": 5, "d": 1}, 2)
    [['a', 'd'], ['b', 'c']]
    """
    known = [durations[name] for name in files if name in durations]
    default = statistics.median(known) if known else 1.0
    load = [0.0] * shards
    dealt: list[list[str]] = [[] for _ in range(shards)]
    for name in sorted(files, key=lambda name: (-durations.get(name, default), name)):
        lightest = min(range(shards), key=lambda index: (load[index], len(dealt[index]), index))
        dealt[lightest].append(name)
        load[lightest] += durations.get(name, default)
    return [sorted(names) for names in dealt if names]


def output_directory() -> Path:
    """This run's own directory (runs side by side must not share logs); finished runs' go."""
    for old in OUTPUT.glob("*") if OUTPUT.is_dir() else ():
        if old.is_dir() and old.name.isdigit() and not Path(f"/proc/{old.name}").exists():
            shutil.rmtree(old, ignore_errors=True)
    directory = OUTPUT / str(os.getpid())
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def start_shard(
    output: Path, index: int, files: list[str], pytest_args: list[str], nice: int = 0
) -> tuple[subprocess.Popen, Path]:
    log = output / f"shard-{index}.log"
    command = [
        *(["nice", "-n", str(nice)] if nice else []),
        sys.executable,
        "-m",
        "pytest",
        *files,
        *pytest_args,
        "-p",
        "no:cacheprovider",
        "--durations=0",
        f"--junitxml={output / f'shard-{index}.xml'}",
        f"--basetemp={output / f'tmp-{index}'}",
    ]
    with open(log, "w") as output:
        process = subprocess.Popen(command, cwd=REPO_ROOT, stdout=output, stderr=subprocess.STDOUT, env=os.environ)
    return process, log


def last_line(log: Path) -> str:
    lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
    return lines[-1].strip("= ") if lines else "(no output)"


def failures_section(log: Path) -> str:
    """The shard's output from its first FAILURES/ERRORS header on (or its last 60 lines)."""
    lines = log.read_text(errors="replace").splitlines()
    for index, line in enumerate(lines):
        if line.startswith("=") and (" FAILURES " in line or " ERRORS " in line):
            return "\n".join(lines[index:])
    return "\n".join(lines[-60:])


def progress(log: Path) -> str:
    """The shard's last pytest progress mark ('[ 45%]'), or '-' before its first."""
    with open(log, "rb") as file:
        file.seek(max(0, log.stat().st_size - 4096))
        marks = re.findall(rb"\[ *(\d+)%\]", file.read())
    return f"{int(marks[-1])}%" if marks else "-"


def wait_all(running: dict[int, tuple[subprocess.Popen, Path]], started: float) -> dict[int, int]:
    """Wait for every shard; print each as it ends, and the progress of all every minute.
    Ctrl-C stops them all."""
    codes: dict[int, int] = {}
    next_report = time.monotonic() + PROGRESS_EVERY_S
    try:
        while len(codes) < len(running):
            if time.monotonic() >= next_report:
                next_report += PROGRESS_EVERY_S
                marks = ", ".join(f"shard {index} {progress(log)}" for index, (_, log) in running.items())
                print(f"after {time.monotonic() - started:.0f} s: {marks}", flush=True)
            for index, (process, log) in running.items():
                if index in codes or process.poll() is None:
                    continue
                codes[index] = process.returncode
                print(f"shard {index} ended after {time.monotonic() - started:.0f} s: {last_line(log)}", flush=True)
            time.sleep(0.5)
    except KeyboardInterrupt:
        for process, _ in running.values():
            if process.poll() is None:
                process.send_signal(signal.SIGINT)
        for process, _ in running.values():
            process.wait()
        raise
    return codes


def file_of(classname: str) -> str:
    """'tests.system.run.test_x.TestClass' -> 'tests/system/run/test_x.py' (the longest prefix that is a file)."""
    parts = classname.split(".")
    for end in range(len(parts), 0, -1):
        candidate = "/".join(parts[:end]) + ".py"
        if (REPO_ROOT / candidate).is_file():
            return candidate
    return classname


def timings(output: Path, shards: list[int]) -> tuple[list[tuple[float, str]], dict[str, float]]:
    """Every test's time (setup + call + teardown, as JUnit counts it) and each file's total."""
    tests: list[tuple[float, str]] = []
    files: dict[str, float] = {}
    for index in shards:
        path = output / f"shard-{index}.xml"
        if not path.is_file():
            continue
        for case in ElementTree.parse(path).getroot().iter("testcase"):
            seconds = float(case.get("time") or 0.0)
            key = file_of(case.get("classname", ""))
            tests.append((seconds, f"{key}::{case.get('name')}"))
            files[key] = files.get(key, 0.0) + seconds
    return sorted(tests, reverse=True), files


def updated_durations(old: dict[str, float], files: list[str], measured: dict[str, float]) -> dict[str, float]:
    """tests/durations.json after a run of `files`: the timed folders' files only (tests/system/,
    dealt by it, and tests/measurement/), each its time in this run; a timed file this run did
    not time (not run, or every test deselected) keeps its time, one never timed is left out (it
    counts as the median file), and files no longer there go.

    >>> updated_durations({SYSTEM + "a.py": 5.0}, [SYSTEM + "b.py", UNIT + "c.py"], {SYSTEM + "b.py": 7.04})
    {'tests/system/b.py': 7.0}
    """
    timed = in_folder(files, SYSTEM) + in_folder(files, MEASUREMENT)
    fresh = {**old, **{name: round(measured[name], 1) for name in timed if name in measured}}
    kept = [name for name in fresh if name.startswith((SYSTEM, MEASUREMENT))]
    return {name: fresh[name] for name in sorted(kept) if (REPO_ROOT / name).is_file() or name in timed}


def in_folder(files: list[str], folder: str) -> list[str]:
    """The files below one of the four folders.

    >>> in_folder(["tests/unit/a/test_x.py", "tests/system/a/test_x.py"], SYSTEM)
    ['tests/system/a/test_x.py']
    """
    return [name for name in files if name.startswith(folder)]


def selection(files: list[str], named: bool) -> list[str]:
    """What a run takes of the files found: all of them when paths were named, else all but
    tests/measurement/ (`make bench-measurement` runs that folder, and tables its margins).

    >>> selection(["tests/unit/test_a.py", "tests/measurement/test_b.py"], named=False)
    ['tests/unit/test_a.py']
    """
    return files if named else [name for name in files if not name.startswith(MEASUREMENT)]


def outside_the_folders(files: list[str]) -> list[str]:
    """Test files in none of the four folders (`make test` would run them nowhere).

    >>> outside_the_folders(["tests/unit/test_a.py", "tests/test_b.py", "tests/run/test_c.py"])
    ['tests/test_b.py', 'tests/run/test_c.py']
    """
    return [name for name in files if not name.startswith(FOLDERS)]


def misplaced(nodeid: str, fixtures) -> str | None:
    """Why a test cannot be where it is, from the fixtures it takes (None when it can).

    >>> misplaced("tests/unit/run/test_x.py::test_y", ["tmp_path", "triton"])
    'takes a Triton (triton): it belongs in tests/system/ (or tests/refusals/ for a refusal)'
    >>> misplaced("tests/system/run/test_x.py::test_y", ["triton", "browser"]) is None
    True
    """
    tritons = [name for name in fixtures if name.endswith("triton")]
    if nodeid.startswith(UNIT) and tritons:
        return f"takes a Triton ({', '.join(tritons)}): it belongs in {SYSTEM} (or {REFUSALS} for a refusal)"
    if nodeid.startswith((UNIT, REFUSALS)) and "browser" in fixtures:
        return f"takes the browser: it belongs in {SYSTEM}"
    return None


def start_step_one(
    output: Path, files: list[str], durations: dict[str, float], count: int, pytest_args: list[str]
) -> tuple[dict[int, tuple[subprocess.Popen, Path]], list[int]]:
    """tests/system/ dealt over `count` shards, and the background shard (tests/refusals/, then
    tests/unit/). Returns every shard running, and the indexes of the dealt ones."""
    running = {}
    for index, dealt in enumerate(deal(in_folder(files, SYSTEM), durations, count)):
        running[index] = start_shard(output, index, dealt, pytest_args)
        estimate = sum(durations.get(name, 0.0) for name in dealt)
        print(
            f"step 1, shard {index}: {SYSTEM}, {len(dealt)} files (about {estimate:.0f} s), log {running[index][1]}",
            flush=True,
        )
    shards = sorted(running)
    background = in_folder(files, REFUSALS) + in_folder(files, UNIT)  # refusals first: their Triton starts early
    if background:
        index = len(running)
        running[index] = start_shard(output, index, background, pytest_args, BACKGROUND_NICE)
        print(
            f"step 1, shard {index}: {REFUSALS} then {UNIT}, nice {BACKGROUND_NICE}, log {running[index][1]}",
            flush=True,
        )
    return running, shards


def run_steps(
    output: Path, files: list[str], durations: dict[str, float], count: int, pytest_args: list[str]
) -> tuple[dict[int, int], dict[int, Path], list[int]]:
    """Step 1 (side by side), then step 2 (tests/measurement/ alone). Returns each shard's exit
    code, its log, and the indexes of the shards whose times tests/durations.json keeps."""
    started = time.monotonic()
    measured = in_folder(files, MEASUREMENT)
    others = [name for name in files if name not in measured]
    running, timed = start_step_one(output, others, durations, count, pytest_args) if others else ({}, [])
    codes = wait_all(running, started)
    logs = {index: log for index, (_, log) in running.items()}
    if measured:
        index = len(running)
        estimate = sum(durations.get(name, 0.0) for name in measured)
        alone = {index: start_shard(output, index, measured, pytest_args)}
        print(f"step 2, shard {index}: {MEASUREMENT} alone, {len(measured)} files (about {estimate:.0f} s), "
              f"log {alone[index][1]}", flush=True)  # fmt: skip
        codes |= wait_all(alone, started)
        logs[index] = alone[index][1]
        timed.append(index)
    return codes, logs, timed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--shards", type=int, default=int(os.environ.get("TEST_SHARDS", "2")))
    parser.add_argument("--update-durations", action="store_true", help="rewrite tests/durations.json")
    options, rest = parser.parse_known_args(argv)
    if options.shards < 1:
        parser.error("--shards must be at least 1")
    paths = [item for item in rest if not item.startswith("-") and (REPO_ROOT / item).exists()]
    pytest_args = [item for item in rest if item not in paths]
    durations = json.loads(DURATIONS.read_text()) if DURATIONS.is_file() else {}
    output = output_directory()
    started = time.monotonic()
    files = test_files(paths)
    if stray := outside_the_folders(files):
        print(f"error: test files outside {', '.join(FOLDERS)} (tests/shards.py): {', '.join(stray)}")
        return 2
    codes, logs, timed = run_steps(output, selection(files, bool(paths)), durations, options.shards, pytest_args)
    codes = {index: 0 if code == NO_TESTS else code for index, code in codes.items()}
    for index, code in sorted(codes.items()):
        if code != 0:
            print(f"\n===== shard {index} (exit {code}) =====\n{failures_section(logs[index])}")
    tests, _ = timings(output, sorted(codes))
    print(f"\n===== slowest {SLOWEST} tests =====")
    for seconds, name in tests[:SLOWEST]:
        print(f"{seconds:8.2f}s {name}")
    print(f"\n{len(tests)} tests in {len(codes)} shards, {time.monotonic() - started:.0f} s wall")
    if not tests:
        print("no test ran")
        return NO_TESTS
    if options.update_durations and all(code == 0 for code in codes.values()):
        _, measured = timings(output, timed)  # what the dealt shards and step 2 ran, not the background's
        fresh = updated_durations(durations, files, measured)
        DURATIONS.write_text(json.dumps(fresh, indent=1) + "\n")
        print(f"wrote {DURATIONS.relative_to(REPO_ROOT)}")
    return next((code for _, code in sorted(codes.items()) if code != 0), 0)


if __name__ == "__main__":
    sys.exit(main())
