"""`nki-assist rules`: the rule table."""

from __future__ import annotations

import argparse
import json

from .exits import UsageError

DESCRIPTION = ("List every rule with its id, name, category, criterion and default severity. With --write-docs, "
               "regenerate docs/rules/*.md and the family tables from the rule specs (in a source checkout).")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--format", choices=["text", "json"], default="text")
    p.add_argument("--write-docs", action="store_true",
                   help="write docs/rules/<name>.md and the rule tables of docs/*.md from the specs")


def run(args: argparse.Namespace) -> int:
    # deferred: a command imports the engine only when it runs (CLI start-up time)
    from rich.console import Console
    from rich.table import Table

    from ..rules.registry import all_rules

    if args.write_docs:
        return _write_docs()
    rules = all_rules()
    if args.format == "json":
        print(json.dumps([{"id": r.id, "name": r.name, "category": r.category, "criterion": r.criterion,
                           "severity": r.severity.value, "source": r.source, "summary": r.summary,
                           "docs": r.docs_page} for r in rules], indent=2))
        return 0
    import sys

    if not sys.stdout.isatty():
        # piped: full names in tab-separated columns (cut/awk/grep), never truncated to a terminal width
        rows = [("id", "name", "category", "criterion", "severity")]
        rows += [(r.id, r.name, r.category, r.criterion, r.severity.value) for r in rules]
        try:
            sys.stdout.write("".join("\t".join(row) + "\n" for row in rows))
            sys.stdout.flush()
        except BrokenPipeError:  # `nki-assist rules | head`: the reader has what it wanted
            import os

            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    table = Table("id", "name", "category", "criterion", "severity", box=None, pad_edge=False)
    for r in rules:
        table.add_row(r.id, r.name, r.category, r.criterion, r.severity.value)
    Console(soft_wrap=True).print(table)
    return 0


def _write_docs() -> int:
    # deferred: a command imports the engine only when it runs (CLI start-up time)
    from ..rules.docgen import repo_root, write

    root = repo_root()
    if not (root / "docs" / "rules").is_dir():
        raise UsageError(f"{root}: not a source checkout (no docs/rules); --write-docs regenerates the repository's docs")
    changed = write(root)
    for p in changed:
        print(f"wrote {p.relative_to(root)}")
    print(f"{len(changed)} file(s) changed")
    return 0
