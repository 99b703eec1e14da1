"""The parts of `python -m loadtests tune` (the command itself: loadtests/commands/tune.py).

repository_api  Triton's model repository extension: load (with a config override), unload,
                index, a model's config, and the explicit-mode check
variants        configuration variants from the model's own config and the --vary axes
measure         each variant measured by `python -m loadtests capacity` (and `sweep` at --rate)
restore         the original configuration back, however tune ends
ranking         the ranked table, tune.json and tune.csv
pbtxt           the winning configuration as config.pbtxt (protobuf text format)
comparison      the variants side by side with `python -m analysis compare`
"""
