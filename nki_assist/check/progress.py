"""Progress on one long file (issue 44, case 8): a file that takes more than AFTER_S to check says so on stderr,
then every EVERY_S, with the phase it is in:

    nki-assist check: kernels/big.py (50,000 lines): running the rules, 6 s

Only when the CLI enabled it (stderr is a terminal, or --verbose); library callers and the language server print
nothing. A watcher thread prints; the check itself only names its phase.
"""

from __future__ import annotations

import sys
import threading
import time
from contextlib import contextmanager
from typing import Callable, Iterator

AFTER_S = 2.0
EVERY_S = 5.0
_ENABLED = [False]


def enable_progress(on: bool) -> None:
    _ENABLED[0] = bool(on)


@contextmanager
def long_file(path: str, lines: int) -> Iterator[Callable[[str], None]]:
    """Yield `say(phase)`; while the block runs past AFTER_S, the current phase is printed every EVERY_S."""
    phase = ["parsing"]

    def say(text: str) -> None:
        phase[0] = text

    if not _ENABLED[0]:
        yield say
        return
    stop = threading.Event()
    t0 = time.monotonic()

    def watch() -> None:
        if stop.wait(AFTER_S):
            return
        while True:
            print(f"nki-assist check: {path} ({lines:,} lines): {phase[0]}, {time.monotonic() - t0:.0f} s",
                  file=sys.stderr, flush=True)
            if stop.wait(EVERY_S):
                return

    thread = threading.Thread(target=watch, name="nki-assist-progress", daemon=True)
    thread.start()
    try:
        yield say
    finally:
        stop.set()
        thread.join()
