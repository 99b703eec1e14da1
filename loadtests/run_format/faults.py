"""summary.json's "faults" as sentences: the report's first findings and the end-of-run warnings.

Pure (no pandas, no Locust): the load generator prints the same words at the end of a run
that the report opens with, so a user reads one account of an outage, not two.

    fault_sentences({"server_restarts": [{"after_s": 3.0, "before_s": 10.0, "models": ["m"]}]})
    # ['Triton restarted between 3.0 s and 10.0 s (m): the server-side numbers are summed ...']
"""

from __future__ import annotations

# How a restart in "server_restarts" was found (loadtests/triton_stats/statistics.py).
FOUND_BY_COUNTERS = "counters went down"
FOUND_BY_CLIENT = "client answers"


def fault_sentences(faults: dict) -> list[str]:
    """One sentence per lost worker, unreported-requests estimate, restart, unreachable span
    and stall of the load generator."""
    out = []
    for lost in faults.get("workers_lost", []):
        respawned = "started again on the other workers" if lost.get("users_respawned") else "not started again"
        out.append(
            f"Worker {lost['worker']} (index {lost['index']}, {lost['users']} users) was lost at "
            f"{lost['lost_at_s']:.1f} s ("
            + (
                "before it ever reported"
                if lost["last_report_s"] is None
                else f"its last report at {lost['last_report_s']:.1f} s"
            )
            + f"); its users were {respawned}."
        )
    for late in faults.get("workers_without_final_report", []):
        out.append(
            f"Worker {late['worker']} sent no final report before the summary was written (its last report "
            + ("never came" if late["last_report_s"] is None else f"at {late['last_report_s']:.1f} s")
            + "): the requests it sent after that are missing from the client-side counts."
        )
    bound = "at least" if faults.get("estimate_is_lower_bound") else "about"
    for model, count in faults.get("unreported_requests_estimate", {}).items():
        out.append(
            f"{model}: {bound} {count:,} requests that Triton counted were never reported by the workers named above "
            "(Triton's count minus the client's): client-side counts and rates are that much low."
        )
    for restart in faults.get("server_restarts", []):
        found = (
            "; found because Triton counted fewer requests than the client had answers for"
            if restart.get("found_by") == FOUND_BY_CLIENT
            else ""
        )
        out.append(
            f"Triton restarted between {restart['after_s']:.1f} s and {restart['before_s']:.1f} s "
            f"({', '.join(restart['models'])}{found}): the server-side numbers are summed over both server "
            "lifetimes, without what the old server did after its last statistics snapshot."
        )
    for span in faults.get("server_unreachable", []):
        out.append(
            f"Triton's statistics could not be read from {span['from_s']:.1f} s to {span['to_s']:.1f} s "
            f"({span['failed_snapshots']} failed snapshots)."
        )
    for stall in faults.get("load_generator_stalled", []):
        out.append(stall_sentence(stall))
    return out


def stall_sentence(stall: dict) -> str:
    """A stall of the load generator's own process (loadtests/recording/stalls.py)."""
    process = stall["process"]
    when = f"stalled for {stall['s']:.1f} s from {stall['from_s']:.1f} s"
    if process == "master":
        return (
            f"The master {when} (its process ran nothing: no CPU, or its loop was blocked): "
            "the load shape's steps and the windows around it may have started or closed late."
        )
    lost = "it sent no requests then, and requests in flight were timed with the stall inside"
    if process != "local":  # a worker runs users; the master ticks the load shape
        return f"Worker {process} {when} (its process ran nothing: no CPU, or its loop was blocked): {lost}."
    return (
        f"The load generator {when} (its process ran nothing: no CPU, or its loop was blocked): {lost}; "
        "a load shape's step due then started late."
    )
