"""The docs a newcomer reads: every link resolves, and every command in README and the guides is one
the suite accepts today.

The tests here need a real Triton or a browser; the others, and this feature's account, are in
tests/unit/test_docs.py.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

from tests.helpers import run_cli
from tests.tls_support import make_pki
from tests.unit.test_docs import check_locust_options, classified


def runnable(argv: list[str], triton, run_dir: Path) -> list[str] | None:
    """The documented locust command pointed at the session's Triton, short; None when it needs
    what this machine has not (a TLS gateway, a browser for the web UI, a baseline in object storage)."""
    if "--headless" not in argv or any(word.startswith(("--ssl", "--header")) for word in argv):
        return None
    if "--baseline" in argv and "://" in argv[argv.index("--baseline") + 1]:
        return None
    out, skip = [], False
    for index, word in enumerate(argv):
        if skip:
            skip = False
            continue
        if word in ("-t", "--run-time", "--triton-grpc", "--triton-http", "--triton-metrics", "--run-dir", "--junit"):
            skip = True
            if word == "--junit":
                out += ["--junit", str(run_dir.with_suffix(".xml"))]
            continue
        out.append(re.sub(r"step_s=\d+", "step_s=1", word) if argv[index - 1] == "--shape-args" else word)
    if "--load-shape" not in out:
        # 3 s, not 2: a ResNet command's 4 users sending 600-KB tensors, three commands at a time,
        # once finished no request in 2 s on a host at a load average of 10 (exit 3, 0 requests).
        out += ["-t", "3s"]
    return [*out, *triton.options, "--run-dir", str(run_dir), "--only-summary"]


def test_every_documented_locust_command_runs(triton, tmp_path):
    """The README's recipes run one at a time, each reconciled with Triton's own count (the
    first hour's promise); the guides' commands three at a time (sharing the server, their
    counts cannot be told apart there: every other test reconciles them)."""
    from concurrent.futures import ThreadPoolExecutor

    runs, parsed_only = [], []
    pki = make_pki(tmp_path / "pki")
    for number, (where, argv) in enumerate(classified()["locust"]):
        check_locust_options(argv[3:], pki)
        command = runnable(argv, triton, tmp_path / f"run{number}")
        (runs if command else parsed_only).append((where, argv, command))
    readme = [item for item in runs if item[0] == "README.md"]
    assert readme and len(runs) > len(readme), "no documented locust command ran"

    def run(item):
        started = time.monotonic()
        result = run_cli(["-m", *item[2]], timeout=120)
        print(f"{time.monotonic() - started:5.1f} s  {' '.join(item[1])[:100]}")
        return item, result

    problems = []
    for item, result in map(run, readme):
        problems += run_problems(item, result, reconcile=True)
    with ThreadPoolExecutor(max_workers=3) as pool:
        for item, result in pool.map(run, [item for item in runs if item[0] != "README.md"]):
            problems += run_problems(item, result, reconcile=False)
    assert not problems, "\n".join(problems)
    print(f"{len(runs)} documented locust commands ran, {len(parsed_only)} checked with the parser")


def run_problems(item, result, reconcile: bool) -> list[str]:
    where, argv, command = item
    allowed = (0, 3) if "--slo" in argv else (0,)
    run_dir = Path(command[command.index("--run-dir") + 1])
    summary = json.loads((run_dir / "summary.json").read_text()) if (run_dir / "summary.json").exists() else {}
    requests = sum(endpoint["requests"] for endpoint in summary.get("endpoints", []))
    problems = unreconciled(where, argv, summary) if reconcile else []
    if result.returncode not in allowed or requests == 0:
        last = result.stderr.strip().splitlines()[-1:]
        problems.append(f"{where}: {' '.join(argv)}\n  exit {result.returncode}, {requests} requests\n  {last}")
    return problems


def unreconciled(where: str, argv: list[str], summary: dict) -> list[str]:
    """The promise every run makes: per model, the requests the client counted are the ones
    Triton counted (its statistics over the run, in summary.json's `server`)."""
    client: dict[str, int] = {}
    for endpoint in summary.get("endpoints", []):
        client[endpoint["model"]] = client.get(endpoint["model"], 0) + endpoint["requests"]
    server = summary.get("server", {})
    return [
        f"{where}: {' '.join(argv)}\n  {model}: client {count} requests, Triton {server[model]['requests']}"
        f" + {server[model]['failed_requests']} failed"
        for model, count in client.items()
        if model in server and count != server[model]["requests"] + server[model]["failed_requests"]
    ]
