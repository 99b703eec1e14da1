"""Running a real Triton locally: where it is installed, and a launcher for it."""

from loadtests.server.install import TritonInstallation
from loadtests.server.launcher import DEMO_REPOSITORY, TEST_REPOSITORY, LocalTriton, TritonPorts

__all__ = ["DEMO_REPOSITORY", "TEST_REPOSITORY", "LocalTriton", "TritonInstallation", "TritonPorts"]
