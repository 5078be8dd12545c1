"""nki-assist language server: review hints while writing NKI and CUDA kernels.

Start it with `nki-assist lsp` (stdio) or `nki-assist lsp --tcp HOST:PORT` (debugging).
"""

from __future__ import annotations

from nki_assist import __version__

__all__ = ["__version__", "main"]


def main(tcp: tuple[str, int] | None = None) -> int:
    """Serve on stdio (default) or TCP until the client exits."""
    # deferred: the server answers `initialize` before the engine is imported (start-up time)
    import logging
    import os
    import sys
    import threading

    from .server import create_server

    logging.basicConfig(stream=sys.stderr, level=logging.WARNING,
                        format="nki-assist-lsp %(levelname)s %(name)s: %(message)s")
    # Checks run in worker threads; a 1 ms switch interval (default 5 ms) lets the event loop take
    # the GIL back quickly to answer hovers and code actions while they run.
    sys.setswitchinterval(0.001)
    server = create_server()
    if tcp is None:
        server.start_io()
    else:
        server.start_tcp(*tcp)
    # A check stuck in a worker thread must not keep the process alive after `exit`.
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (ValueError, OSError):  # already closed by the transport
            pass
    if any(t.name.startswith("nki-assist-") and t.is_alive() for t in threading.enumerate()):
        os._exit(0)
    return 0
