"""`python -m loadtests capacity` reads the model's configuration from the target the user gave.

A gRPC-only target (--triton-grpc alone, --protocol grpc) is read over gRPC
(clients/control_grpc.open_control), never over HTTP at the default address.
"""

from __future__ import annotations

import json

from loadtests.clients.control_grpc import TritonGrpcControl
from loadtests.config.addresses import TritonTarget
from loadtests.levels.capacity_search import MIN_PROBE_USERS
from tests.helpers import run_cli

# A dynamic batcher of max batch 64 on one instance: its probe size (2 x 64 x 1) differs
# from MIN_PROBE_USERS, so the printed size shows whether the configuration was read.
MODEL = "identity"


def test_a_grpc_only_target_sizes_the_probe_from_its_configuration(triton, tmp_path):
    target = TritonTarget.parse("--triton-grpc", triton.grpc_address, "grpc")
    config = TritonGrpcControl(target).model_config(MODEL)
    instances = sum(group.get("count", 1) for group in config["instance_group"])
    expected = max(MIN_PROBE_USERS, 2 * config["max_batch_size"] * instances)
    assert "dynamic_batching" in config and expected != MIN_PROBE_USERS  # the test can tell
    run_dir = tmp_path / "capacity"
    args = ["-m", "loadtests", "capacity", "--model", MODEL, "--protocol", "grpc", "--slo", "p99<200ms"]
    args += ["--triton-grpc", triton.grpc_address, "--run-dir", str(run_dir), "--shape", "INPUT0:16"]
    result = run_cli([*args, "--probe-time", "1", "--stop-below", "1e9"], timeout=120)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "configuration not read" not in result.stdout, result.stdout
    assert f"saturation probe, {expected} closed-loop users" in result.stdout, result.stdout
    probe = json.loads((run_dir / "probe" / "config.json").read_text())
    assert probe["options"]["num_users"] == expected
