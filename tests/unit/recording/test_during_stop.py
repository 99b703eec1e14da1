"""The requests that ended during the test's stop: labelled by the recorder from its stop on,
kept in every count, and merged from workers as a single process records them."""

from __future__ import annotations

from loadtests.clients.outcome import RequestOutcome
from loadtests.recording.histograms import EndpointStats
from loadtests.recording.run_dir import endpoint_json
from loadtests.recording.windows import RunAggregator, WindowRecorder
from tests.unit.recording.test_recording import FakeClock

NAME = "m [http]"


def outcome(latency_us: float, failure: str | None = None) -> RequestOutcome:
    return RequestOutcome(NAME, "m", "http", latency_us, 1, failure)


def run_of(recorders: list[WindowRecorder], clock: FakeClock) -> dict:
    """A test of 300 requests, then a stop at which each recorder's process labels the 6 that
    end after it (4 successes, one slower than any before, and 2 cut): the endpoint's summary
    entry as the master (or the single process) writes it."""
    for index in range(300):
        clock.now = 1_700_000_000.0 + index / 100
        recorders[index % len(recorders)].record(outcome(400.0 + index, "timeout" if index % 50 == 0 else None))
    aggregator = RunAggregator(clock=clock)
    for recorder in recorders:
        aggregator.merge(recorder.drain())  # the last periodic report, before the stop
    for recorder in recorders:
        recorder.stop_began()
    ended = [outcome(1_000.0), outcome(39_512.0), outcome(2_000.0), outcome(900.0)]
    ended += [outcome(2_001_000.0, "interrupted"), outcome(2_002_000.0, "interrupted")]
    for index, request in enumerate(ended):
        clock.now += 0.5  # past the stop, into the next windows
        recorders[index % len(recorders)].record(request)
    for recorder in recorders:
        aggregator.merge(recorder.drain())  # the final report
    return endpoint_json(aggregator.totals[NAME], 10.0)


def test_requests_recorded_after_the_stop_began_are_labelled_and_stay_in_every_count():
    clock = FakeClock()
    entry = run_of([WindowRecorder(clock=clock)], clock)
    assert entry["requests"] == 306
    assert entry["failures_by_class"] == {"interrupted": 2, "timeout": 6}
    # The max as latency_us reads it (hdrh's highest equivalent of 39,512 µs), and it is theirs.
    assert entry["ended_during_stop"] == {"requests": 6, "failures": 2, "max_us": entry["latency_us"]["max"]}
    assert 39_512 <= entry["latency_us"]["max"] < 39_512 * 1.001


def test_a_master_merges_its_workers_labels_as_a_single_process_records_them():
    clock = FakeClock()
    single = run_of([WindowRecorder(clock=clock)], clock)
    clock = FakeClock()
    merged = run_of([WindowRecorder(clock=clock) for _ in range(3)], clock)
    assert merged == single


def test_a_new_test_is_not_labelled_and_nothing_before_the_stop_is():
    clock = FakeClock()
    recorder = WindowRecorder(clock=clock)
    recorder.record(outcome(500.0))
    recorder.stop_began()
    recorder.record(outcome(700.0))
    recorder.test_started()  # STOP, then START again in the web UI
    recorder.record(outcome(90_000.0))
    (message,) = recorder.drain()
    stats = EndpointStats.from_message(message)
    assert (stats.requests, stats.during_stop.requests, stats.during_stop.max_us) == (3, 1, 700)
    entry = endpoint_json(stats, 1.0)
    assert entry["ended_during_stop"]["max_us"] < entry["latency_us"]["max"]  # the max is not theirs


def test_a_test_with_no_request_in_the_stop_says_none_and_an_older_workers_message_adds_nothing():
    clock = FakeClock()
    recorder = WindowRecorder(clock=clock)
    recorder.record(outcome(500.0))
    recorder.stop_began()
    recorder.record(outcome(2_000_000.0, "interrupted"))
    aggregator = RunAggregator(clock=clock)
    (message,) = recorder.drain()
    older = {key: value for key, value in message.items() if key != "during_stop"}
    aggregator.merge([message, older])
    entry = endpoint_json(aggregator.totals[NAME], 1.0)
    assert entry["requests"] == 4
    assert entry["ended_during_stop"] == {"requests": 1, "failures": 1, "max_us": None}  # none succeeded
    assert endpoint_json(EndpointStats(NAME, "m", "http"), 1.0)["ended_during_stop"] == {
        "requests": 0,
        "failures": 0,
        "max_us": None,
    }
