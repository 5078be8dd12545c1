"""CUDA-vs-NKI migration rules on a parsed pair: `checks.run_migration_rules` is the entry point; `common`
holds the pair context, `semantics`, `precision` and `layout` the rule families, `formats`, `index` and `pair`
the facts they compare."""
