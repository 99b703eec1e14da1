"""The end-of-run console table: exact percentiles next to Locust's rounded ones."""

from __future__ import annotations

from analysis.confidence import DEFAULT_CONFIDENCE, confidence_label
from analysis.slo import late_ratio
from loadtests.recording.histograms import EndpointStats

# Above this share of late requests (or with any dropped), the generator fell behind its schedule.
BEHIND_LATE_SHARE = 0.05


def print_exact_summary(totals: dict[str, EndpointStats], open_loop: bool = False) -> None:
    if not totals:
        return
    header = (
        f"{'Endpoint':<30} {'reqs':>8} {'fails':>6} {'infer':>8} "
        f"{'p50 ms':>9} {'p90 ms':>9} {'p95 ms':>9} {'p99 ms':>9} {'p99.9 ms':>9} {'max ms':>9} "
        f"{'p99 interval ms':>19}"
    )
    title = "Exact latencies (HdrHistogram; ms with microsecond precision"
    if open_loop:
        header += f" {'late':>7} {'dropped':>7} {'p50 unc':>9} {'p99 unc':>9}"
        title += "; open loop: from the intended send time, 'unc' from the actual send"
    lines = [title + "):", header]
    for name in sorted(totals):
        stats = totals[name]
        latency = stats.latency_summary_us()
        cells = " ".join(f"{latency[key] / 1000:>9.3f}" for key in ("p50", "p90", "p95", "p99", "p99.9", "max"))
        line = f"{name:<30} {stats.requests:>8} {stats.failure_count:>6} {stats.inferences:>8} {cells}"
        line += f" {interval_cell(stats.latency_ci_us(DEFAULT_CONFIDENCE).get('p99')):>19}"
        if open_loop:
            uncorrected = stats.uncorrected_summary_us() or {"p50": 0.0, "p99": 0.0}
            unc = f"{uncorrected['p50'] / 1000:>9.3f} {uncorrected['p99'] / 1000:>9.3f}"
            line += f" {stats.late:>7} {stats.dropped:>7} {unc}"
        lines.append(line)
    lines.append(
        f"p99 interval: where the true p99 lies with {confidence_label(DEFAULT_CONFIDENCE)} confidence "
        "(order statistics; every percentile's in summary.json latency_ci_us)"
    )
    lines.extend(behind_schedule_warnings(totals) if open_loop else [])
    print("\n".join(lines), flush=True)


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
        late_share = late_ratio(stats.late, stats.requests)
        if late_share > BEHIND_LATE_SHARE or stats.dropped:
            warnings.append(
                f"warning: {name}{where}: the load generator could not keep up with its schedule: "
                f"{stats.late} of {stats.requests} requests ({late_share:.0%}) went out more than 1 ms late, "
                f"{stats.dropped} dropped (the server held --max-in-flight requests, or the generator "
                "lacked CPU); add workers, raise --max-in-flight, or lower --rate"
            )
    return warnings


def fault_lines(faults: dict) -> list[str]:
    """One warning line per fault of summary.json's "faults" (none for a clean run)."""
    lines = []
    for lost in faults.get("workers_lost", []):
        respawned = (
            "its users were started again on the other workers"
            if lost["users_respawned"]
            else ("its users were not started again")
        )
        lines.append(
            f"warning: worker {lost['worker']} (index {lost['index']}, {lost['users']} users) lost at "
            f"{lost['lost_at_s']:.1f} s; last report at {_seconds(lost['last_report_s'])}; {respawned}"
        )
    bound = " at least" if faults.get("estimate_is_lower_bound") else " about"
    for model, count in faults.get("unreported_requests_estimate", {}).items():
        lines.append(
            f"warning: {model}:{bound} {count} requests Triton counted were never reported by a lost worker "
            "(Triton's count minus the client's)"
        )
    for restart in faults.get("server_restarts", []):
        lines.append(
            f"warning: Triton restarted between {restart['after_s']:.1f} s and {restart['before_s']:.1f} s "
            f"({', '.join(restart['models'])}): the server-side numbers are summed over both lifetimes, "
            "without what the old server did after its last snapshot"
        )
    for span in faults.get("server_unreachable", []):
        lines.append(
            f"warning: Triton's statistics could not be read from {span['from_s']:.1f} s to {span['to_s']:.1f} s "
            f"({span['failed_snapshots']} failed snapshots)"
        )
    return lines


def print_faults(faults: dict) -> None:
    lines = fault_lines(faults)
    if lines:
        print("\n".join(lines), flush=True)


def _seconds(value: float | None) -> str:
    return "never" if value is None else f"{value:.1f} s"
