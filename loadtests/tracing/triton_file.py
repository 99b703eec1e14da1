"""Triton's trace files, as the bundled tritonserver writes them (`--trace-config triton,file=PATH`).

Each flush writes `PATH.<n>`: a JSON list of entries, each with Triton's trace `id`, either its
request (`model_name`, `model_version`, `request_id`: the client's request id) or one
timestamp (`{"timestamps": [{"name": "QUEUE_START", "ns": 25319566896866}]}`, the server's
monotonic clock). HTTP requests have HTTP_RECV_START/END and HTTP_SEND_START/END, gRPC ones
GRPC_WAITREAD_START/END (the wait starts before the request arrives) and GRPC_SEND_START/END.

    traces, problems = read_traces(Path("/tmp/trace.json"), since_s=run_start)
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

# When Triton had the request (the gRPC wait's start is before the client even sent it).
RECEIVED = ("HTTP_RECV_START", "GRPC_WAITREAD_END")
SENT = ("HTTP_SEND_END", "GRPC_SEND_END")


@dataclass(frozen=True)
class ServerTrace:
    """One traced request: its client id, model and timestamps (name -> ns)."""

    request_id: str
    model: str
    timestamps: dict[str, int]

    def first(self, names: tuple[str, ...]) -> int | None:
        for name in names:
            if name in self.timestamps:
                return self.timestamps[name]
        return None


def trace_files(base: Path) -> dict[Path, float]:
    """Every `base.<n>` file and its mtime, in index order."""
    pattern = re.compile(re.escape(base.name) + r"\.(\d+)$")
    found = []
    if not base.parent.is_dir():
        return {}
    for path in base.parent.iterdir():
        match = pattern.match(path.name)
        if match:
            found.append((int(match.group(1)), path))
    return {path: path.stat().st_mtime for _, path in sorted(found)}


def new_files(base: Path, before: dict[Path, float]) -> list[Path]:
    """The files written since `before` (trace_files' answer then): new ones, or rewritten (a
    restarted Triton numbers its files from 0 again)."""
    return [path for path, mtime in trace_files(base).items() if before.get(path) != mtime]


def parse_entries(entries: list[dict]) -> list[ServerTrace]:
    """One file's entries grouped by Triton's trace id; traces without a request id are left out
    (another client's, or an ensemble step's child trace)."""
    requests: dict[int, tuple[str, str]] = {}
    stamps: dict[int, dict[str, int]] = {}
    for entry in entries:
        trace = entry.get("id")
        if "request_id" in entry:
            requests[trace] = (str(entry["request_id"]), str(entry.get("model_name", "")))
        for stamp in entry.get("timestamps", ()):
            stamps.setdefault(trace, {})[stamp["name"]] = int(stamp["ns"])
    return [
        ServerTrace(request_id, model, stamps.get(trace, {}))
        for trace, (request_id, model) in requests.items()
        if request_id
    ]


def read_traces(base: Path, before: dict[Path, float]) -> tuple[list[ServerTrace], list[str]]:
    """Every trace in the files written since `before`, and one line per file that could not be read."""
    traces: list[ServerTrace] = []
    problems: list[str] = []
    for path in new_files(base, before):
        try:
            entries = json.loads(path.read_text())
        except (OSError, ValueError) as error:
            problems.append(f"{path}: {error}")
            continue
        traces.extend(parse_entries(entries if isinstance(entries, list) else []))
    return traces, problems
