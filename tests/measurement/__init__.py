"""The measurement tier: tests whose point is what this host achieves against a known truth
(capacity searches, sweeps' stable levels, open-loop rates, tune's ranking). `make test` leaves
it out; `make bench-measurement` runs it alone, so nothing else on the machine is measured with
it, and tables the margin each check kept (tests/margins.py)."""
