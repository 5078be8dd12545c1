"""Reading a file to check: regular files only, size limits, binary sniffing and decoding."""

from __future__ import annotations

import os
import stat

from ..config import DEFAULT_MAX_FILE_BYTES
from .options import CheckOptions
from .results import FileResult

BINARY_SNIFF_BYTES = 8192


def decode(data: bytes) -> tuple[str, str | None]:
    """Text of a file's bytes and a note when it was not valid UTF-8 (decoded with U+FFFD)."""
    try:
        return data.decode("utf-8-sig"), None
    except UnicodeDecodeError as exc:
        start = exc.start + (3 if data.startswith(b"\xef\xbb\xbf") else 0)
        line = data.count(b"\n", 0, start) + 1
        return (data.decode("utf-8-sig", errors="replace"),
                f"not valid UTF-8 (first bad byte on line {line}, offset {start}); "
                "decoded with replacement characters")


class NotRegularFile(Exception):
    """A FIFO, device, socket or directory, or a file over the size limit: never read."""


def read_regular(path: str, max_bytes: int) -> bytes:
    """The bytes of a regular file of at most `max_bytes`. The file is opened non-blocking and
    checked with fstat on the open descriptor, so a FIFO (or a file swapped for one) never blocks."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = ("a FIFO" if stat.S_ISFIFO(st.st_mode) else "a device" if stat.S_ISCHR(st.st_mode) or
                    stat.S_ISBLK(st.st_mode) else "a socket" if stat.S_ISSOCK(st.st_mode) else "a directory"
                    if stat.S_ISDIR(st.st_mode) else "not a regular file")
            raise NotRegularFile(f"{kind}, not a regular file")
        if st.st_size > max_bytes:
            raise NotRegularFile(f"larger than max-file-bytes ({st.st_size:,} > {max_bytes:,} bytes)")
        with os.fdopen(fd, "rb", closefd=True) as fh:
            fd = -1
            return fh.read(max_bytes + 1)
    finally:
        if fd >= 0:
            os.close(fd)


def _read(path: str, language: str, options: CheckOptions) -> bytes | FileResult:
    """The file's bytes, or the result that says why it cannot be checked."""
    try:
        data = read_regular(path, options.max_file_bytes)
    except NotRegularFile as exc:
        reason = f"{exc}; not checked"
        too_big = str(exc).startswith("larger than")
        return FileResult(path, language, "skipped", reason, notes=[f"{path}: {reason}"],
                          unchecked=_size_limit_is_default(options) if too_big else True)
    except OSError as exc:
        return FileResult(path, language, "error", f"cannot read: {exc.strerror or exc}")
    if b"\x00" in data[:BINARY_SNIFF_BYTES]:
        reason = "binary file (NUL bytes); not checked"
        return FileResult(path, language, "skipped", reason, notes=[f"{path}: {reason}"], unchecked=True)
    return data


def _size_limit_is_default(options: CheckOptions) -> bool:
    """A file over the default limit was not checked by accident; over a limit the user chose, on purpose."""
    return options.max_file_bytes == DEFAULT_MAX_FILE_BYTES
