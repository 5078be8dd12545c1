"""`nki-assist check PATH...`: static checks of NKI and CUDA files (text, json, sarif)."""

from __future__ import annotations

import argparse
import sys

from .exits import EXIT_FINDINGS, UsageError

DESCRIPTION = (
    "Static checks of NKI kernels (.py files that import NKI) and CUDA kernels (.cu, .cuh). "
    "Directories are searched recursively (hidden directories, virtualenvs, node_modules, excluded and "
    "git-ignored paths are skipped); files are checked in parallel and unchanged files come from the cache "
    "(.nki_assist_cache; --no-cache). A file that could not be checked (unreadable, too large, a crashed "
    "check) makes the run incomplete: exit 1 with an `incomplete:` message. "
    "Settings come from [tool.nki-assist] in the nearest pyproject.toml; flags override them. "
    "Suppress a finding with `# noqa: ID` (Python) or `// nki-assist: ignore[ID]` (CUDA). "
    "`-` reads one file from stdin (name it with --stdin-filename). --fix applies the safe mechanical "
    "fixes (--unsafe-fixes adds those that may change results); --diff shows them without writing."
)


def _split(values: list[str] | None) -> list[str] | None:
    if values is None:
        return None
    return [v.strip() for item in values for v in item.split(",") if v.strip()]


def add_arguments(p: argparse.ArgumentParser) -> None:
    # deferred: a command imports the engine only when it runs (CLI start-up time)
    from .common import add_nki_version, add_target

    p.add_argument("paths", nargs="*", metavar="PATH",
                   help="files or directories to check (default: the current directory); `-` reads stdin")
    p.add_argument("--format", "--output-format", dest="format", default="text",
                   choices=["text", "concise", "json", "sarif", "github"],
                   help="output format (default: text: each finding with its source lines, then `Found N "
                        "findings (M fixable).` or `All checks passed!`; concise: one line per finding)")
    p.add_argument("--verbose", "-v", action="store_true",
                   help="say on stderr which file is being checked when one takes more than 2 s (the default when "
                        "stderr is a terminal)")
    p.add_argument("--watch", action="store_true",
                   help="check again whenever a checked file changes (polls once a second; Ctrl-C stops)")
    p.add_argument("--select", action="append", metavar="RULES",
                   help="only these rules: ids, id prefixes (NKI1) or names, comma-separated (replaces config)")
    p.add_argument("--extend-select", action="append", metavar="RULES",
                   help="add these rules to the selection (config's or --select's), comma-separated")
    p.add_argument("--ignore", action="append", metavar="RULES",
                   help="skip these rules, comma-separated (added to the config's ignore list)")
    add_target(p)
    add_nki_version(p)
    p.add_argument("--fail-on", choices=["error", "warning", "info", "never"], default=None,
                   help="exit 1 when a finding at or above this severity is reported (default: config or error)")
    p.add_argument("--exit-zero", action="store_true",
                   help="exit 0 whatever the findings (like --fail-on never); an incomplete run still exits 1")
    p.add_argument("--exclude", action="append", metavar="GLOBS",
                   help="skip these paths in directory walks, comma-separated gitwildmatch globs (replaces config)")
    p.add_argument("--extend-exclude", action="append", metavar="GLOBS",
                   help="skip these paths too (added to exclude), comma-separated gitwildmatch globs")
    p.add_argument("--no-respect-gitignore", action="store_true",
                   help="walk into paths that .gitignore files ignore")
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the cache")
    p.add_argument("--cache-dir", metavar="DIR",
                   help="cache folder (default: config cache-dir, NKI_ASSIST_CACHE_DIR or .nki_assist_cache "
                        "in the project root)")
    p.add_argument("--output", "-o", metavar="FILE", help="write the report to FILE instead of stdout")
    p.add_argument("--statistics", action="store_true", help="add a count of findings per rule (text format)")
    p.add_argument("--max-file-bytes", type=int, default=None, metavar="N",
                   help="skip files larger than N bytes with a note (default: config or 5000000)")
    p.add_argument("--no-config", action="store_true", help="ignore [tool.nki-assist] in pyproject.toml")
    p.add_argument("--fix", action="store_true",
                   help="apply the safe fixes in place, then report what is left (stdin: fixed source on stdout)")
    p.add_argument("--unsafe-fixes", action="store_true",
                   help="with --fix/--diff, also apply fixes that may change results or scheduling")
    p.add_argument("--diff", action="store_true",
                   help="print the fixes as a unified diff instead of writing them; exit 1 when there are any")
    p.add_argument("--show-fixes", action="store_true",
                   help="list the findings fixed (--fix), that would be fixed (--diff) or that --fix would fix, "
                        "per file and rule, on stderr")
    p.add_argument("--stdin-filename", metavar="PATH",
                   help="name of the file read from stdin (`-`): language, config and per-file-ignores follow it")


