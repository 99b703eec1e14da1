"""ONNX graph builders for the demo networks (BERT QA encoder, ResNet-50).

Each builder takes a frozen config (`config.py`) and returns an `onnx.ModelProto` whose
weights come from `np.random.default_rng(config.seed)`, so a config always yields the
same bytes. Import from the submodules: this package stays import-free so that reading
configs (e.g. to check whether a build is up to date) does not load onnx.
"""
