"""Run directories at URLs (fsspec): `--upload URL` copies one up, `python -m analysis` reads one down.

    check_destination("--upload", "gs://bucket/runs")        # raises SpecError before any load
    upload_directory(Path("runs/20261123T0911Z-x"), "gs://bucket/runs")
        -> "gs://bucket/runs/20261123T0911Z-x"
    download("gs://bucket/runs/20261123T0911Z-x", Path(tmp))  -> Path(tmp)

Schemes: file:// and memory:// come with fsspec; gs:// needs the gcsfs package and s3:// the
s3fs package (optional extras, not in requirements.txt: `pip install gcsfs` where a run uploads).
A missing one is a SpecError naming the package. Files are copied one by one with put_file and
get_file (streamed, never whole in memory), so the copy is exactly the directory's file list.
Directories are only created on the local file system: object stores have none, and gcsfs's
makedirs on a bare bucket name would try to create the bucket.

Separate from the writer and the readers (fsspec and nothing of Locust or gevent), so that
`analysis/` can use it on a laptop.
"""

from __future__ import annotations

import contextlib
import sys
import uuid
from pathlib import Path
from typing import Any

from loadtests.errors import SpecError

# The filesystem package each remote scheme needs (fsspec's own names for them).
SCHEME_PACKAGES = {"gs": "gcsfs", "gcs": "gcsfs", "s3": "s3fs", "s3a": "s3fs"}
PROBE_PREFIX = ".triton-loadtest-write-probe-"


def is_url(text: str) -> bool:
    """A SCHEME://... location (file:// included), as opposed to a plain local path."""
    scheme, separator, _ = str(text).partition("://")
    return bool(separator) and scheme.isidentifier()


def filesystem(option: str, url: str) -> tuple[Any, str]:
    """(fsspec filesystem, path inside it) for `url`; raises SpecError naming `option`."""
    import fsspec  # here, not at import: the suite imports this module on every run

    scheme = url.partition("://")[0].lower()
    try:
        fs, path = fsspec.core.url_to_fs(url)
    except ImportError:
        package = SCHEME_PACKAGES.get(scheme, f"the fsspec filesystem for {scheme}://")
        raise SpecError(f"{option} {url}: {scheme}:// needs the {package} package (pip install {package})") from None
    except ValueError as error:  # fsspec: "Protocol not known: x"
        raise SpecError(f"{option} {url}: {error}") from None
    return fs, path.rstrip("/")


def _is_local(fs: Any) -> bool:
    protocols = fs.protocol if isinstance(fs.protocol, tuple | list) else (fs.protocol,)
    return "file" in protocols


def check_destination(option: str, url: str) -> None:
    """Write and remove a small marker object under `url`: SpecError if that fails.

    Permission lists do not tell (an IAM role may allow creating objects but not listing them),
    so the probe does what the upload will do: create an object. Removing it needs delete
    permission; a role without it leaves the marker, which is harmless and not an error.
    """
    fs, root = filesystem(option, url)
    marker = f"{root}/{PROBE_PREFIX}{uuid.uuid4().hex}"
    try:
        if _is_local(fs):
            fs.makedirs(root, exist_ok=True)
        fs.pipe_file(marker, b"probe\n")
    except Exception as error:  # fsspec backends raise their own (OSError, botocore, google.api_core)
        raise SpecError(f"{option} {url}: not writable ({_one_line(error)})") from None
    with contextlib.suppress(Exception):  # see the docstring: an object-creator role may not delete
        fs.rm_file(marker)


def upload_directory(local: Path, url: str, option: str = "--upload") -> str:
    """Copy every file under `local` to `url`/<local's name>/...; returns that URL.

    Raises OSError (with the URL) when a copy fails: the caller reports it as an output failure.
    """
    fs, root = filesystem(option, url)
    target = f"{root}/{local.name}"
    for path in sorted(p for p in local.rglob("*") if p.is_file()):
        destination = f"{target}/{path.relative_to(local).as_posix()}"
        try:
            if _is_local(fs):
                fs.makedirs(destination.rpartition("/")[0], exist_ok=True)
            fs.put_file(str(path), destination)
        except Exception as error:
            raise OSError(f"{url.rstrip('/')}/{local.name}: {_one_line(error)}") from None
    return f"{url.rstrip('/')}/{local.name}"


def download(url: str, into: Path, option: str = "RUN_DIR") -> Path:
    """Copy every object under `url` into the local directory `into` and return the local path
    to read: `into` for a run directory, `into`/<name> for a single object (a perf_analyzer CSV).
    Raises SpecError if nothing is there."""
    fs, root = filesystem(option, url)
    try:
        found = sorted(fs.find(root))
    except Exception as error:
        raise SpecError(f"{_where(option, url)}: cannot list ({_one_line(error)})") from None
    if not found:
        raise SpecError(f"{_where(option, url)}: no files there")
    single = found == [root]
    for remote in found:
        relative = root.rpartition("/")[2] if single else remote[len(root) :].lstrip("/")
        local = into / relative
        local.parent.mkdir(parents=True, exist_ok=True)
        try:
            fs.get_file(remote, str(local))
        except Exception as error:
            raise SpecError(f"{_where(option, url)}: cannot read {relative} ({_one_line(error)})") from None
    return into / root.rpartition("/")[2] if single else into


def _where(option: str, url: str) -> str:
    """How a message names the location: "--upload gs://b/x", or just the URL when it is the argument."""
    return url if option in ("", url) else f"{option} {url}"


def _one_line(error: BaseException) -> str:
    return " ".join(f"{type(error).__name__}: {error}".split())[:300]


def main(argv: list[str]) -> int:
    """`python -m loadtests.run_format.storage upload DIR URL`: the copy in a process of its own
    (loadtests/run/upload.py says why). Prints the destination; one line on stderr and 1 on failure."""
    if len(argv) != 3 or argv[0] != "upload":
        print("usage: python -m loadtests.run_format.storage upload DIR URL", file=sys.stderr)
        return 2
    try:
        print(upload_directory(Path(argv[1]), argv[2]))
    except (OSError, SpecError) as error:
        print(error, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
