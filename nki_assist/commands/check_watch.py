"""`nki-assist check --watch`: check, then check again whenever a checked file changes (issue 44, case 9).

A polling loop (no new dependency): once a second the paths are walked as `check` walks them and each file's
size and modification time compared; a change runs the check again (unchanged files come from the cache).
Ctrl-C ends it with the last run's exit code.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Callable

POLL_S = 1.0


def snapshot(paths: list[str], options) -> dict[str, tuple[int, int]]:
    """path -> (mtime_ns, size) of every file `check` would read under `paths`."""
    # deferred: the walk loads with the engine
    from ..check import collect_files

    files, _ = collect_files(paths, options)
    out = {}
    for f in files:
        try:
            st = os.stat(f)
        except OSError:
            continue
        out[f] = (st.st_mtime_ns, st.st_size)
    return out


def watch(paths: list[str], options, once: Callable[[], int], *, poll_s: float = POLL_S,
          rounds: int | None = None, sleep: Callable[[float], None] = time.sleep) -> int:
    """Run `once`, then again after each change; `rounds` bounds the polls (tests), None polls until Ctrl-C."""
    code = once()
    seen = snapshot(paths, options)
    print("[watch] waiting for changes (Ctrl-C stops)", file=sys.stderr, flush=True)
    n = 0
    try:
        while rounds is None or n < rounds:
            n += 1
            sleep(poll_s)
            now = snapshot(paths, options)
            if now != seen:
                changed = sorted(p for p in set(now) | set(seen) if now.get(p) != seen.get(p))
                print(f"[watch] {len(changed)} file(s) changed ({', '.join(changed[:3])}"
                      f"{', ...' if len(changed) > 3 else ''}); checking again", file=sys.stderr, flush=True)
                seen = now
                code = once()
    except KeyboardInterrupt:
        pass
    return code
