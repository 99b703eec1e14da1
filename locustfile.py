"""triton-loadtest's locustfile: the suite's user classes and options (loadtests/locustfile.py).

    locust -f locustfile.py                                  # web UI on :8089
    locust -f locustfile.py --headless -u 8 -t 1m BertQAGrpcUser --batch-size 1-8

Installed with pip, the same file is `triton-loadtest locustfile` (its path):

    locust -f $(triton-loadtest locustfile) --headless -u 4 -t 1m TritonHttpUser --model NAME

See README.md and docs/ for the options and the run directory this writes.
"""

from loadtests.locustfile import *  # noqa: F403
