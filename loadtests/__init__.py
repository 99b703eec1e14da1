"""triton-loadtest: Locust-based load testing for NVIDIA Triton Inference Server."""

from loadtests.version import __version__

__all__ = ["__version__"]
