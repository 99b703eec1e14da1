"""The parts of `python -m loadtests tune` (the command itself: loadtests/commands/tune.py).

repository_api  Triton's model repository extension: load (with a config override), unload,
                index, a model's config, the explicit-mode check; the original configuration
                back however tune ends (restore_original), a config as config.pbtxt
                (config_pbtxt, protobuf text format)
variants        configuration variants from the model's own config and the --vary axes
measure         each variant measured by `python -m loadtests capacity` (and `sweep` at --rate)
ranking         the ranked table, tune.json and tune.csv; the variants side by side with
                `python -m analysis compare` (compare_variants)
"""
