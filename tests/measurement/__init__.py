"""The measurement tier: tests whose point is what this host achieves against a known truth
(capacity searches, sweeps' stable levels, open-loop rates, tune's ranking). `make test` runs
this folder alone, after the other tests, so nothing else on the machine is measured with it."""
