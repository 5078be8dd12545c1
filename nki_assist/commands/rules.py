"""`nki-assist rules`: the rule table."""

from __future__ import annotations

import argparse
import json

DESCRIPTION = "List every rule with its id, name, category, criterion and default severity."


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--format", choices=["text", "json"], default="text")


def run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from ..rules.registry import all_rules

    rules = all_rules()
    if args.format == "json":
        print(json.dumps([{"id": r.id, "name": r.name, "category": r.category, "criterion": r.criterion,
                           "severity": r.severity.value, "source": r.source, "summary": r.summary,
                           "docs": r.docs_page} for r in rules], indent=2))
        return 0
    table = Table("id", "name", "category", "criterion", "severity", box=None, pad_edge=False)
    for r in rules:
        table.add_row(r.id, r.name, r.category, r.criterion, r.severity.value)
    Console(soft_wrap=True).print(table)
    return 0
