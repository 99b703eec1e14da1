"""The master benchmark's harness at a tiny size: a real suite master, three simulated workers.

Not a timing test (the numbers belong to `python -m bench.master_scale`): it checks that
the simulated workers speak Locust's protocol well enough for a real master to run a whole
test with them, and that the master merged exactly what they reported, per endpoint
(requests and inferences in summary.json), over the suite's transport (windows inside
Locust's worker report). The alternative (`--transport message`) is left out on purpose: it
loses a worker's last windows at scale (docs/explanation/performance.md).
"""

from __future__ import annotations

from bench.master_scale import run_level
from bench.master_sim import ENDPOINTS


def test_master_merges_exactly_what_simulated_workers_sent(triton, tmp_path):
    level = run_level(3, triton.options, 5, "report", 200.0, False, tmp_path)
    assert level.exit_code == 0, (tmp_path / "master-report-3.log").read_text()[-3000:]
    assert sorted(level.sent) == sorted(ENDPOINTS)
    assert all(requests > 0 for requests, _ in level.sent.values())
    assert level.merged == level.sent
    assert level.workers_lost == 0
