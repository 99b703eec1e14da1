"""`make demo` (python -m loadtests demo): its own local Triton, two runs, their reports and comparison."""

from __future__ import annotations

import json

from analysis.dataset import load
from analysis.diagnosis import Diagnosis, diagnose
from tests.helpers import read_summary, run_cli
from tests.unit.test_docs import check_loadtests_command, check_locust_options, words


def test_demo_runs_both_models_and_writes_reports_and_a_comparison(tiny_weights, tmp_path):
    root = tmp_path / "demo"
    command = ["-m", "loadtests", "demo", "--users", "1;2", "--step-s", "3", "--run-dir", str(root)]
    result = run_cli(command, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    for model in ("bert_qa", "bert_qa_dynbatch"):
        run_dir = root / model
        summary = read_summary(run_dir)
        endpoints = {endpoint["model"]: endpoint for endpoint in summary["endpoints"]}
        assert set(endpoints) == {model, "resnet50"}
        assert all(endpoint["requests"] > 0 and endpoint["failures"] == 0 for endpoint in endpoints.values())
        # What the demo prints is the summary's numbers, and the report is where it says.
        assert f"{endpoints[model]['throughput_infer_per_s']:>8.1f} infer/s" in result.stdout
        assert f"report: {run_dir / 'report.html'}" in result.stdout
        assert [step["target"] for step in json.loads((run_dir / "steps.json").read_text())["steps"]] == [1, 2]
    comparison = root / "comparison" / "compare.md"
    assert f"Comparison: {root / 'comparison' / 'compare.html'}" in result.stdout
    text = comparison.read_text()
    assert "bert_qa_dynbatch [http] vs bert_qa [http]" in text
    # Each report opens with its diagnosis; every command it suggests is one the suite accepts.
    for model in ("bert_qa", "bert_qa_dynbatch"):
        data = load(root / model)
        markdown = (root / model / "report.md").read_text()
        assert markdown.index("## Diagnosis and next steps") < markdown.index("## Findings")
        for item in diagnose(data):
            if isinstance(item, Diagnosis) and item.command:
                assert f"`{item.command}`" in markdown
                argv = words(item.command)
                if argv[:3] == ["python", "-m", "loadtests"]:
                    check_loadtests_command(item.rule, argv[3:])
                else:
                    check_locust_options(argv[3:])
