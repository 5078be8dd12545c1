"""`nki-assist` command line: a thin door onto the engine.

Each subcommand lives in `nki_assist/commands/<name>.py` with `add_arguments(parser)` and
`run(args) -> int`; command modules import heavy dependencies inside `run` so start-up stays fast.
Exit codes: 0 ok, 1 findings at or above --fail-on, 2 usage or internal error.
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
import threading

# We use no pydantic plugins; skipping the entry-point scan saves ~0.2 s of start-up.
os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")

from . import __version__
from .commands.exits import EXIT_ERROR, EXIT_FINDINGS, EXIT_OK, UsageError  # noqa: F401 (re-exported for callers)
from .infra.redact import RedactingStream, neutralise, redact

COMMANDS: dict[str, str] = {
    "check": "static checks of NKI and CUDA files",
    "review": "full review of a port (static, migration, simulation, numerics, performance, assessment)",
    "simulate": "run a port's kernel in the simulator and compare with the reference",
    "run": "run a program's tests or scripts with every kernel launch on the simulator, with sanitizer findings",
    "golden": "capture the CUDA kernel's outputs on a GPU as [golden] files (--dry-run: no GPU)",
    "report-batch": "summarize a batch folder of reviews (verdicts, scores, frequent findings, fastest)",
    "eval": "score review feedback against gold reviews",
    "lsp": "language server on stdio",
    "rules": "list the rules",
    "explain": "print a rule's documentation",
}

REDACTED_COMMANDS = ("review", "simulate", "eval", "golden", "run")


def _module(name: str):
    return importlib.import_module(f"nki_assist.commands.{name.replace('-', '_')}")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The argument parser; with `only`, just that subcommand's module is imported (fast start-up)."""
    parser = argparse.ArgumentParser(
        prog="nki-assist",
        description="Review NKI kernels for AWS Trainium and the CUDA kernels they were ported from.",
        epilog="Exit codes: 0 ok, 1 findings at --fail-on level or an incomplete run, 2 usage or internal error.",
    )
    parser.add_argument("--version", action="version", version=f"nki-assist {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, help_text in COMMANDS.items():
        if only is not None and name != only:
            sub.add_parser(name, help=help_text)
            continue
        try:
            mod = _module(name)
        except ModuleNotFoundError as exc:
            if exc.name != f"nki_assist.commands.{name.replace('-', '_')}":
                raise
            continue  # command not built yet
        p = sub.add_parser(name, help=help_text, description=getattr(mod, "DESCRIPTION", help_text))
        mod.add_arguments(p)
        p.set_defaults(_run=mod.run, _parser=p)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    first = next((a for a in argv if not a.startswith("-")), None)
    parser = build_parser(first if first in COMMANDS else None)
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # the command's own usage, as ruff does, not the top-level one argparse would print
        (getattr(args, "_parser", None) or parser).error(f"unrecognized arguments: {' '.join(unknown)}")
    if not getattr(args, "_run", None):
        parser.print_help(sys.stderr)
        return EXIT_ERROR
    # What the commands that run user code or an LLM print is redacted (API keys, tokens). `check`
    # prints source (fixed files, diffs) that must stay byte-exact; `lsp` speaks JSON-RPC.
    streams = (sys.stdout, sys.stderr)
    if args.command in REDACTED_COMMANDS:
        sys.stdout, sys.stderr = RedactingStream(sys.stdout, chunk=1 << 16), RedactingStream(sys.stderr)
    # SIGTERM ends a run the way Ctrl-C does: the kernel's process tree is killed and the temporary
    # folder with the input arrays removed (the default action would leave both behind).
    on_term = None
    if args.command != "lsp" and threading.current_thread() is threading.main_thread():
        on_term = signal.signal(signal.SIGTERM, _terminated)
    try:
        return _run(args, redact)
    finally:
        if on_term is not None:
            signal.signal(signal.SIGTERM, on_term)
        for wrapped in (sys.stdout, sys.stderr):
            if isinstance(wrapped, RedactingStream):
                wrapped.flush()
        sys.stdout, sys.stderr = streams


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the program is so that every cleanup on the way out runs."""


def _terminated(signum, frame) -> None:
    raise Terminated()


def _run(args: argparse.Namespace, redact) -> int:
    try:
        return int(args._run(args))
    except KeyboardInterrupt as exc:
        print(f"nki-assist: {'terminated' if isinstance(exc, Terminated) else 'interrupted'}", file=sys.stderr)
        return EXIT_ERROR
    except UsageError as exc:
        print(neutralise(f"nki-assist {args.command}: error: {exc}"), file=sys.stderr)
        return EXIT_ERROR
    except Exception as exc:  # an internal error is reported, never a raw traceback
        from .infra.extras import MissingExtra

        if isinstance(exc, MissingExtra):  # a feature of an extra that is not installed: say which
            print(f"nki-assist {args.command}: error: {exc}", file=sys.stderr)
            return EXIT_ERROR
        print(neutralise(redact(f"nki-assist {args.command}: internal error: {type(exc).__name__}: {exc}")),
              file=sys.stderr)
        if os.environ.get("NKI_ASSIST_DEBUG"):
            raise
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
