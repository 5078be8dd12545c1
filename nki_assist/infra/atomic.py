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
        os.fchmod(fd, _mode_for(path))  # mkstemp makes 0600; a report is the user's file like any other
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


def _umask() -> int:
    """The process umask, read without changing it where Linux says it (os.umask sets it to read it)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    old = os.umask(0o022)
    os.umask(old)
    return old


def _mode_for(path: Path) -> int:
    """The mode a plain `open(path, "w")` would give: the existing file's, else 0666 less the umask."""
    try:
        return os.stat(path).st_mode & 0o7777
    except OSError:
        return 0o666 & ~_umask()
