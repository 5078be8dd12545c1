"""Golden npz files read safely: headers first (plain numeric arrays only, no declared size over the
budget), then only the members the caller uses, each decompressed only after its declared size and
its size in the zip directory were checked. Every problem is a SpecError naming the spec key and the file.
"""

from __future__ import annotations

import math
import zipfile
from pathlib import Path

import numpy as np

from .errors import SpecError, human_bytes

# Element kinds a golden array may have: bool, ints, floats, complex, and raw 1-2 byte void (how
# np.save stores ml_dtypes' bfloat16 / fp8 arrays).
_NUMERIC_KINDS = "biufc"
_HEADER_SLACK = 1 << 16  # a .npy header is at most 64 KiB (format version 2)


def _check_member(info: zipfile.ZipInfo, path: Path, where: str) -> None:
    name = info.filename
    if info.flag_bits & 0x1:
        raise SpecError(f"{where}: {path}: member {name!r} is encrypted; save the arrays with numpy.savez")
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        raise SpecError(f"{where}: {path}: member {name!r} uses zip compression method {info.compress_type} "
                        "(only stored and deflate, what numpy.savez/savez_compressed write, are read)")


def _check_dtype(dtype: np.dtype, array: str, path: Path, where: str) -> None:
    if dtype.hasobject:
        raise SpecError(f"{where}: {path}: array {array!r} holds Python objects (a pickle); only plain "
                        "numeric arrays are accepted")
    if dtype.names is not None or dtype.subdtype is not None:
        raise SpecError(f"{where}: {path}: array {array!r} has a structured dtype ({dtype}); save one plain "
                        "numeric array per input or output")
    if dtype.kind not in _NUMERIC_KINDS and not (dtype.kind == "V" and dtype.itemsize in (1, 2)):
        raise SpecError(f"{where}: {path}: array {array!r} has dtype {dtype} ({'text' if dtype.kind in 'SU' else 'not numeric'}); "
                        "only numeric arrays are accepted")


def npz_headers(path: Path, where: str) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    """Member name -> (shape, dtype) of an .npz without loading any data; SpecError (naming
    `where`, e.g. "port.toml: golden.outputs") for a file that is not a plain-array npz."""
    out: dict[str, tuple[tuple[int, ...], np.dtype]] = {}
    try:
        with zipfile.ZipFile(path) as zf:
            for info in zf.infolist():
                if not info.filename.endswith(".npy"):
                    raise SpecError(f"{where}: {path}: member {info.filename!r} is not a .npy array")
                _check_member(info, path, where)
                with zf.open(info) as fh:  # reads (decompresses) the header only
                    version = np.lib.format.read_magic(fh)
                    read = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                            else np.lib.format.read_array_header_2_0)
                    shape, _, dtype = read(fh)
                _check_dtype(dtype, info.filename[:-4], path, where)
                out[info.filename[:-4]] = (tuple(int(d) for d in shape), dtype)
    except SpecError:
        raise
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError, RuntimeError) as exc:
        raise SpecError(f"{where}: cannot read {path}: {type(exc).__name__}: {exc}") from None
    return out


def load_npz(path: Path, where: str, limit_bytes: int | None = None,
             members: list[str] | None = None) -> dict[str, np.ndarray]:
    """The arrays `members` (default: all) of a checked npz (see `npz_headers`). Before any member is
    decompressed: the declared sizes of the members read must fit `limit_bytes`, and each member's
    uncompressed size in the zip directory must match its header (a small file cannot expand into
    gigabytes). Members not asked for are never decompressed."""
    headers = npz_headers(path, where)
    wanted = list(headers) if members is None else [m for m in members if m in headers]
    sizes = {m: math.prod(headers[m][0]) * headers[m][1].itemsize for m in wanted}
    total = sum(sizes.values())
    if limit_bytes is not None and total > limit_bytes:
        raise SpecError(f"{where}: {path} declares {human_bytes(total)} of arrays, more than the "
                        f"{human_bytes(limit_bytes)} memory budget")
    out: dict[str, np.ndarray] = {}
    try:
        with zipfile.ZipFile(path) as zf:
            for m in wanted:
                info = zf.getinfo(m + ".npy")
                if info.file_size > sizes[m] + _HEADER_SLACK:
                    raise SpecError(f"{where}: {path}: member {m!r} expands to {human_bytes(info.file_size)} but its "
                                    f"header declares {human_bytes(sizes[m])} of data")
                with zf.open(info) as fh:
                    arr = np.lib.format.read_array(fh, allow_pickle=False)
                shape, dtype = headers[m]
                if arr.shape != shape or arr.dtype != dtype:
                    raise SpecError(f"{where}: {path}: member {m!r} does not match its header")
                out[m] = arr
    except SpecError:
        raise
    except Exception as exc:  # truncated or corrupt member data
        raise SpecError(f"{where}: cannot read {path}: {type(exc).__name__}: {exc}") from None
    return out
