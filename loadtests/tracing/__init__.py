"""--trace-sample: Triton's per-request traces joined to the client's timing.

- `switch.py`: where Triton's trace file is readable here, Triton's trace settings turned on
  for the models under test for the run and restored after it;
- `client_log.py`: the client half, every request that carries a trace id;
- `triton_file.py`: the server half, read from Triton's trace files (`PATH.<n>`);
- `receiver.py`: or received from a Triton in opentelemetry mode (OTLP/HTTP JSON);
- `join.py`: the two halves joined after the run on the master (or single process), where
  both are: workers ship their client records with their reports (run/shipping.py);
  traces.csv and summary.json's `traces` (the attribution: loadtests/run_format/attribution.py).
"""
