"""Demo models served by the local Triton: deterministic ONNX builders and their weights.

Kept import-light on purpose: importing `models` must not pull in onnx, so code that
only needs paths or presets stays cheap. Build with `python -m models.build`.
"""
