"""Build the demo models' ONNX files: `python -m models.build --preset tiny|full [--force] [--out DIR]`.

Why a builder instead of checked-in weights: the files are large (full BERT is ~440 MB)
and random, so it is cheaper to regenerate them deterministically than to ship them.
A fixed seed gives byte-identical files on every machine.

Writes `<out>/bert_qa.onnx`, `<out>/resnet50.onnx` and `<out>/build.json`; the default
`<out>` is `models/weights/<preset>` in the repository. A rebuild is skipped when
`build.json` records the same preset parameters and builder version and the files are
present with the recorded sizes. Files are written to a temporary name and renamed, and
`build.json` last, so an interrupted or concurrent build never leaves a file that looks
finished but is not.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from models.networks.config import BertConfig, ResNetConfig

# Bump whenever a builder change alters the produced bytes, so stale files get rebuilt.
BUILDER_VERSION = 1

BERT_FILE = "bert_qa.onnx"
RESNET_FILE = "resnet50.onnx"
STAMP_FILE = "build.json"
WEIGHTS_ROOT = Path(__file__).resolve().parent / "weights"


@dataclass(frozen=True)
class Preset:
    """Parameters of both networks for one preset."""

    bert: BertConfig
    resnet: ResNetConfig

    def params(self) -> dict:
        """JSON-able form, recorded in build.json to decide whether a rebuild is needed."""
        return {
            "bert": dataclasses.asdict(self.bert),
            "resnet": dataclasses.asdict(self.resnet),
        }


PRESETS: dict[str, Preset] = {
    # Same topologies, shrunk so inference takes milliseconds on a laptop CPU; keeps
    # the real vocabulary (30522), position table (512), 224x224 input and 1000 classes.
    "tiny": Preset(
        bert=BertConfig(layers=2, hidden=64, heads=2, ffn=256),
        resnet=ResNetConfig(blocks=(1, 1, 1, 1), base_width=8),
    ),
    # Real BERT-base and ResNet-50 sizes.
    "full": Preset(bert=BertConfig(), resnet=ResNetConfig()),
}


def default_out_dir(preset: str) -> Path:
    """`models/weights/<preset>` inside the repository."""
    return WEIGHTS_ROOT / preset


def _stamp(preset: str) -> dict:
    return {
        "builder_version": BUILDER_VERSION,
        "preset": preset,
        "params": PRESETS[preset].params(),
    }


def is_up_to_date(preset: str, out_dir: Path) -> bool:
    """True when `out_dir` holds a finished build of exactly this preset and builder version."""
    try:
        recorded = json.loads((out_dir / STAMP_FILE).read_text())
    except (OSError, ValueError):
        return False
    sizes = recorded.pop("sizes", {})
    # Round-trip through JSON so tuples compare equal to the lists read back.
    if recorded != json.loads(json.dumps(_stamp(preset))):
        return False
    for name in (BERT_FILE, RESNET_FILE):
        path = out_dir / name
        if not path.is_file() or path.stat().st_size != sizes.get(name):
            return False
    return True


def _write_atomic(path: Path, data: bytes) -> None:
    """Write to a unique temporary file in the same directory, then rename over `path`."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; the server may run as another user
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def build(
    preset: str,
    out_dir: Path | None = None,
    force: bool = False,
    log: Callable[[str], None] = print,
) -> Path:
    """Build `preset` into `out_dir` (default `models/weights/<preset>`) unless up to date.

    Returns the directory holding bert_qa.onnx and resnet50.onnx.
    """
    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; choose from {sorted(PRESETS)}")
    out_dir = Path(out_dir) if out_dir is not None else default_out_dir(preset)
    if not force and is_up_to_date(preset, out_dir):
        log(f"{preset}: up to date in {out_dir}")
        return out_dir

    # Imported here so `is_up_to_date` checks stay cheap (no onnx import).
    from models.networks.bert import build_bert_qa
    from models.networks.resnet import build_resnet

    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / STAMP_FILE).unlink(missing_ok=True)  # the old stamp no longer vouches for anything
    spec = PRESETS[preset]
    sizes: dict[str, int] = {}
    started = time.perf_counter()
    for name, make in (
        (BERT_FILE, lambda: build_bert_qa(spec.bert)),
        (RESNET_FILE, lambda: build_resnet(spec.resnet)),
    ):
        t0 = time.perf_counter()
        data = make().SerializeToString()
        _write_atomic(out_dir / name, data)
        sizes[name] = len(data)
        del data
        log(f"{preset}: built {out_dir / name} ({sizes[name] / 1e6:.1f} MB) in {time.perf_counter() - t0:.1f} s")
    stamp = _stamp(preset) | {"sizes": sizes}
    _write_atomic(
        out_dir / STAMP_FILE,
        (json.dumps(stamp, indent=2, sort_keys=True) + "\n").encode(),
    )
    log(f"{preset}: done in {time.perf_counter() - started:.1f} s")
    return out_dir


def ensure_built(preset: str, out_dir: Path | None = None) -> Path:
    """The weights directory for `preset`, building it first if it is missing or stale."""
    return build(preset, out_dir)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m models.build", description=__doc__.splitlines()[0])
    parser.add_argument("--preset", required=True, choices=sorted(PRESETS), help="model sizes to build")
    parser.add_argument("--force", action="store_true", help="rebuild even if up to date")
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="output dir (default: models/weights/<preset>)",
    )
    args = parser.parse_args(argv)
    build(args.preset, args.out, force=args.force)
    return 0


if __name__ == "__main__":
    sys.exit(main())