def build_options(args: argparse.Namespace):
    """CheckOptions from config + flags; bad values raise UsageError."""
    # deferred: a command imports the engine only when it runs (CLI start-up time)
    from pathlib import Path

    from ..check import options_from_config, unknown_selectors
    from ..config import Config, load_config

    anchor = args.stdin_filename if args.paths == ["-"] and args.stdin_filename else args.paths[0]
    cfg = Config() if args.no_config else load_config(Path(anchor))
    if cfg.problems:
        raise UsageError("invalid configuration:\n  " + "\n  ".join(cfg.problems))
    select = _split(args.select)
    ignore = list(cfg.ignore) + (_split(args.ignore) or [])
    extend = _split(args.extend_select) or []
    base = select if select is not None else cfg.select
    if extend and base is not None:  # with no selection every rule runs already
        select = list(base) + extend
    unknown = unknown_selectors((select if select is not None else cfg.select or []) + ignore + extend
                                + [s for v in cfg.per_file_ignores.values() for s in v]
                                + list(cfg.severity))
    if unknown:
        raise UsageError(f"unknown rule selector(s): {', '.join(unknown)}; `nki-assist rules` lists the rules")
    if args.max_file_bytes is not None and args.max_file_bytes <= 0:
        raise UsageError("--max-file-bytes must be positive")
    exclude = _split(args.exclude)
    extend_exclude = list(cfg.extend_exclude) + (_split(args.extend_exclude) or [])
    options = options_from_config(cfg, target=args.target, select=select, ignore=ignore,
                                  fail_on="never" if args.exit_zero else args.fail_on,
                                  max_file_bytes=args.max_file_bytes, exclude=exclude, extend_exclude=extend_exclude,
                                  respect_gitignore=False if args.no_respect_gitignore else None,
                                  nki_version=nki_version_arg(args))
    return options, cfg


def _cache(args: argparse.Namespace, cfg, options):
    """The check cache, or None (--no-cache or NKI_ASSIST_NO_CACHE; --fix and --diff rewrite files and check
    them afresh). Folder: --cache-dir, NKI_ASSIST_CACHE_DIR, the config's cache-dir, .nki_assist_cache in
    the project root."""
    import os

    if args.no_cache or args.fix or args.diff or os.environ.get("NKI_ASSIST_NO_CACHE", "") not in ("", "0"):
        return None
    # deferred: a command imports the engine only when it runs (CLI start-up time)
    from pathlib import Path

    from ..check import CACHE_DIR_ENV, CheckCache, default_cache_dir

    if args.cache_dir:
        folder = Path(args.cache_dir)
    elif cfg.cache_dir and not os.environ.get(CACHE_DIR_ENV):
        folder = Path(cfg.cache_dir) if cfg.root is None else cfg.root / cfg.cache_dir
    else:
        folder = default_cache_dir(str(cfg.root) if cfg.root else None)
    return CheckCache(folder, options)


def nki_version_arg(args: argparse.Namespace) -> str | None:
    """`--nki-version` normalised ("2.29" -> "0.3"); a value naming no version is a usage error."""
    value = getattr(args, "nki_version", None)
    if value is None:
        return None
    # deferred: a command imports the engine only when it runs (CLI start-up time)
    from ..api.table import normalize_version

    v = normalize_version(value)
    if v is None:
        raise UsageError(f"--nki-version {value!r} names no NKI version (0.1-0.6) or SDK release (2.27-2.32)")
    return v


def run(args: argparse.Namespace) -> int:
    if not args.watch:
        return _run_once(args)
    if not args.paths:
        args.paths = ["."]
    if "-" in args.paths or args.fix or args.diff:
        raise UsageError("--watch checks files on disk: not with `-` (stdin), --fix or --diff")
    from .check_watch import watch  # deferred: only --watch polls

    options, _ = build_options(args)
    return watch(args.paths, options, lambda: _run_once(args))


