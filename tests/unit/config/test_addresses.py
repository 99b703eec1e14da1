"""The Triton target type: --triton-http/--triton-grpc/--triton-metrics parsed once (unit tests)."""

from __future__ import annotations

import pytest

from loadtests.clients.replicas import ReplicaSet
from loadtests.config.addresses import RESOLVE_EVERY_S, TritonTarget
from loadtests.errors import SpecError


def test_a_replica_list_is_parsed_into_host_port_pairs_with_its_scheme():
    target = TritonTarget.parse("--triton-grpc", "grpcs://a.example:443, 10.0.0.2:8001/", "grpc")
    assert target.replicas == (("a.example", 443), ("10.0.0.2", 8001))
    assert target.tls and target.scheme == "grpcs" and target.protocol == "grpc"
    assert target.authorities == ("a.example:443", "10.0.0.2:8001") and target.first == "a.example:443"
    assert target.resolve_every_s == RESOLVE_EVERY_S


@pytest.mark.parametrize(
    ("option", "text", "protocol", "spelled", "control"),
    [
        ("--triton-http", "127.0.0.1:8000", "http", "127.0.0.1:8000", "127.0.0.1:8000"),
        ("--triton-http", "HTTP://a:1,b:2", "http", "a:1,b:2", "a:1,b:2"),
        ("--triton-http", "https://a:1,b:2", "http", "https://a:1,b:2", "https://a:1,b:2"),
        ("--triton-grpc", "grpc://a:1", "grpc", "a:1", "grpc://a:1"),
        ("--triton-grpc", "grpcs://a:1,b:2", "grpc", "grpcs://a:1,b:2", "grpcs://a:1,b:2"),
        ("--triton-metrics", "https://[::1]:8002", "http", "https://[::1]:8002", "https://[::1]:8002"),
    ],
)
def test_the_text_round_trips_and_names_the_control_address(option, text, protocol, spelled, control):
    target = TritonTarget.parse(option, text, protocol)
    assert target.text == str(target) == spelled  # what Settings, config.json and the logs show
    assert TritonTarget.parse(option, target.text, protocol) == target  # parsed again: the same value
    assert target.control_address == control  # server_stats.json's address, the readers' dispatch


def test_one_replica_of_a_target_keeps_its_scheme():
    target = TritonTarget.parse("--triton-grpc", "grpcs://a:1,b:2", "grpc")
    replica = target.only(("10.0.0.7", 2))
    assert replica.replicas == (("10.0.0.7", 2),) and replica.tls
    assert target.control_address_of(replica.first) == "grpcs://10.0.0.7:2"


@pytest.mark.parametrize(
    ("text", "protocol", "message"),
    [
        ("https://h:1", "grpc", "--x 'https://h:1': the scheme is grpc:// or grpcs://, not https://"),
        ("h", "http", "--x 'h' is not HOST:PORT (e.g. 127.0.0.1:8000)"),
        ("h:0", "http", "--x 'h:0': port '0' is not a number from 1 to 65535"),
        ("a:1,,b:2", "http", "--x 'a:1,,b:2': an empty entry (write HOST:PORT[,HOST:PORT...])"),
        ("a:1, a:1", "http", "--x 'a:1, a:1': a:1 is listed twice"),
        ("http://a:1,grpc://b:2", "http", "--x 'grpc://b:2': write HOST:PORT without 'grpc://' (e.g. b:2)"),
    ],
)
def test_a_bad_value_is_one_error_naming_the_option(text, protocol, message):
    with pytest.raises(SpecError) as refused:
        TritonTarget.parse("--x", text, protocol)
    assert str(refused.value) == message


def test_replicas_are_resolved_from_the_parsed_pairs_on_the_targets_policy():
    lookups: list[tuple[str, int]] = []
    now = [0.0]

    def resolve(host: str, port: int) -> list[str]:
        lookups.append((host, port))
        return ["10.0.0.1", "10.0.0.2"]

    target = TritonTarget("grpc", (("triton-headless", 8001), ("10.0.0.9", 8001)), resolve_every_s=5.0)
    replicas = ReplicaSet(target, resolver=resolve, clock=lambda: now[0])
    assert replicas.current() == ("10.0.0.1:8001", "10.0.0.2:8001", "10.0.0.9:8001")
    assert [replicas.endpoint(r) for r in replicas.current()] == [
        ("10.0.0.1", 8001),
        ("10.0.0.2", 8001),
        ("10.0.0.9", 8001),
    ]
    now[0] = 4.9
    replicas.current()
    now[0] = 5.0
    replicas.current()
    assert lookups == [("triton-headless", 8001)] * 2  # the IP entry is never looked up; every 5 s, not 30
