"""Give memory back to the operating system after documents close.

Closing a document drops every object the server kept for it (analysis, parse, diagnostics), but
CPython and glibc keep the freed pages for reuse: the resident size would not go down. A full
collection plus glibc's `malloc_trim` returns them (a no-op where there is no glibc).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
from functools import cache


@cache
def _libc():
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
    except OSError:
        return None
    return libc if libc is not None and hasattr(libc, "malloc_trim") else None


def release_memory() -> None:
    gc.collect()
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)
