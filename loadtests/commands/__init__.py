"""The suite's commands beside plain Locust: `python -m loadtests <command>`."""