def _run_once(args: argparse.Namespace) -> int:
    # deferred: a command imports the engine only when it runs (CLI start-up time)
    import os

    from ..check import check_paths, enable_progress
    from ..report import render_check
    from .check_fix import STDIN, FixSummary, check_stdin, fixer
    from .common import exit_code

    enable_progress(args.verbose or sys.stderr.isatty())

    if args.stdin_filename and not args.paths:
        args.paths = [STDIN]
    if not args.paths:
        args.paths = ["."]  # as ruff does
    stdin = STDIN in args.paths
    if stdin and len(args.paths) > 1:
        raise UsageError("`-` (stdin) cannot be combined with other paths")
    if args.stdin_filename and not stdin:
        raise UsageError("--stdin-filename needs `-` as the path")
    if args.fix and args.diff:
        raise UsageError("give --fix or --diff, not both")
    if args.unsafe_fixes and not (args.fix or args.diff):
        raise UsageError("--unsafe-fixes needs --fix or --diff")
    missing = [p for p in args.paths if p != STDIN and not os.path.exists(p)]
    if missing:
        raise UsageError(f"no such file or directory: {', '.join(missing)}")
    for p in args.paths:
        if p != STDIN and os.path.isdir(p):
            try:
                os.scandir(p).close()
            except OSError as exc:  # before the config search, which would fail inside it
                raise UsageError(f"cannot read directory {p}: {exc.strerror or exc}") from None
    options, cfg = build_options(args)
    summary = FixSummary()
    fixing = args.fix or args.diff
    if stdin:
        report = check_stdin(args.stdin_filename or STDIN, options, fixing, args.unsafe_fixes, summary)
    elif fixing:
        report = check_paths(args.paths, options, fixer(options, args.unsafe_fixes, args.fix, summary))
    else:
        report = check_paths(args.paths, options, cache=_cache(args, cfg, options), jobs=None, lazy=True)
    if args.diff:
        sys.stdout.write("".join(summary.diffs))
        sys.stdout.flush()
        print(f"{'Would fix' if summary.fixed else 'Nothing to fix'}"
              + (f" {summary.fixed} finding(s) in {summary.files} file(s)." if summary.fixed else "."),
              file=sys.stderr)
        if args.show_fixes:
            _show_fixes("Would fix", summary.fixed_findings)
        return 1 if summary.fixed or _incomplete(report) else 0
    kwargs = ({"statistics_table": args.statistics, "snippets": args.format == "text"}
              if args.format in ("text", "concise") else {})
    out = render_check(report, "text" if args.format == "concise" else args.format, **kwargs)
    if stdin and args.fix:  # like other formatters: the fixed source on stdout, the report on stderr
        sys.stdout.flush()
        sys.stdout.buffer.write(summary.fixed_source or b"")
        sys.stdout.buffer.flush()
        if not args.output:
            sys.stderr.write(out)
            out = ""
    _write(out, args.output)
    _print_side_channel(report, args)
    if args.format in ("text", "github", "concise", "grouped"):  # machine formats carry it as a field
        for v in getattr(report, "nki_versions", []):
            if v["assumed"]:
                print(v["message"], file=sys.stderr)
    if args.fix:
        print(f"Fixed {summary.fixed} finding(s) in {summary.files} file(s); {len(report.findings)} left.",
              file=sys.stderr)
    else:
        # deferred: a command imports the engine only when it runs (CLI start-up time)
        from .check_fix import fixable_hint

        hint = fixable_hint(report.findings, fixing, args.unsafe_fixes)
        if hint:
            print(f"note: {hint}", file=sys.stderr)
    if args.show_fixes:
        if args.fix:
            _show_fixes("Fixed", summary.fixed_findings)
        else:
            # deferred: a command imports the engine only when it runs (CLI start-up time)
            from ..check import fix_applicability

            _show_fixes("Fixable with --fix:", [(f.file or "-", f.rule, f.name) for f in report.findings
                                                if fix_applicability(f) == "safe"])
    code = exit_code(report.findings, options.fail_on)
    return max(code, EXIT_FINDINGS) if _incomplete(report) else code


def _incomplete(report) -> bool:
    """Say on stderr which files were not (fully) checked; True when any (the run cannot pass)."""
    if not report.incomplete:
        return False
    n = len(report.incomplete)
    print(f"nki-assist check: incomplete: {n} file{'s' if n != 1 else ''} not fully checked, so this run "
          "cannot pass (exclude a file to skip it on purpose):", file=sys.stderr)
    for line in report.incomplete:
        print(f"  {line}", file=sys.stderr)
    return True


def _show_fixes(title: str, fixed: list[tuple[str, str, str]]) -> None:
    """ruff's --show-fixes: per file, how many findings of each rule were (or would be) fixed."""
    if not fixed:
        print(f"{title} no findings." if title.endswith(":") else f"{title} 0 findings.", file=sys.stderr)
        return
    counts: dict[str, dict[tuple[str, str], int]] = {}
    for path, rule, name in fixed:
        per_file = counts.setdefault(path, {})
        per_file[(rule, name)] = per_file.get((rule, name), 0) + 1
    print(f"{title} {len(fixed)} finding{'s' if len(fixed) != 1 else ''}:", file=sys.stderr)
    for path in sorted(counts):
        print(f"- {path}:", file=sys.stderr)
        for (rule, name), n in sorted(counts[path].items()):
            print(f"    {n} × {rule} ({name})", file=sys.stderr)


def _write(out: str, output: str | None) -> None:
    if output:
        try:
            with open(output, "w", encoding="utf-8") as fh:
                fh.write(out)
        except OSError as exc:
            raise UsageError(f"cannot write {output}: {exc.strerror or exc}") from None
    elif out:
        sys.stdout.write(out)
        sys.stdout.flush()


def _print_side_channel(report, args) -> None:
    """Notes, errors and a summary on stderr: coloured when interactive, plain lines otherwise."""
    interactive = args.format in ("text", "concise") and not args.output and sys.stdout.isatty()
    if interactive:
        # deferred: a command imports the engine only when it runs (CLI start-up time)
        from ..report.text import print_summary

        print_summary(report)
        return
    # Piped or machine formats: notes/errors still matter but must not pollute stdout.
    for note in report.notes:
        print(f"note: {note}", file=sys.stderr)
    for err in report.errors:
        print(f"error: {err}", file=sys.stderr)
