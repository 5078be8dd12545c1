"""Writing a file whole or not at all: a temporary file beside it, renamed over it."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_atomic(path, data: str | bytes, *, fsync: bool = True) -> None:
    """Write `path` whole or not at all: a full disk or an interruption leaves the previous file, never a
    truncated one, and a concurrent reader sees the old contents or the new. `fsync=False` for caches, where
    a lost entry after a crash only costs a re-check."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent if str(path.parent) else ".", prefix=f".{path.name[:16]}.",
                               suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data.encode("utf-8") if isinstance(data, str) else data)
            if fsync:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
