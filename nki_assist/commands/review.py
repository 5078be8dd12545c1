"""`nki-assist review`: the full review of a port, with the written assessment."""

from __future__ import annotations

import argparse
import gc
import json
import sys

from .exits import UsageError

DESCRIPTION = (
    "Review a CUDA-to-NKI port: static checks of both files, migration checks, the kernel run in the "
    "simulator on every size of the spec under several numerical scenarios, the cost model, and a "
    "written assessment whose every item cites verified findings. `review PORT.toml`, or "
    "`review --nki F [--cuda F]` without a spec (static and migration checks only). Many ports (several "
    "PORT.toml, folders, a manifest, or --template with --submissions) and -o DIR make a batch: a review per "
    "submission and a results table, in parallel, resumable (docs/batch.md). Never uses the network unless "
    "--llm openai is given."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    # deferred: a command imports the engine only when it runs (CLI start-up time)
    from .common import add_fail_on, add_format, add_llm_mode, add_nki_version, add_sandbox, add_target
    from .review_batch import add_batch_arguments

    p.add_argument("spec", nargs="*", metavar="PORT",
                   help="port spec (see README 'Port spec'); several, a folder searched for port.toml, or a "
                        "manifest (.jsonl / .toml with ports = [...]) make a batch (needs -o DIR)")
    p.add_argument("--nki", metavar="FILE", help="NKI kernel file (without a spec)")
    p.add_argument("--cuda", metavar="FILE", help="CUDA kernel file (without a spec)")
    add_format(p, ["md", "text", "json", "html"], "md")
    add_target(p)
    add_nki_version(p)
    add_fail_on(p, "error")  # a `block` verdict (an error finding) exits 1
    p.add_argument("--size", action="append", metavar="NAME", help="only this size of the spec (repeatable)")
    p.add_argument("--distinct-dims", choices=["auto", "always", "off"], default=None,
                   help="add a size with pairwise distinct dimensions, none a multiple of another: auto (default, "
                        "or the spec's [review] distinct_dims) when the sizes let two dimensions or tile constants "
                        "coincide, always, or off")
    p.add_argument("--repair-budget", type=float, default=4.0, metavar="S",
                   help="diagnosis of a failing size: seconds of candidate-edit re-runs per failing size (default 4; "
                        "0 diagnoses without trying repairs); printed in the review's notes")
    p.add_argument("--backend", choices=["builtin", "neuron"], default="builtin",
                   help="how the kernel runs (default: builtin simulator)")
    p.add_argument("--no-run", action="store_true", help="do not execute the kernel (static and migration only)")
    p.add_argument("--timeout", type=float, default=60.0, metavar="S", help="wall-time limit per kernel run (default 60)")
    p.add_argument("--memory-mb", type=int, default=4096, metavar="MB", help="memory limit per kernel run (default 4096)")
    p.add_argument("--stochastic-rounding", action="store_true", help="add the trainium-sr scenario")
    add_sandbox(p)
    p.add_argument("--gpu-precision", choices=["float32", "float16", "tf32", "float64"], default=None,
                   help="accumulation precision of the gpu-model scenario (default: from the CUDA kernel)")
    p.add_argument("--profile", metavar="SUMMARY.json", help="neuron-profile / Neuron Explorer summary JSON")
    p.add_argument("--llm", choices=["none", "openai"], default="none",
                   help="drafter: none = deterministic (default); openai = any OpenAI-compatible server "
                        "(OPENAI_API_KEY, OPENAI_BASE_URL)")
    p.add_argument("--model", help="LLM model name (with --llm openai)")
    p.add_argument("--base-url", help="OpenAI-compatible base URL (default: OPENAI_BASE_URL)")
    add_llm_mode(p)
    p.add_argument("--rubric", metavar="FILE", help="rubric TOML to score against (default: the built-in rubric)")
    p.add_argument("--cache-dir", metavar="DIR",
                   help="LLM reply cache (default with --llm openai: see README 'LLM drafter')")
    p.add_argument("--no-cache", action="store_true", help="do not read or write the LLM reply cache")
    p.add_argument("--output", "-o", metavar="FILE",
                   help="write the report to FILE (plots beside it for md); a batch: the batch folder")
    p.add_argument("--source-url", metavar="URL",
                   help="html: link locations to URL + path relative to the spec (e.g. a GitHub blob URL) "
                        "instead of file:// URIs")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")
    add_batch_arguments(p)


def run(args: argparse.Namespace) -> int:
    # deferred: a command imports the engine only when it runs (CLI start-up time)
    from pathlib import Path

    from ..toolchain.sandbox import warm_sandbox
    from .common import apply_sandbox, check_output
    from .review_batch import is_batch, run_batch_command

    if is_batch(args):
        return run_batch_command(args, _cache_dir(args))
    args.spec = args.spec[0] if args.spec else None
    if not args.spec and not args.nki:
        raise UsageError("give a PORT.toml or --nki FILE")
    if args.spec and args.nki:
        raise UsageError("give either PORT.toml or --nki/--cuda, not both")
    if not 0 <= args.repair_budget < float("inf"):
        raise UsageError(f"--repair-budget {args.repair_budget:g}: give seconds >= 0 (0: no repair re-runs)")
    for f in [args.spec, args.nki, args.cuda, args.profile, args.rubric]:
        if f and not Path(f).is_file():
            raise UsageError(f"{f}: " + ("not a regular file" if Path(f).exists() else "no such file"))
    check_output(args.output)  # a bad -o is a usage error now, not after minutes of review
    apply_sandbox(args)
    # One review, then the process ends: the cyclic collector would only spend time on the engine's imports
    # (~8% of this process's CPU on the example; peak memory unchanged). Kernels run in their own processes.
    collecting = gc.isenabled()
    gc.disable()
    try:
        # The warm sandbox worker starts first: its imports (NumPy, the simulator) run on the other core
        # while this process imports the review engine.
        with warm_sandbox(bool(args.spec) and not args.no_run and args.backend == "builtin"):
            return _review(args)
    finally:
        if collecting:
            gc.enable()  # called in process (tests, the language server's code paths): as it was


def _review(args: argparse.Namespace) -> int:
    # deferred: a command imports the engine only when it runs (CLI start-up time)
    from pathlib import Path

    from ..numerics.spec import SpecError
    from ..infra.redact import neutralise, redact
    from ..review import ReviewOptions, review_files, review_port
    from .check import nki_version_arg
    from .common import exit_code, write_atomic

    if args.llm == "openai":
        # deferred: a command imports the engine only when it runs (CLI start-up time)
        from ..infra.extras import require

        require("openai", "--llm openai")  # MissingExtra: exit 2 naming the extra
    plots = args.format in ("md", "html") and (args.format == "html" or bool(args.output))
    plots_note = None
    if plots:
        # deferred: a command imports the engine only when it runs (CLI start-up time)
        from ..infra.extras import available

        if not available("matplotlib"):
            plots = False
            plots_note = "plots skipped: they need matplotlib (pip install 'nki-assist[report]')"
    opts = ReviewOptions(target=args.target, sizes=args.size, backend=args.backend, run=not args.no_run,
                         timeout_s=args.timeout, memory_mb=args.memory_mb, gpu_precision=args.gpu_precision,
                         stochastic=args.stochastic_rounding, profile=args.profile, llm=args.llm,
                         model=args.model, base_url=args.base_url, rubric=args.rubric, cache_dir=_cache_dir(args),
                         llm_mode=args.llm_mode, llm_timeout_s=args.llm_timeout,
                         plots=plots, nki_version=nki_version_arg(args), distinct_dims=args.distinct_dims,
                         repair_budget_s=args.repair_budget)
    progress = None if args.quiet else _progress()
    try:
        if args.spec:
            result = review_port(args.spec, opts, progress=progress.update if progress else None)
        else:
            result = review_files(args.nki, args.cuda, opts, progress=progress.update if progress else None)
    except Exception as exc:
        from ..feedback.rubric import RubricError  # deferred: the drafter's imports run while the kernel runs

        if isinstance(exc, (SpecError, RubricError)):
            raise UsageError(str(exc)) from None
        raise
    finally:
        if progress:
            progress.close()
    if plots_note:
        result.review.notes.append(plots_note)
        print(f"note: {plots_note}", file=sys.stderr)
    text = _render(result, args)
    if args.format != "json":  # JSON escapes control characters itself
        text = neutralise(text)  # a kernel's exception text never drives the terminal
    if args.output:
        out = Path(args.output)
        try:
            if args.format == "md":
                for name, png in result.plots.items():
                    write_atomic(out.parent / f"{out.stem}-{name}", png)
            write_atomic(out, redact(text))  # whole or not at all; never an API key or token on disk
        except OSError as exc:
            raise UsageError(f"cannot write {out}: {exc.strerror or exc}") from None
        print(f"wrote {out}", file=sys.stderr)
    else:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    a = result.review.assessment
    if a is not None and a.verdict == "incomplete":
        return 1  # whatever --fail-on says: a review that did not check everything never passes
    return exit_code(result.review.findings, args.fail_on)


def _cache_dir(args) -> str | None:
    if args.no_cache or args.llm == "none":
        return None
    if args.cache_dir:
        return args.cache_dir
    # deferred: a command imports the engine only when it runs (CLI start-up time)
    from ..feedback import default_cache_dir

    return str(default_cache_dir())


def _render(result, args) -> str:
    review = result.review
    if args.format == "json":
        return json.dumps(review.to_json(), indent=2)
    if args.format == "html":
        # deferred: a command imports the engine only when it runs (CLI start-up time)
        from ..report.html import render_html

        return render_html(review, plots=result.plots, source_url=args.source_url)
    # deferred: a command imports the engine only when it runs (CLI start-up time)
    from ..report.markdown import render_markdown

    md = render_markdown(review)
    if args.output and result.plots:
        from pathlib import Path

        stem = Path(args.output).stem
        md += "\n" + "\n".join(f"![{name}]({stem}-{name})" for name in result.plots) + "\n"
    if args.format == "text":
        from rich.console import Console
        from rich.markdown import Markdown

        console = Console(file=None, force_terminal=False, width=100, record=True)
        with console.capture() as cap:
            console.print(Markdown(md))
        return cap.get()
    return md


class _progress:
    """Progress on stderr: a rich bar on a terminal, one line per stage otherwise."""

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()
        self.last = ""
        if self.tty:
            from rich.progress import Progress

            self.bar = Progress(transient=True)
            self.bar.start()
            self.task = self.bar.add_task("review", total=100)

    def update(self, message: str, percent: float) -> None:
        # deferred: a command imports the engine only when it runs (CLI start-up time)
        from ..infra.redact import neutralise

        message = neutralise(message)  # size names and notes come from user files
        if self.tty:
            self.bar.update(self.task, completed=percent, description=message)
        elif message != self.last:
            print(f"[{percent:5.1f}%] {message}", file=sys.stderr)
            self.last = message

    def close(self) -> None:
        if self.tty:
            self.bar.stop()
