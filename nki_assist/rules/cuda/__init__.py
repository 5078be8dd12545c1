"""Static CUDA rules: `checks.run_cuda_rules` (parse errors, races, atomics, fast math, accumulators,
unguarded stores; their RULES beside them) and `sync` (barrier placement)."""
