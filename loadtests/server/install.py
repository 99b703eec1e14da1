"""Where NVIDIA's tritonserver binary, its libraries and the Python backend live.

They ship inside the `nvidia-pytriton` wheel. We launch the binary directly
(not through PyTriton's Python API, which restricts the statistics endpoint
that perf_analyzer and our server-side breakdown need).
"""

from __future__ import annotations

import importlib.util
import os
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

from loadtests.errors import ServerError

PYTHON_VERSION = f"{sys.version_info.major}.{sys.version_info.minor}"


@dataclass(frozen=True)
class TritonInstallation:
    """Paths to one installed Triton: binary, bundled shared libraries, Python backend.

    Example: TritonInstallation.locate().tritonserver
    """

    tritonserver: Path
    libs_dir: Path
    python_backend_dir: Path
    stub: Path
    python_libdir: Path

    @classmethod
    def locate(cls, python_libdir: Path | None = None) -> TritonInstallation:
        """Find the pieces or raise ServerError saying which is missing and what to do."""
        spec = importlib.util.find_spec("pytriton")
        if spec is None or not spec.submodule_search_locations:
            raise ServerError(
                "nvidia-pytriton is not installed (it ships tritonserver): run 'make setup' in a checkout, "
                "or pip install 'triton-loadtest[server]'"
            )
        package_dir = Path(next(iter(spec.submodule_search_locations)))
        root = package_dir / "tritonserver"
        installation = cls(
            tritonserver=root / "bin" / "tritonserver",
            libs_dir=package_dir.parent / "nvidia_pytriton.libs",
            python_backend_dir=root / "backends" / "python",
            stub=root / "python_backend_stubs" / PYTHON_VERSION / "triton_python_backend_stub",
            python_libdir=python_libdir or Path(sysconfig.get_config_var("LIBDIR") or ""),
        )
        installation.check()
        return installation

    @property
    def python_runtime_library(self) -> Path:
        # The stub links the shared libpython by its soname (libpython3.11.so.1.0).
        soname = sysconfig.get_config_var("INSTSONAME") or f"libpython{PYTHON_VERSION}.so.1.0"
        return self.python_libdir / soname

    def check(self) -> None:
        for path, what in (
            (self.tritonserver, "tritonserver binary"),
            (self.python_backend_dir / "libtriton_python.so", "Python backend"),
        ):
            if not path.exists():
                raise ServerError(f"{what} not found at {path}: reinstall with 'make setup'")
        if not self.stub.exists():
            raise ServerError(
                f"no Triton Python backend stub for Python {PYTHON_VERSION} in nvidia-pytriton "
                f"(looked for {self.stub}): use Python 3.8-3.13"
            )
        if not self.python_runtime_library.exists():
            raise ServerError(
                f"Python runtime library {self.python_runtime_library.name} not found in "
                f"{self.python_libdir}: the Triton Python backend needs a shared libpython "
                f"(install libpython{PYTHON_VERSION} or use a Python built with --enable-shared)"
            )

    def environment(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """The environment tritonserver and its Python stubs need.

        - The running interpreter's LIBDIR goes first on LD_LIBRARY_PATH, or the stub
          may load an older system libpython and fail inside the model.
        - The wheel's bundled libraries follow: a copied or linked stub loses the
          relative rpath that finds them.
        - The stub runs isolated (it ignores PYTHONPATH) but looks up `python3` on PATH
          to set sys.executable; with this venv's bin/ first, Python's start-up finds the
          venv's pyvenv.cfg and puts the venv's site-packages on sys.path. So any model's
          model.py, the user's own included, can import what the suite's venv has.
        """
        env = dict(os.environ if base is None else base)
        ld_path = [str(self.python_libdir), str(self.libs_dir)]
        if env.get("LD_LIBRARY_PATH"):
            ld_path.append(env["LD_LIBRARY_PATH"])
        env["LD_LIBRARY_PATH"] = os.pathsep.join(ld_path)
        env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
        return env

    def make_backend_directory(self, target: Path) -> Path:
        """Lay out `target/python/` as tritonserver's --backend-directory expects."""
        python_dir = target / "python"
        python_dir.mkdir(parents=True, exist_ok=True)
        for source in (
            self.python_backend_dir / "libtriton_python.so",
            self.python_backend_dir / "triton_python_backend_utils.py",
            self.stub,
        ):
            link = python_dir / source.name
            if not link.exists():
                link.symlink_to(source)
        return target
