"""Static NKI rules, one family per module, each module listing its rules (`RULES`) beside their checks.
`run.run_nki_rules` runs every registered check on a parsed file; shared helpers (the check registry,
`emit`, loop/allocation helpers) live in `common`."""
