"""Measuring: exact per-endpoint histograms, and the run directory they are written to."""
