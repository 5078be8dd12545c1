"""`nki-assist lsp`: the language server (stdio by default, `--tcp HOST:PORT` for debugging)."""

from __future__ import annotations

import argparse

from .exits import UsageError

DESCRIPTION = ("Run the nki-assist language server: diagnostics, hover, code lens, quick fixes and the "
               "port-review command for editors. Speaks LSP on stdio unless --tcp is given.")


def _host_port(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {value!r}")
    return host or "127.0.0.1", int(port)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--stdio", action="store_true", help="speak LSP on stdin/stdout (the default)")
    p.add_argument("--tcp", metavar="HOST:PORT", type=_host_port, default=None,
                   help="listen on a TCP socket instead of stdio (for debugging)")


def _reexec_with_system_malloc() -> None:
    """A long-running server should give memory back when documents close. CPython's small-object
    allocator keeps an arena while any object in it lives, so after closing 50 documents most of
    their memory stayed resident; with the system allocator, `malloc_trim` returns it (measured in
    docs/lsp.md). PYTHONMALLOC only works at start-up, hence one exec when launched from the
    command line (never inside another program; NKI_ASSIST_LSP_PYMALLOC=1 keeps pymalloc)."""
    import os
    import sys

    if (os.name != "posix" or "PYTHONMALLOC" in os.environ or os.environ.get("NKI_ASSIST_LSP_PYMALLOC")
            or sys.argv[1:2] != ["lsp"]):
        return
    os.environ["PYTHONMALLOC"] = "malloc"
    try:
        os.execv(sys.executable, [sys.executable, "-m", "nki_assist", *sys.argv[1:]])
    except OSError:
        pass  # keep serving with pymalloc


def run(args: argparse.Namespace) -> int:
    _reexec_with_system_malloc()
    try:
        # deferred: a command imports the engine only when it runs (CLI start-up time)
        from lsp_server import main
    except ImportError as exc:

        raise UsageError(f"the language server is not installed ({exc})") from None
    return main(tcp=args.tcp)
