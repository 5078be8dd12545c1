"""`nki-assist check PATH...`: static checks of NKI and CUDA files (text, json, sarif)."""

from __future__ import annotations

import argparse
import sys

DESCRIPTION = (
    "Static checks of NKI kernels (.py files that import NKI) and CUDA kernels (.cu, .cuh). "
    "Directories are searched recursively (hidden directories, virtualenvs and node_modules are skipped). "
    "Settings come from [tool.nki-assist] in the nearest pyproject.toml; flags override them. "
    "Suppress a finding with `# noqa: ID` (Python) or `// nki-assist: ignore[ID]` (CUDA)."
)


def _split(values: list[str] | None) -> list[str] | None:
    if values is None:
        return None
    return [v.strip() for item in values for v in item.split(",") if v.strip()]


def add_arguments(p: argparse.ArgumentParser) -> None:
    from .common import add_format, add_target

    p.add_argument("paths", nargs="+", metavar="PATH", help="files or directories to check")
    add_format(p, ["text", "json", "sarif"], "text")
    p.add_argument("--select", action="append", metavar="RULES",
                   help="only these rules: ids, id prefixes (NKI1) or names, comma-separated (replaces config)")
    p.add_argument("--ignore", action="append", metavar="RULES",
                   help="skip these rules, comma-separated (added to the config's ignore list)")
    add_target(p)
    p.add_argument("--fail-on", choices=["error", "warning", "info", "never"], default=None,
                   help="exit 1 when a finding at or above this severity is reported (default: config or error)")
    p.add_argument("--output", "-o", metavar="FILE", help="write the report to FILE instead of stdout")
    p.add_argument("--statistics", action="store_true", help="add a count of findings per rule (text format)")
    p.add_argument("--max-file-bytes", type=int, default=None, metavar="N",
                   help="skip files larger than N bytes with a note (default: config or 5000000)")
    p.add_argument("--no-config", action="store_true", help="ignore [tool.nki-assist] in pyproject.toml")


def build_options(args: argparse.Namespace):
    """CheckOptions from config + flags; bad values raise UsageError."""
    from pathlib import Path

    from ..check import options_from_config, unknown_selectors
    from ..cli import UsageError
    from ..config import Config, load_config

    cfg = Config() if args.no_config else load_config(Path(args.paths[0]))
    if cfg.problems:
        raise UsageError("invalid configuration:\n  " + "\n  ".join(cfg.problems))
    select = _split(args.select)
    ignore = list(cfg.ignore) + (_split(args.ignore) or [])
    unknown = unknown_selectors((select if select is not None else cfg.select or []) + ignore
                                + [s for v in cfg.per_file_ignores.values() for s in v]
                                + list(cfg.severity))
    if unknown:
        raise UsageError(f"unknown rule selector(s): {', '.join(unknown)}; `nki-assist rules` lists the rules")
    if args.max_file_bytes is not None and args.max_file_bytes <= 0:
        raise UsageError("--max-file-bytes must be positive")
    return options_from_config(cfg, target=args.target, select=select, ignore=ignore, fail_on=args.fail_on,
                               max_file_bytes=args.max_file_bytes)


def run(args: argparse.Namespace) -> int:
    import os

    from ..check import check_paths
    from ..cli import UsageError
    from ..report import render_check
    from .common import exit_code

    missing = [p for p in args.paths if not os.path.exists(p)]
    if missing:
        raise UsageError(f"no such file or directory: {', '.join(missing)}")
    options = build_options(args)
    report = check_paths(args.paths, options)
    kwargs = {"statistics_table": args.statistics} if args.format == "text" else {}
    out = render_check(report, args.format, **kwargs)
    if args.output:
        try:
            with open(args.output, "w", encoding="utf-8") as fh:
                fh.write(out)
        except OSError as exc:
            raise UsageError(f"cannot write {args.output}: {exc.strerror or exc}") from None
    else:
        sys.stdout.write(out)
        sys.stdout.flush()
    _print_side_channel(report, args)
    return exit_code(report.findings, options.fail_on)


def _print_side_channel(report, args) -> None:
    """Notes, errors and a summary on stderr: coloured when interactive, plain lines otherwise."""
    interactive = args.format == "text" and not args.output and sys.stdout.isatty()
    if interactive:
        from ..report.text import print_summary

        print_summary(report)
        return
    # Piped or machine formats: notes/errors still matter but must not pollute stdout.
    for note in report.notes:
        print(f"note: {note}", file=sys.stderr)
    for err in report.errors:
        print(f"error: {err}", file=sys.stderr)
