"""The static check engine: `check PATH...` from files to findings.

Parts:
  options    what a run is asked to do (`CheckOptions`, selection, per-file ignores, severity overrides)
  results    what it answers (`FileResult` per file, `CheckReport` per run)
  read       reading a file: regular files only, size limits, binary sniffing, decoding
  engine     one file: front end, rules, selection, suppressions, fixes (`check_text`, `check_source`,
             `check_file`)
  run        many files: `collect_files`, `check_paths` (project model, forked workers, cache)
  walk       file discovery (.gitignore-aware, --exclude/--extend-exclude, globs)
  cache      the per-file result cache (keys, entries, lazy findings)
  pool       forked workers for indexing and checking (run_parallel, run_affine)
  suppress   `# noqa` / `# nki-assist: ignore` comments and unused-suppression findings
  fix        `--fix`: apply the fixes of a check run to a text (`fix_text`)
  autofix/   the fix builders each rule attaches and their application

Import what you need from this package (`from nki_assist.check import check_paths`); the modules behind it
are private to it. Names are loaded on first use so that importing one of them stays cheap.
"""

from __future__ import annotations

from ..infra.lazy import lazy_exports

_PUBLIC = {
    "options": ("CheckOptions", "options_from_config", "unknown_selectors", "file_ignores", "language_of"),
    "results": ("CheckReport", "FileResult"),
    "read": ("decode", "decode_source", "read_regular", "NotRegularFile"),
    "engine": ("check_text", "check_source", "check_file"),
    "run": ("check_paths", "collect_files", "cached_indexes", "store_index"),
    "cache": ("CACHE_DIR_ENV", "CheckCache", "default_cache_dir", "fix_applicability"),
    "fix": ("fix_text",),
    "autofix": ("apply_fixes", "selected_fixes"),
    "progress": ("enable_progress",),
}
__all__, __getattr__ = lazy_exports(__name__, _PUBLIC)
