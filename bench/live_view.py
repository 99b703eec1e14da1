"""`python -m bench.live_view`: what the web UI's live view costs the load generator.

The same test (TritonHttpUser on `identity`, USERS users, DURATION_S) runs headless and with the
web UI (`--autostart`) while headless Chromium shows the "Triton (exact)" tab, whose table and
charts ask the suite every 2 s; the two alternate, ROUNDS times each, on one local Triton. Writes
bench/live_view_results.md: per run the throughput and the load generator's CPU per request
(summary.json), and the ratios web UI / headless. A headless run keeps no live series at all
(run/live.py builds it only with a web UI), so `make bench`'s own figures cannot move.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from loadtests.server import TEST_REPOSITORY, LocalTriton, TritonPorts
from loadtests.server.launcher import SUITE_LOCUSTFILE, locust_command

BENCH_DIR = Path(__file__).resolve().parent
RESULTS = BENCH_DIR / "live_view_results.md"
USERS, DURATION_S, ROUNDS = 4, 20, 3
TEST = ["-u", str(USERS), "-r", str(USERS), "-t", f"{DURATION_S}s", "TritonHttpUser", "--model", "identity"]


def headless(triton: LocalTriton, run_dir: Path) -> dict:
    command = locust_command(*TEST, *triton.options, "--run-dir", str(run_dir))
    subprocess.run(command, check=True, capture_output=True, timeout=DURATION_S + 120)
    return json.loads((run_dir / "summary.json").read_text())


def with_web_ui(triton: LocalTriton, run_dir: Path, driver) -> dict:
    """The same test started by --autostart, the exact tab open in the browser all along."""
    port = TritonPorts.free().http
    command = [sys.executable, "-m", "locust", "-f", str(SUITE_LOCUSTFILE), "--autostart", "--autoquit", "3"]
    command += [*TEST, *triton.options, "--run-dir", str(run_dir), "--web-port", str(port)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not _open_exact_tab(driver, f"http://127.0.0.1:{port}/"):
            if time.monotonic() > deadline:
                raise SystemExit("error: the web UI never showed the exact tab")
            time.sleep(0.5)
        process.wait(timeout=DURATION_S + 120)
    finally:
        process.kill()
    return json.loads((run_dir / "summary.json").read_text())


def _open_exact_tab(driver, url: str) -> bool:
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.common.by import By

    try:
        driver.get(url)
        tabs = driver.find_elements(By.XPATH, "//*[@role='tab' and contains(., 'Triton (exact)')]")
        if tabs:
            tabs[0].click()
        return bool(tabs)
    except WebDriverException:
        return False


def figures(summary: dict) -> tuple[float, float]:
    (endpoint,) = summary["endpoints"]
    return endpoint["throughput_infer_per_s"], summary["load_generator"]["cpu_per_request_us"]


def chromium():
    """Headless Chromium as the browser tests start it (Debian's chromium and chromedriver)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    from tests.system.run.test_webui_browser import CHROMEDRIVER, CHROMIUM, CHROMIUM_FLAGS

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    return webdriver.Chrome(options=options, service=Service(str(CHROMEDRIVER)))


def main() -> None:
    rows, measured = [], {"headless": [], "web UI": []}
    with tempfile.TemporaryDirectory() as tmp, LocalTriton([TEST_REPOSITORY]) as triton:
        driver = chromium()
        try:
            for round_ in range(ROUNDS):
                for kind in ("headless", "web UI"):
                    run_dir = Path(tmp) / f"{kind.replace(' ', '')}-{round_}"
                    load = os.getloadavg()[0]
                    summary = headless(triton, run_dir) if kind == "headless" else with_web_ui(triton, run_dir, driver)
                    rate, cpu = figures(summary)
                    measured[kind].append((rate, cpu))
                    rows.append(f"| {round_ + 1} | {kind} | {rate:,.1f} | {cpu:,.1f} | {load:.1f} |")
        finally:
            driver.quit()
    rate = {kind: statistics.median(r for r, _ in values) for kind, values in measured.items()}
    cpu = {kind: statistics.median(c for _, c in values) for kind, values in measured.items()}
    lines = [
        "# The web UI's live view: cost to the load generator",
        "",
        f"`python -m bench.live_view`, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {os.cpu_count()} cores (shared). "
        f"{USERS} users, {DURATION_S} s per run, headless and web UI (the exact tab open) alternating.",
        "",
        "| round | run | inferences/s | load generator CPU µs per request | load average |",
        "| ---: | --- | ---: | ---: | ---: |",
        *rows,
        "",
        f"Medians, web UI / headless: throughput {rate['web UI'] / rate['headless']:.3f}, "
        f"CPU per request {cpu['web UI'] / cpu['headless']:.3f}.",
    ]
    RESULTS.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
