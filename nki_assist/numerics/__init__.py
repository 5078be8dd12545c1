"""Port numerics: spec loading, input generation, reference runs and agreement metrics.

Heavy submodules are imported on use: `from nki_assist.numerics.spec import load_spec`, ...
"""
