"""triton-loadtest: Locust-based load testing for NVIDIA Triton Inference Server."""

__version__ = "0.1.0"
