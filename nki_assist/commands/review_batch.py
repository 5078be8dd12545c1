"""`nki-assist review` with many ports: the batch options and their door onto nki_assist/batch (docs/batch.md)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from .exits import UsageError


def add_batch_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("batch (many ports; docs/batch.md)")
    g.add_argument("--template", metavar="SPEC.toml",
                   help="one assignment spec (inputs, sizes, reference, [grading] rubric) applied to every "
                        "--submissions file; the submission's folder name is its id")
    g.add_argument("--submissions", metavar="GLOB", help="submitted kernel files for --template ('subs/*/kernel.py')")
    g.add_argument("--jobs", "-j", type=int, default=None, metavar="N",
                   help="reviews at once on this machine (default: the number of cores)")
    g.add_argument("--ray", nargs="?", const="", default=None, metavar="ADDRESS",
                   help="run the reviews as Ray tasks: on the cluster at ADDRESS ('auto', 'ray://host:10001'), "
                        "or on a local Ray instance without one (needs nki-assist[ray])")
    g.add_argument("--force", action="store_true", help="review again what the batch folder already holds")
    g.add_argument("--task-timeout", type=float, default=600.0, metavar="S",
                   help="wall-time limit of one submission's whole review (default 600); kernels keep --timeout")
    g.add_argument("--task-memory-mb", type=int, default=0, metavar="MB",
                   help="address-space limit of one review process in the local pool (default: none; kernel "
                        "runs keep --memory-mb)")
    g.add_argument("--llm-batch", action="store_true",
                   help="with --llm openai: draft every assessment through the OpenAI Batch API (one JSONL "
                        "upload), per request where the server has no Batch API")


def is_batch(args: argparse.Namespace) -> bool:
    specs = args.spec or []
    if args.template or args.submissions or len(specs) > 1 or args.ray is not None or args.jobs is not None \
            or args.force or args.llm_batch:
        return True
    if len(specs) == 1:
        # deferred: a command imports the engine only when it runs (CLI start-up time)
        from ..batch.manifest import is_manifest

        p = Path(specs[0])
        if p.is_dir() or (p.is_file() and is_manifest(p)):
            return True
    out = args.output  # `-o DIR/` (a trailing slash) makes one port a batch; `-o DIR` stays a usage error
    return bool(out) and out.endswith(("/", os.sep))


def _config(args: argparse.Namespace, cache_dir: str | None):
    # deferred: a command imports the engine only when it runs (CLI start-up time)
    from ..batch.task import BatchConfig
    from .check import nki_version_arg

    review = dict(target=args.target, sizes=args.size, backend=args.backend, run=not args.no_run,
                  timeout_s=args.timeout, memory_mb=args.memory_mb, gpu_precision=args.gpu_precision,
                  stochastic=args.stochastic_rounding, profile=args.profile, llm=args.llm, model=args.model,
                  base_url=args.base_url, rubric=args.rubric, cache_dir=cache_dir, plots=True,
                  nki_version=nki_version_arg(args), distinct_dims=args.distinct_dims)
    formats = ("json",) if args.format == "json" else ("json", "html" if args.format == "html" else "md")
    return BatchConfig(review=review, formats=formats, task_timeout_s=args.task_timeout,
                       task_memory_mb=args.task_memory_mb, sandbox=getattr(args, "sandbox", None))


def _tasks(args: argparse.Namespace):
    # deferred: a command imports the engine only when it runs (CLI start-up time)
    from ..batch.manifest import ManifestError, discover
    from ..batch.template import expand

    try:
        if args.template or args.submissions:
            if not (args.template and args.submissions):
                raise UsageError("--template and --submissions go together")
            if args.spec:
                raise UsageError("give either PORT... or --template/--submissions, not both")
            return expand(args.template, args.submissions, args.output)
        return discover(args.spec, args.output)
    except ManifestError as exc:
        raise UsageError(str(exc)) from None


def run_batch_command(args: argparse.Namespace, cache_dir: str | None) -> int:
    """Review every task into the -o folder; exit 1 when any review failed or reached --fail-on."""
    # deferred: a command imports the engine only when it runs (CLI start-up time)
    from ..batch.engine import run_batch
    from ..batch.report import write_report
    from ..batch.store import BatchStore
    from .common import apply_sandbox

    if args.ray and Path(args.ray).exists():  # `--ray ports/`: argparse took the first port for the address
        args.spec, args.ray = [args.ray, *(args.spec or [])], ""
    if args.nki or args.cuda:
        raise UsageError("--nki/--cuda review one kernel; a batch takes PORT... or --template")
    if not args.output:
        raise UsageError("a batch needs -o DIR (the batch folder: reviews, results.jsonl, results.csv)")
    if Path(args.output).exists() and not Path(args.output).is_dir():
        raise UsageError(f"{args.output}: a batch writes a folder; this is a file")
    if args.jobs is not None and args.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    if args.llm_batch and (args.llm != "openai" or args.no_cache):
        raise UsageError("--llm-batch needs --llm openai and the LLM reply cache (no --no-cache)")
    if args.llm == "openai":
        # deferred: a command imports the engine only when it runs (CLI start-up time)
        from ..infra.extras import require

        require("openai", "--llm openai")  # MissingExtra: exit 2 naming the extra
    if args.rubric and not Path(args.rubric).is_file():
        raise UsageError(f"{args.rubric}: no such file")
    apply_sandbox(args)
    Path(args.output).mkdir(parents=True, exist_ok=True)
    tasks = _tasks(args)
    cfg = _config(args, cache_dir)
    runner = _runner(args)
    store = BatchStore(args.output)
    try:
        if args.llm_batch:
            # deferred: only this mode talks to the Batch API
            from ..batch.llm_batch import run_with_llm_batch

            summary = run_with_llm_batch(tasks, cfg, runner, store, force=args.force, quiet=args.quiet)
        else:
            summary = run_batch(tasks, cfg, runner, store, force=args.force, quiet=args.quiet)
    finally:
        if hasattr(runner, "shutdown"):
            runner.shutdown()
    html = write_report(args.output, summary.rows)
    failed = [r for r in summary.rows if r["status"] != "ok"]
    print(f"{summary.total} submissions: {summary.reviewed} reviewed, {summary.skipped} unchanged (skipped), "
          f"{len(failed)} failed; {summary.seconds:.1f} s", file=sys.stderr)
    print(f"wrote {Path(args.output) / 'results.csv'}, {Path(args.output) / 'results.jsonl'} and {html}",
          file=sys.stderr)
    if failed:
        return 1
    level = {"error": ("error",), "warning": ("error", "warning"), "info": ("error", "warning", "info")}
    counts = level.get(args.fail_on, ())
    return 1 if any((r.get(f"{c}s") or 0) > 0 for r in summary.rows for c in counts) else 0


def _runner(args: argparse.Namespace):
    # deferred: a command imports the engine only when it runs (CLI start-up time)
    from ..batch.pool import LocalPool, default_jobs

    if args.ray is not None:
        # deferred: Ray is optional; the runner reports a missing extra itself
        from ..batch.ray_runner import RayRunner

        return RayRunner(address=args.ray or None, num_cpus=args.jobs or 2)
    return LocalPool(args.jobs or default_jobs())
