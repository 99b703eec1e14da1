"""Post-processing of run directories: importable without Locust or gevent.

from analysis import load_run
run = load_run("runs/20261122T014233Z-demo")
run.endpoints["bert_qa_dynbatch [http]"].latency_us["p99"]
"""

from analysis.run import EndpointSummary, SavedRun, load_run

__all__ = ["EndpointSummary", "SavedRun", "load_run"]
