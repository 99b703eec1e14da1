"""What can fail, and how each failure reaches the user.

LoadTestError
├── StartupError            bad input or setup, found before any load: one line, exit 2
│   ├── SpecError           a malformed option value (batch SPEC, --shape, --input-map, ...)
│   ├── PayloadError        a payload file that is missing or does not fit the model
│   ├── ModelMismatchError  the workload does not fit the model's inputs (name, dtype, shape)
│   └── ServerError         Triton cannot be started or reached, or a model is not ready
└── (request failures are not exceptions of ours: clients report them to Locust
     with a stable, low-cardinality name; see loadtests/clients/)

Exit codes: 2 a StartupError (nothing was sent); 3 an --slo clause failed (loadtests/run/slo_gate.py);
4 the run happened but an output could not be written (loadtests/run_format/output_paths.py, docs/guides/ci.md).
"""

EXIT_STARTUP_ERROR = 2


class LoadTestError(Exception):
    """Base of every error this package raises on purpose."""


class StartupError(LoadTestError):
    """Found before load starts; the message is one line a user can act on."""

    exit_code = EXIT_STARTUP_ERROR


class SpecError(StartupError):
    """A malformed option value, e.g. a batch-size SPEC of '1:0.5,x'."""


class PayloadError(StartupError):
    """A payload file is missing, unreadable, or of the wrong shape."""


class ModelMismatchError(StartupError):
    """The workload's tensors do not match the model's inputs."""


class ServerError(StartupError):
    """Triton could not be started, reached, or has no ready model by that name."""
