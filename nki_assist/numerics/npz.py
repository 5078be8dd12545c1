"""Golden npz files read safely: headers first (no pickled objects, no declared size over the
budget), data only after. Every problem is a SpecError naming the spec key and the file."""

from __future__ import annotations

import math
import zipfile
from pathlib import Path

import numpy as np


from .errors import SpecError, human_bytes


def npz_headers(path: Path, where: str) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    """Member name -> (shape, dtype) of an .npz without loading any data; SpecError (naming
    `where`, e.g. "port.toml: golden.outputs") for a file that is not a plain-array npz."""
    out: dict[str, tuple[tuple[int, ...], np.dtype]] = {}
    try:
        with zipfile.ZipFile(path) as zf:
            for info in zf.infolist():
                if not info.filename.endswith(".npy"):
                    raise SpecError(f"{where}: {path}: member {info.filename!r} is not a .npy array")
                with zf.open(info) as fh:
                    version = np.lib.format.read_magic(fh)
                    read = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                            else np.lib.format.read_array_header_2_0)
                    shape, _, dtype = read(fh)
                if dtype.hasobject:
                    raise SpecError(f"{where}: {path}: array {info.filename[:-4]!r} holds Python objects "
                                    "(a pickle); only plain numeric arrays are accepted")
                out[info.filename[:-4]] = (tuple(int(d) for d in shape), dtype)
    except SpecError:
        raise
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        raise SpecError(f"{where}: cannot read {path}: {type(exc).__name__}: {exc}") from None
    return out


def load_npz(path: Path, where: str, limit_bytes: int | None = None) -> dict[str, np.ndarray]:
    """All arrays of a checked npz (see `npz_headers`), refusing declared sizes over `limit_bytes`."""

    headers = npz_headers(path, where)
    total = sum(math.prod(shape) * dt.itemsize for shape, dt in headers.values())
    if limit_bytes is not None and total > limit_bytes:
        raise SpecError(f"{where}: {path} declares {human_bytes(total)} of arrays, more than the "
                        f"{human_bytes(limit_bytes)} memory budget")
    try:
        with np.load(path, allow_pickle=False) as npz:
            return {name: npz[name] for name in headers}
    except Exception as exc:  # truncated or corrupt member data
        raise SpecError(f"{where}: cannot read {path}: {type(exc).__name__}: {exc}") from None
