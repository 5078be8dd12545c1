"""`nki-assist report-batch DIR`: what a batch folder's results say across submissions."""

from __future__ import annotations

import argparse
import json
import sys

from .exits import UsageError

DESCRIPTION = (
    "Summarize a batch folder written by `nki-assist review ... -o DIR`: the distribution of verdicts and rubric "
    "scores, the most frequent findings (with links to the rules' docs), the fastest correct submissions by "
    "estimated time, and the ranking. Writes DIR/report.html (self-contained) and prints the summary."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("folder", metavar="DIR", help="a batch folder (holds results.jsonl)")
    p.add_argument("--format", choices=["text", "json", "html"], default="text",
                   help="what to print: text summary (default), json, or the HTML page's path")
    p.add_argument("--output", "-o", metavar="FILE", help="write the HTML page here (default: DIR/report.html)")


def run(args: argparse.Namespace) -> int:
    # deferred: a command imports the engine only when it runs (CLI start-up time)
    from pathlib import Path

    from ..infra.atomic import write_atomic
    from ..batch.report import render, write_report
    from ..batch.rows import ranked
    from ..batch.stats import summarize, summary_text
    from ..batch.store import read_rows
    from ..infra.redact import neutralise

    try:
        rows = ranked(read_rows(args.folder))
    except FileNotFoundError as exc:
        raise UsageError(str(exc)) from None
    if args.output:
        page = Path(args.output)
        try:
            write_atomic(page, render(args.folder, rows))
        except OSError as exc:
            raise UsageError(f"cannot write {page}: {exc.strerror or exc}") from None
    else:
        page = write_report(args.folder, rows)
    if args.format == "json":
        print(json.dumps(summarize(rows), indent=2))
    elif args.format == "html":
        print(page)
    else:
        sys.stdout.write(neutralise(summary_text(summarize(rows))))
    print(f"wrote {page}", file=sys.stderr)
    return 0
