"""`nki-assist eval`: score review feedback against gold reviews."""

from __future__ import annotations

import argparse
import json
import sys

from .exits import UsageError

DESCRIPTION = (
    "Review every case in CASES_DIR (default evals/cases) and score the findings and the written "
    "assessment against the case's gold review (gold.toml). Writes results.jsonl, summary.json and "
    "summary.md to --output-dir. With --thresholds, exits 1 when a metric falls below its threshold."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("cases_dir", nargs="?", default="evals/cases", metavar="CASES_DIR")
    p.add_argument("--llm", choices=["none", "openai", "replay"], default="none",
                   help="none: deterministic drafter; openai: live LLM; replay: recorded LLM replies (offline)")
    p.add_argument("--replies", choices=["recorded", "mechanical", "paraphrase"], default="recorded",
                   help="with --llm replay: which recorded replies to score (llm_reply.json, "
                        "llm_reply.mechanical.json, llm_reply.paraphrase.json; default recorded)")
    p.add_argument("--record", action="store_true",
                   help="with --llm openai: save grounded replies as llm_reply.json; with --llm replay --replies "
                        "mechanical: rebuild the mechanical replies from today's findings")
    p.add_argument("--model", help="LLM model (with --llm openai)")
    p.add_argument("--base-url", help="OpenAI-compatible base URL (with --llm openai)")
    from .common import add_llm_mode  # deferred: a command imports the engine only when it runs

    add_llm_mode(p)
    p.add_argument("--case", action="append", metavar="ID", help="only this case (repeatable)")
    p.add_argument("--format", choices=["text", "md", "json"], default="text")
    p.add_argument("--output-dir", default="evals/results", metavar="DIR", help="where results go (default evals/results)")
    p.add_argument("--thresholds", metavar="TOML", help="fail (exit 1) when a metric is below its threshold")
    p.add_argument("--jobs", "-j", type=int, default=2, help="cases reviewed in parallel (default 2)")


def run(args: argparse.Namespace) -> int:
    # deferred: a command imports the engine only when it runs (CLI start-up time)
    from pathlib import Path

    from ..evalsuite.runner import check_thresholds, discover, render_markdown, run_suite, write_outputs

    if not Path(args.cases_dir).is_dir():
        raise UsageError(f"{args.cases_dir}: no such directory")
    if args.record and not (args.llm == "openai" or (args.llm == "replay" and args.replies == "mechanical")):
        raise UsageError("--record needs --llm openai, or --llm replay --replies mechanical "
                         "(paraphrased replies are written by hand)")
    if args.replies != "recorded" and args.llm != "replay":
        raise UsageError("--replies needs --llm replay")
    if args.llm == "openai":
        # deferred: a command imports the engine only when it runs (CLI start-up time)
        from ..infra.extras import require

        require("openai", "--llm openai")
    if args.thresholds and not Path(args.thresholds).is_file():
        raise UsageError(f"{args.thresholds}: no such file")
    cases, problems = discover(args.cases_dir, args.case)
    if not cases:
        raise UsageError(f"no cases (folders with gold.toml) in {args.cases_dir}" + (f": {problems}" if problems else ""))
    progress = _bar(len(cases))
    try:
        summary, records, problems = run_suite(args.cases_dir, llm=args.llm, model=args.model, base_url=args.base_url,
                                               record=args.record, replies=args.replies, only=args.case, jobs=args.jobs,
                                               llm_mode=args.llm_mode, llm_timeout_s=args.llm_timeout,
                                               progress=progress.advance)
    finally:
        progress.close()
    md = render_markdown(summary)
    paths = write_outputs(args.output_dir, summary, records, md)
    if args.format == "json":
        print(json.dumps(summary, indent=2))
    elif args.format == "md":
        print(md)
    else:
        _table(summary)
    print(f"wrote {', '.join(str(p) for p in paths)}", file=sys.stderr)
    for p in problems:
        print(f"warning: {p}", file=sys.stderr)
    if args.thresholds:
        failures = check_thresholds(summary, args.thresholds)
        for f in failures:
            print(f"threshold: {f}", file=sys.stderr)
        if failures:
            return 1
        print("thresholds: all met", file=sys.stderr)
    return 0


def _table(summary) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(soft_wrap=True)
    if not console.is_terminal:  # piped: rich's 80 columns would cut the case names; a file has no width
        console = Console(soft_wrap=True, width=10_000)
    t = Table("case", "gold", "emitted", "matched", "precision", "recall", "critical", "clean FP", "verdict", "s",
              box=None, pad_edge=False)

    def f(x):
        return "-" if x is None else f"{x:.2f}" if isinstance(x, float) else str(x)

    for c in summary["per_case"]:
        t.add_row(c["case"], str(c["gold"]), str(c["emitted"]), str(c["matched_gold"]), f(c["precision"]),
                  f(c["recall"]), f"{c['critical_matched']}/{c['critical']}", str(c["clean_false_positives"]),
                  str(c["verdict"]), f(c["seconds"]))
    console.print(t)
    keys = ["precision", "recall", "f1", "critical_recall", "severity_weighted_recall", "clean_false_positives",
            "hallucinations", "grounding_rate", "kendall_tau", "ndcg_at_5", "seconds"]
    keys.insert(keys.index("ndcg_at_5") + 1, "root_cause_first")
    if summary.get("llm", "none") != "none":
        keys += ["llm_drafted", "llm_fallbacks"]
    console.print("  ".join(f"{k}={summary.get(k)}" for k in keys))
    for c in summary["per_case"]:
        if c.get("drafter") == "fallback":
            console.print(f"fallback {c['case']}: {c.get('fallback_reason')}", markup=False, highlight=False)


class _bar:
    def __init__(self, total: int) -> None:
        from rich.console import Console
        from rich.progress import Progress

        self.progress = Progress(transient=True, console=Console(stderr=True))
        self.progress.start()
        self.task = self.progress.add_task("eval", total=total)

    def advance(self, case_id: str) -> None:
        self.progress.update(self.task, advance=1, description=f"eval: {case_id}")

    def close(self) -> None:
        self.progress.stop()
