"""The end-of-run console: the exact table (throughput and exact percentiles), the faults,
and how to make the report; printed after Locust's own rounded table, so it is what a
terminal shows last.
"""

from __future__ import annotations

from loadtests.recording.histograms import EndpointStats
from loadtests.run_format.confidence import DEFAULT_CONFIDENCE, confidence_label
from loadtests.run_format.faults import fault_sentences
from loadtests.run_format.summary import late_ratio

# Above this share of late requests (or with any dropped), the generator fell behind its schedule.
BEHIND_LATE_SHARE = 0.05


class HeldConsole:
    """The end-of-run text: printed at once, or, while Locust is quitting (a headless run's
    end), held until its `quit` event, after Locust has printed its own table.

    Example: console.hold(); console.write("...") ; console.release()  # prints "..." now
    """

    def __init__(self) -> None:
        self.holding = False
        self._held: list[str] = []

    def hold(self) -> None:
        self.holding = True

    def write(self, text: str) -> None:
        if self.holding:
            self._held.append(text)
        elif text:
            print(text, end="", flush=True)

    def release(self, **_kwargs) -> None:
        self.holding = False
        text, self._held = "".join(self._held), []
        self.write(text)


def report_hint(run_dir) -> str:
    """The line that says how to turn this run into a report."""
    return f"report: python -m analysis report {run_dir}   (report.html, report.md and plots in that directory)"


def print_exact_summary(endpoints: list[dict], open_loop: bool = False) -> None:
    """The exact table, from summary.json's endpoint entries (`endpoints`): the console prints the
    numbers the summary holds, computed once at the run's end."""
    if not endpoints:
        return
    header = (
        f"{'Endpoint':<30} {'reqs':>8} {'fails':>6} {'infer':>8} {'req/s':>9} {'infer/s':>9} "
        f"{'p50 ms':>9} {'p90 ms':>9} {'p95 ms':>9} {'p99 ms':>9} {'p99.9 ms':>9} {'max ms':>9} "
        f"{'p99 interval ms':>19}"
    )
    title = "Exact latencies (HdrHistogram; ms with microsecond precision"
    if open_loop:
        header += f" {'late':>7} {'dropped':>7} {'p50 unc':>9} {'p99 unc':>9}"
        title += "; open loop: from the intended send time, 'unc' from the actual send"
    lines = [title + "):", header]
    for entry in sorted(endpoints, key=lambda entry: entry["name"]):
        latency = entry["latency_us"]
        cells = " ".join(f"{latency[key] / 1000:>9.3f}" for key in ("p50", "p90", "p95", "p99", "p99.9", "max"))
        line = (
            f"{entry['name']:<30} {entry['requests']:>8} {entry['failures']:>6} {entry['inferences']:>8} "
            f"{entry['throughput_rps']:>9.1f} {entry['throughput_infer_per_s']:>9.1f} {cells}"
        )
        line += f" {interval_cell(entry.get('latency_ci_us', {}).get('p99')):>19}"
        if open_loop:
            uncorrected = entry.get("latency_uncorrected_us") or {"p50": 0.0, "p99": 0.0}
            unc = f"{uncorrected['p50'] / 1000:>9.3f} {uncorrected['p99'] / 1000:>9.3f}"
            line += f" {entry.get('late', 0):>7} {entry.get('dropped', 0):>7} {unc}"
        lines.append(line)
    lines.append(
        f"p99 interval: where the true p99 lies with {confidence_label(DEFAULT_CONFIDENCE)} confidence "
        "(order statistics; every percentile's in summary.json latency_ci_us)"
    )
    if open_loop:
        for entry in sorted(endpoints, key=lambda entry: entry["name"]):
            lines.extend(
                behind_schedule_lines(entry["name"], entry.get("late", 0), entry["requests"], entry.get("dropped", 0))
            )
    lines.extend(sequence_lines(endpoints))
    lines.extend(stream_lines(endpoints))
    print("\n".join(lines), flush=True)


def sequence_lines(endpoints: list[dict]) -> list[str]:
    """One line per sequence users' endpoint: how its sequences ended (summary.json's sequences_*)."""
    return [
        f"{entry['name']}: {entry['sequences_started']} sequences started, {entry['sequences_completed']} completed, "
        f"{entry['sequences_failed']} failed, {entry['sequences_ended_early']} ended early by the stop"
        for entry in sorted(endpoints, key=lambda entry: entry["name"])
        if "sequences_started" in entry
    ]


def stream_lines(endpoints: list[dict]) -> list[str]:
    """A line per streamed endpoint (a decoupled model): responses per request, time to the
    first response and between responses (its latency columns above are to the final response)."""
    lines = []
    for entry in endpoints:
        stream = entry.get("stream")
        if stream is None:
            continue
        first, gap, per = stream["first_response_us"], stream["gap_us"], stream["responses_per_request"]
        lines.append(
            f"{entry['name']} streamed: {per['mean']:.2f} responses/request ({stream['requests_without_response']} "
            f"requests without one); first response p50 {first['p50'] / 1e3:.3f} ms p99 {first['p99'] / 1e3:.3f} ms; "
            f"gap p50 {gap['p50'] / 1e3:.3f} ms p99 {gap['p99'] / 1e3:.3f} ms; latency columns: to the final response"
        )
    return lines


def interval_cell(bounds: list[float | None] | None) -> str:
    """ "41.203-52.991" (ms), or "too few requests" when a bound is missing."""
    if not bounds or bounds[0] is None or bounds[1] is None:
        return "too few requests"
    return f"{bounds[0] / 1000:.3f}-{bounds[1] / 1000:.3f}"


def behind_schedule_warnings(endpoints: dict[str, EndpointStats], where: str = "") -> list[str]:
    """One warning line per endpoint whose open-loop requests went out late or were dropped."""
    warnings = []
    for name in sorted(endpoints):
        stats = endpoints[name]
        warnings.extend(behind_schedule_lines(name, stats.late, stats.requests, stats.dropped, where))
    return warnings


def behind_schedule_lines(name: str, late: int, requests: int, dropped: int, where: str = "") -> list[str]:
    """The warning for one endpoint whose open-loop requests went out late or were dropped (none if on time)."""
    late_share = late_ratio(late, requests)
    if late_share <= BEHIND_LATE_SHARE and not dropped:
        return []
    return [
        f"warning: {name}{where}: the load generator could not keep up with its schedule: "
        f"{late} of {requests} requests ({late_share:.0%}) went out more than 1 ms late, "
        f"{dropped} dropped (the server held --max-in-flight requests, or the generator "
        "lacked CPU); add workers, raise --max-in-flight, or lower --rate"
    ]


def fault_lines(faults: dict) -> list[str]:
    """One warning line per fault of summary.json's "faults" (none for a clean run): the same
    sentences the report's findings open with."""
    return [f"warning: {sentence}" for sentence in fault_sentences(faults)]


def print_faults(faults: dict) -> None:
    lines = fault_lines(faults)
    if lines:
        print("\n".join(lines), flush=True)
