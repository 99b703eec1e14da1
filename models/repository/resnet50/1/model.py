"""resnet50: an ONNX network on onnxruntime, batched per execute() call (models/backend/onnx_model.py)."""

import sys
from pathlib import Path

# The repository lives inside the project; make the project importable from the Python stub.
sys.path.insert(0, str(Path(__file__).resolve().parents[4]))

from models.backend.onnx_model import OnnxBatchingModel as TritonPythonModel

__all__ = ["TritonPythonModel"]
