"""summary.json's faults in words: the console's warnings and the report's first findings agree."""

from __future__ import annotations

from loadtests.recording.console import fault_lines
from loadtests.recording.faults import FaultLog
from loadtests.run_format.faults import fault_sentences

FAULTS = {
    "workers_lost": [
        {"worker": "w1", "index": 1, "users": 2, "lost_at_s": 9.5, "last_report_s": 6.0, "users_respawned": True},
        {"worker": "w2", "index": 2, "users": 2, "lost_at_s": 4.0, "last_report_s": None, "users_respawned": False},
    ],
    "workers_without_final_report": [{"worker": "w3", "last_report_s": 7.5, "last_window_s": 7.0}],
    "unreported_requests_estimate": {"identity": 683},
    "estimate_is_lower_bound": True,
    "server_restarts": [
        {"after_s": 3.0, "before_s": 10.0, "models": ["identity"], "found_by": "counters went down"},
        {"after_s": 20.0, "before_s": 29.5, "models": ["identity"], "found_by": "client answers"},
    ],
    "server_unreachable": [{"from_s": 4.0, "to_s": 9.0, "failed_snapshots": 6}],
}


def test_each_fault_is_one_sentence_and_the_console_says_the_same():
    sentences = fault_sentences(FAULTS)
    assert sentences == [
        "Worker w1 (index 1, 2 users) was lost at 9.5 s (its last report at 6.0 s); "
        "its users were started again on the other workers.",
        "Worker w2 (index 2, 2 users) was lost at 4.0 s (before it ever reported); its users were not started again.",
        "Worker w3 sent no final report before the summary was written (its last report at 7.5 s): "
        "the requests it sent after that are missing from the client-side counts.",
        "identity: at least 683 requests that Triton counted were never reported by the workers named above "
        "(Triton's count minus the client's): client-side counts and rates are that much low.",
        "Triton restarted between 3.0 s and 10.0 s (identity): the server-side numbers are summed over both "
        "server lifetimes, without what the old server did after its last statistics snapshot.",
        "Triton restarted between 20.0 s and 29.5 s (identity; found because Triton counted fewer requests than "
        "the client had answers for): the server-side numbers are summed over both server lifetimes, without "
        "what the old server did after its last statistics snapshot.",
        "Triton's statistics could not be read from 4.0 s to 9.0 s (6 failed snapshots).",
    ]
    assert fault_lines(FAULTS) == [f"warning: {s}" for s in sentences]
    assert fault_sentences({}) == [] == fault_lines({"workers_lost": [], "server_restarts": []})


def test_a_worker_without_its_final_report_is_named_with_the_unreported_estimate():
    faults = FaultLog(started_at=100.0, window_s=1.0, clock=lambda: 106.0)
    faults.worker_reported("w1", [{"window": 105}], users=2)
    faults.worker_reported("w2", [{"window": 105}], users=2)
    faults.worker_reported("w2", [], users=0, final=True)
    faults.expect_final_reports({"w2", "w3"})  # told to stop; w3 never reported before
    assert not faults.workers_done()
    out = faults.to_json([], [], server_requests={"identity": 500}, client_requests={"identity": 440})
    assert out["workers_without_final_report"] == [
        {"worker": "w1", "last_report_s": 6.0, "last_window_s": 5.0},
        {"worker": "w3", "last_report_s": None, "last_window_s": None},
    ]
    assert out["unreported_requests_estimate"] == {"identity": 60}
    assert (
        "Worker w3 sent no final report before the summary was written (its last report never came)"
        in (fault_sentences(out)[1])
    )
    faults.worker_reported("w1", [], users=0, final=True)
    faults.worker_reported("w3", [], users=0, final=True)
    clean = faults.to_json([], [], server_requests={"identity": 500}, client_requests={"identity": 500})
    assert faults.workers_done() and "workers_without_final_report" not in clean
    assert "unreported_requests_estimate" not in clean
