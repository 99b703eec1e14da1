"""Several Triton replicas behind one address list (issue 16, item 1).

Two real local Tritons: the session's and a second one on free ports serving only `identity`
(explicit model control: one Python stub, a few seconds to start). The address options list
both, as `--triton-http A,B` would on a cluster with two pods.
"""

from __future__ import annotations

from analysis.replicas import imbalance_findings
from analysis.run import EndpointSummary, SavedRun
from loadtests.clients.replicas import ReplicaChooser, ReplicaSet
from tests.helpers import (
    REPO_ROOT,
    grpc_target,
    http_target,
)

MODEL = "identity"


# -- the replica choice, on a fake resolver and clock -------------------------------------------
class FakeDns:
    def __init__(self, answers: dict[str, list[str]]) -> None:
        self.answers = answers
        self.now = 0.0
        self.lookups = 0

    def resolve(self, host: str, port: int) -> list[str]:
        self.lookups += 1
        if host not in self.answers:
            raise OSError(f"no such host {host}")
        return self.answers[host]


def test_a_name_with_several_addresses_is_several_replicas_and_is_resolved_again():
    dns = FakeDns({"triton-headless": ["10.0.0.1", "10.0.0.2"], "single": ["10.0.0.9"]})
    replicas = ReplicaSet(grpc_target("triton-headless:8001,single:8001"), resolver=dns.resolve, clock=lambda: dns.now)
    # A name with one address stays the name (the Host header and logs keep it).
    assert replicas.current() == ("10.0.0.1:8001", "10.0.0.2:8001", "single:8001")
    dns.answers["triton-headless"] = ["10.0.0.1", "10.0.0.2", "10.0.0.3"]  # the autoscaler adds a pod
    dns.now = 29.0
    assert len(replicas.current()) == 3  # not yet: every 30 s
    dns.now = 30.0
    assert replicas.current() == ("10.0.0.1:8001", "10.0.0.2:8001", "10.0.0.3:8001", "single:8001")
    del dns.answers["triton-headless"]  # a failed lookup keeps the last answer
    dns.now = 60.0
    assert replicas.current() == ("10.0.0.1:8001", "10.0.0.2:8001", "10.0.0.3:8001", "single:8001")
    assert dns.lookups == 6


def test_round_robin_skips_a_replica_that_refused_until_it_is_tried_again():
    now = [0.0]
    replicas = ReplicaSet(http_target("10.0.0.1:8000,10.0.0.2:8000,10.0.0.3:8000"), clock=lambda: now[0])
    chooser = ReplicaChooser(replicas, pinned=False, start=0)
    assert [chooser.next() for _ in range(3)] == ["10.0.0.2:8000", "10.0.0.3:8000", "10.0.0.1:8000"]
    chooser.failed("10.0.0.2:8000")
    assert {chooser.next() for _ in range(4)} == {"10.0.0.1:8000", "10.0.0.3:8000"}
    now[0] = 1.0
    assert "10.0.0.2:8000" in {chooser.next() for _ in range(3)}


def saved_run(replicas: dict[str, dict]) -> SavedRun:
    requests = sum(counts["requests"] for counts in replicas.values())
    endpoint = EndpointSummary(
        "identity [grpc]", MODEL, "grpc", requests, 0, requests, 10.0, requests / 10, requests / 10, {}
    )
    endpoint = EndpointSummary(**{**endpoint.__dict__, "replicas": replicas})
    return SavedRun(REPO_ROOT, {}, {endpoint.name: endpoint}, {})


def replica(requests: int, mean_ms: float) -> dict:
    return {"requests": requests, "failures": 0, "mean_latency_us": mean_ms * 1000}


def test_the_report_finds_load_and_latency_imbalance_beyond_its_thresholds():
    even = saved_run({"a:8001": replica(540, 1.0), "b:8001": replica(460, 1.2)})
    assert imbalance_findings(even) == []  # 8 % off the even share, latency 20 % above the median
    (load,) = imbalance_findings(saved_run({"a:8001": replica(700, 1.0), "b:8001": replica(300, 1.0)}))
    assert "a:8001 70.0%, b:8001 30.0%" in load and "even is 50.0%" in load
    three = {"a:8001": replica(300, 1.0), "b:8001": replica(300, 1.0), "c:8001": replica(300, 1.3)}
    (latency,) = imbalance_findings(saved_run(three))
    assert "c:8001 1.300 ms against a median of 1.000 ms" in latency
