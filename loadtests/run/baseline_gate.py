"""`--baseline DIR_OR_URL --gate CLAUSES`: a load test gates itself against a baseline at its end.

The clauses were parsed and a local baseline found before any load (loadtests/options/reading.py);
when summary.json is complete, `python -m analysis compare BASELINE THIS_RUN --gate CLAUSES`
judges them (a process of its own, as tune runs compare: the analysis package reads run
directories and imports nothing of a load test, loadtests/ imports nothing of it). Its lines go
to the console, its comparison to `<run dir>/gate/`, with --junit its verdicts beside the SLO's
(`slo.xml` -> `slo.gate.xml`); a regression sets exit code 3, a baseline it cannot compare with
(its traffic differs, a URL that cannot be read) exit code 2 with its one line.

    locust -f locustfile.py --headless -u 4 -t 30s TritonHttpUser --model my_model \\
        --baseline gs://bucket/baselines/main --gate "p50<+5%,throughput>-5%"
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from locust.env import Environment

from loadtests.config.settings import Settings

GATE_DIR = "gate"
EXIT_REGRESSED = 3
EXIT_BAD_INPUT = 2


def command(settings: Settings, run_dir: Path) -> list[str]:
    """The compare command that judges this run against the baseline."""
    words = [sys.executable, "-m", "analysis", "compare", settings.baseline, str(run_dir)]
    words += ["--labels", "baseline,this run", "--out", str(run_dir / GATE_DIR), "--gate", settings.gate]
    if settings.junit:
        junit = Path(settings.junit)
        words += ["--junit", str(junit.with_name(f"{junit.stem}.gate{junit.suffix or '.xml'}"))]
    return words


def judge(environment: Environment, settings: Settings, run_dir: Path) -> None:
    """Run the gate and print its verdicts; the exit code follows (3 regressed, 2 not comparable)."""
    if not settings.gate:
        return
    result = subprocess.run(command(settings, run_dir), capture_output=True, text=True, stdin=subprocess.DEVNULL)
    lines = result.stdout.strip().splitlines()[1:]  # the first is compare.html's path
    print(f"Gate against {settings.baseline} ({run_dir / GATE_DIR / 'compare.html'}):")
    for line in lines:
        print(f"  {line}")
    if result.returncode == EXIT_REGRESSED:
        environment.process_exit_code = EXIT_REGRESSED
    elif result.returncode != 0:
        error = (result.stderr.strip().splitlines() or ["error: the gate could not run"])[-1]
        print(error)
        environment.process_exit_code = EXIT_BAD_INPUT
