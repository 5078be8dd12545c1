"""Reading a file to check: regular files only, size limits, binary sniffing and decoding."""

from __future__ import annotations

import ast
import codecs
import io
import os
import re
import stat
import tokenize
from typing import NamedTuple

from ..config import DEFAULT_MAX_FILE_BYTES
from .options import CheckOptions
from .results import FileResult

BINARY_SNIFF_BYTES = 8192


class Decoded(NamedTuple):
    text: str
    note: str | None  # how the text was obtained when it is not the file's plain decoding
    error: tuple[int, int, str] | None  # (line, column, message) where CPython refuses the file's bytes
    encoding: str = "utf-8"  # the codec CPython uses (only UTF-8 files are rewritten by --fix)


_COOKIE = re.compile(rb"^[ \t\f]*#.*?coding[:=]", re.MULTILINE)


def decode_source(data: bytes) -> Decoded:
    """The text CPython reads from a file's bytes (PEP 263: a BOM, a `coding` cookie on line 1 or 2, else UTF-8),
    and, when CPython cannot decode them (an unknown or non-text codec, a BOM with another cookie, bytes invalid
    in the encoding), its error: the file then cannot be imported (NKI001) and is read as UTF-8 with U+FFFD."""
    head = data[:data.find(b"\n", data.find(b"\n") + 1) + 1 or len(data)]
    encoding = "utf-8-sig"
    if _COOKIE.search(head[3:] if head.startswith(codecs.BOM_UTF8) else head):
        try:
            encoding, _ = tokenize.detect_encoding(io.BytesIO(head).readline)
        except SyntaxError:
            return _refused(data)
    try:
        return Decoded(data.decode(encoding), None, None, encoding)
    except UnicodeDecodeError as exc:
        if encoding.replace("_", "-").lower() not in ("utf-8", "utf8", "utf-8-sig"):
            return _refused(data)
        start = exc.start + (3 if data.startswith(codecs.BOM_UTF8) else 0)
        line = data.count(b"\n", 0, start) + 1
        return _refused(data, f"not valid UTF-8 (first bad byte on line {line}, offset {start}); decoded with "
                              "replacement characters")
    except LookupError:  # rot_13 and other codecs that are not text encodings
        return _refused(data)


def _refused(data: bytes, note: str | None = None) -> Decoded:
    try:
        compile(data, "<file>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
        err = (1, 1, "cannot be decoded")  # not reached: CPython refuses what tokenize refuses
    except SyntaxError as exc:
        err = (max(exc.lineno or 1, 1), max(exc.offset or 1, 1), exc.msg or "cannot be decoded")
    except (ValueError, RecursionError, MemoryError) as exc:
        err = (1, 1, str(exc) or type(exc).__name__)
    note = note or (f"Python cannot decode this file ({err[2]}, line {err[0]}); read as UTF-8 with replacement "
                    "characters")
    return Decoded(data.decode("utf-8-sig", errors="replace"), note, err, "utf-8")


def decode(data: bytes) -> tuple[str, str | None]:
    """Text of a file's bytes as CPython decodes it, and a note when CPython cannot (decode_source)."""
    d = decode_source(data)
    return d.text, d.note


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
