"""Code that runs inside Triton's Python backend (imported by the demo models' model.py)."""
