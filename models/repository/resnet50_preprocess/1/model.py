"""resnet50_preprocess: encoded image bytes -> 3x224x224 FP32 (models/backend/image_preprocess.py)."""

import sys
from pathlib import Path

# The repository lives inside the project; make the project importable from the Python stub.
sys.path.insert(0, str(Path(__file__).resolve().parents[4]))

from models.backend.image_preprocess import ImagePreprocessModel as TritonPythonModel

__all__ = ["TritonPythonModel"]
