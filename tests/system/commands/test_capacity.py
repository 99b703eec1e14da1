"""`python -m loadtests capacity` against the local Triton: what it sends, to whom, and what it
writes; nothing here depends on the host's speed.

Its refusals are in tests/refusals/commands/test_capacity.py; the capacity it finds against a
model of known service time in tests/measurement/test_capacity.py (`make bench-measurement`).
"""

from __future__ import annotations

import json

import pytest

from tests.helpers import run_cli
from tests.refusals.commands.test_capacity import MODEL, capacity_args

PROTOCOLS = {"http": ("http",), "grpc": ("grpc",), "both": ("http", "grpc")}


def check_mix_endpoints(summary: dict, models: tuple[str, ...], protocols: tuple[str, ...]) -> None:
    """Every model of the mix over every protocol asked for, and none other; per model, the
    client's requests over all protocols are Triton's count."""
    endpoints = summary["endpoints"]
    assert sorted((e["model"], e["protocol"]) for e in endpoints) == sorted(
        (model, protocol) for model in models for protocol in protocols
    )
    for endpoint in endpoints:
        assert endpoint["requests"] > 0 and endpoint["failures"] == 0, endpoint
    for model in models:
        sent = sum(e["requests"] for e in endpoints if e["model"] == model)
        assert sent == summary["server"][model]["requests"], (model, sent, summary["server"][model])


@pytest.mark.parametrize("model", ["identity", MODEL])
def test_the_probe_is_sized_from_the_models_batcher(triton, tmp_path, model):
    """Without --probe-users the probe saturates what Triton configured: 2 x max batch x
    instances closed-loop users when the model batches dynamically (identity: 64, one
    instance), at least 16. --stop-below ends the command after the probe."""
    config = json.loads(
        run_cli(["-c", f"import json; from loadtests.clients.control import TritonControl; "
                       f"print(json.dumps(TritonControl('{triton.http_address}').model_config('{model}')))"]).stdout
    )  # fmt: skip
    instances = sum(group.get("count", 1) for group in config["instance_group"])
    batch = config.get("max_batch_size", 0) if "dynamic_batching" in config else 1
    expected = max(16, 2 * max(batch, 1) * instances)
    run_dir = tmp_path / "capacity"
    args = capacity_args(triton, run_dir, "--probe-time", "1", "--stop-below", "1e9")
    args[args.index("--model") + 1] = model
    result = run_cli(args, timeout=120)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert f"saturation probe, {expected} closed-loop users" in result.stdout, result.stdout
    probe = json.loads((run_dir / "probe" / "config.json").read_text())
    assert probe["options"]["num_users"] == expected


@pytest.mark.parametrize("protocol", sorted(PROTOCOLS))
def test_a_capacity_search_over_a_mix_over_each_protocol(triton, tmp_path, protocol):
    """--mix with --protocol http, grpc or both: the search's requests go over those protocols
    only, every model of the mix over each, and Triton counts every one (the capacity it finds:
    tests/measurement/test_capacity.py)."""
    run_dir, models = tmp_path / "mix", (MODEL, "identity")
    args = capacity_args(triton, run_dir, "--protocol", protocol, "--start-rate", "40", "--growth", "4")
    args[args.index("--model") : args.index("--model") + 2] = ["--mix", ",".join(f"{m}:0.5" for m in models)]
    # A coarse search (40, 160, 640 requests/s, ended within 300 %): this test is about which
    # protocols carry the mix, not the figure it finds.
    result = run_cli([*args, "--precision", "300", "--measurement-interval", "500", "--max-trials", "4"], timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    content = json.loads((run_dir / "capacity.json").read_text())
    assert content["levels"], content
    summary = json.loads((run_dir / "summary.json").read_text())
    check_mix_endpoints(summary, models, PROTOCOLS[protocol])
