"""Traffic patterns: how much load, and when.

- `loadtests.traffic.shapes`: load shapes (`--load-shape steps|ramp|spike|sine|trace`
  with `--shape-args`): pure target-versus-time profiles, and the Locust `LoadTestShape`
  classes that drive the user count (closed loop) or hand a target rate to open-loop
  traffic.
- `loadtests.traffic.sweep`: the stabilised sweep (`--load-shape sweep`, what
  `python -m loadtests sweep` runs), registered with the shapes on import.
- `loadtests.traffic.capacity`: the capacity search (`--load-shape capacity`, what
  `python -m loadtests capacity` runs), sweep levels chosen by `capacity_search`.
"""

from loadtests.traffic import capacity as _capacity  # noqa: F401  (registers --load-shape capacity)
from loadtests.traffic import sweep as _sweep  # noqa: F401  (registers --load-shape sweep)
