"""`nki-assist explain ID`: a rule's docs page."""

from __future__ import annotations

import argparse

from .exits import UsageError

DESCRIPTION = "Print the documentation of a rule, by id (NKI103) or name (psum-tile-exceeds-bank)."


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("rule", help="rule id or kebab name")


def run(args: argparse.Namespace) -> int:
    # deferred: a command imports the engine only when it runs (CLI start-up time)
    from ..rules.registry import docs_text, get

    try:
        spec = get(args.rule)
    except KeyError as exc:
        raise UsageError(exc.args[0]) from None
    print(f"{spec.id} {spec.name}  [{spec.category} / {spec.criterion}, default {spec.severity.value}]\n")
    print(docs_text(spec.id))
    return 0
