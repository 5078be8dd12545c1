"""The child's result on the way back: a JSON document plus an npz of arrays, never a pickle.

The worker that writes the result runs user code in the same process, so anything it writes may be
forged. The parent therefore only *parses* what it reads: `json` for the document (a tagged tree of
plain values), `numpy.load(allow_pickle=False)` for uncompressed members of plain numeric dtypes, and
objects are rebuilt only for an allow-list of our own data classes, each validated by pydantic from
its type annotations. Nothing read can name a function, a module or a class outside that list.

Encoding (`encode`, run in the child) of a value:
- None, bool, int, float, str: themselves; list: a JSON array; dict with str keys: a JSON object
- {"$": "tuple", "items": [...]}, {"$": "dict", "items": [[k, v], ...]} (other keys, or a "$" key)
- {"$": "array", "i": N, "dtype": NAME, "scalar": bool}: member aN of the npz (ml_dtypes stored as raw uints)
- {"$": "complex", "re": x, "im": y}, {"$": "bytes", "hex": ...}
- {"$": "obj", "type": NAME, "fields": {...}}: a dataclass / pydantic model of `ALLOWED`
- {"$": "opaque", "type": NAME}: anything else (decoded as an `Opaque` that names the type)
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import json
import threading
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

FORMAT = "nki-assist-result/1"
MAX_DEPTH = 200  # nesting of the decoded tree (a forged document may nest deeper than Python's stack)
NATIVE_KINDS = "biufc"


class WireError(ValueError):
    """The result could not be encoded (child) or is not a valid result document (parent)."""


@dataclasses.dataclass(frozen=True)
class Opaque:
    """A value of a type that cannot travel back (a user object): only its type's name does."""

    type_name: str


def _qualname(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


# --- child side -------------------------------------------------------------------------------------


class _Encoder:
    def __init__(self) -> None:
        self.arrays: list[np.ndarray] = []

    def array(self, arr: np.ndarray, scalar: bool) -> dict:
        dt = arr.dtype
        try:
            native = dt.kind in NATIVE_KINDS and dt.fields is None and np.dtype(dt.str) == dt
        except TypeError:  # ml_dtypes' float8_e5m2 says "<f1", which numpy cannot parse back
            native = False
        if native:
            name, raw = dt.str, arr  # byte order included: "<f4"
        elif dt.fields is None and dt.itemsize in (1, 2, 4, 8) and dt.name.isidentifier() and not dt.hasobject:
            name, raw = dt.name, arr.view(f"u{dt.itemsize}")  # ml_dtypes (bfloat16, float8_*): raw bits
        else:
            raise WireError(f"array of dtype {dt} cannot be returned (numeric dtypes only)")
        self.arrays.append(raw)
        return {"$": "array", "i": len(self.arrays) - 1, "dtype": name, "scalar": scalar}

    def trace_row(self, e: Any, d: int) -> list:
        """A TraceEntry as one positional row (traces run to millions of entries: no per-field tags)."""
        def op(o):
            return None if o is None else [list(o.shape), o.dtype, o.buffer, o.partitions, o.name]

        return [e.seq, e.engine, e.op, e.line, e.file, op(e.dst), [op(s) for s in e.srcs], e.partitions,
                e.free_elems, e.bytes, e.transfers, e.hbm_tensor, None if e.hbm_box is None else
                [list(b) for b in e.hbm_box], e.direction, e.loop_depth, self.node(e.extra, d) if e.extra else {}]

    def node(self, v: Any, depth: int = 0) -> Any:
        if depth > MAX_DEPTH:
            raise WireError(f"result nests deeper than {MAX_DEPTH} levels")
        d = depth + 1
        if v is None or type(v) in (bool, int, float, str):
            return v
        if isinstance(v, np.ndarray):
            return self.array(v, False)
        if isinstance(v, np.generic):  # before float: np.float64 is a float subclass
            return self.array(np.asarray(v), True)
        if isinstance(v, enum.Enum):
            return self.node(v.value, d)
        for base in (bool, int, float, str):  # other subclasses travel as the plain value
            if isinstance(v, base):
                return base(v)
        if isinstance(v, complex):
            return {"$": "complex", "re": v.real, "im": v.imag}
        if isinstance(v, (bytes, bytearray)):
            return {"$": "bytes", "hex": bytes(v).hex()}
        if isinstance(v, list):
            if v and _qualname(type(v[0])) == TRACE and all(type(x) is type(v[0]) for x in v):
                return {"$": "trace", "rows": [self.trace_row(e, d) for e in v]}
            return [self.node(x, d) for x in v]
        if isinstance(v, (tuple, set, frozenset)):
            return {"$": "tuple", "items": [self.node(x, d) for x in v]}
        if isinstance(v, dict):
            if all(type(k) is str for k in v) and "$" not in v:
                return {k: self.node(x, d) for k, x in v.items()}
            return {"$": "dict", "items": [[self.node(k, d), self.node(x, d)] for k, x in v.items()]}
        cls = type(v)
        if dataclasses.is_dataclass(v) and _qualname(cls) in ALLOWED_NAMES:
            return {"$": "obj", "type": _qualname(cls),
                    "fields": {f.name: self.node(getattr(v, f.name), d) for f in dataclasses.fields(v)}}
        if hasattr(cls, "model_fields") and _qualname(cls) in ALLOWED_NAMES:  # pydantic model
            return {"$": "obj", "type": _qualname(cls),
                    "fields": {n: self.node(getattr(v, n), d) for n in cls.model_fields}}
        if hasattr(v, "__array__"):  # torch / jax / array-likes: their values, as numpy sees them
            try:
                arr = np.asarray(v)
            except Exception:
                arr = None
            if arr is not None and arr.dtype != object:
                return self.array(arr, False)
        return {"$": "opaque", "type": cls.__name__[:100]}


def encode(payload: dict[str, Any]) -> tuple[str, list[np.ndarray]]:
    """The JSON document and the arrays it refers to (raises WireError, RecursionError, MemoryError)."""
    enc = _Encoder()
    doc = {k: v for k, v in payload.items() if k != "value"}
    doc["format"] = FORMAT
    doc["value"] = enc.node(payload.get("value"))
    return json.dumps(doc), enc.arrays


def write(jobdir: Path, payload: dict[str, Any]) -> None:
    """result.npz then result.json (the document last: it is what the parent looks for)."""
    text, arrays = encode(payload)
    tmp = jobdir / "result.tmp.npz"
    with open(tmp, "wb") as fh:
        np.savez(fh, **{f"a{i}": a for i, a in enumerate(arrays)})
    tmp.replace(jobdir / "result.npz")
    (jobdir / "result.tmp.json").write_text(text)
    (jobdir / "result.tmp.json").replace(jobdir / "result.json")


# --- parent side ------------------------------------------------------------------------------------


def _allowed() -> dict[str, type]:
    # deferred: only the parent decodes; the child encodes by name without importing the contracts
    from ..contracts import provenance, runs
    from ..findings import Edit, Finding, Fix, RelatedLocation

    classes = [runs.RunResult, runs.TraceEntry, runs.Operand, runs.ResourcePeaks, runs.ValueRange,
               provenance.Provenance,
               provenance.OutputProvenance, provenance.StoreRecord, provenance.Overlap, provenance.Fault, Finding,
               RelatedLocation, Edit, Fix]
    return {_qualname(c): c for c in classes}


# Names only (the child must not import the contracts to encode): checked against _allowed() in tests.
ALLOWED_NAMES = frozenset({
    "nki_assist.contracts.runs:RunResult", "nki_assist.contracts.runs:TraceEntry",
    "nki_assist.contracts.runs:Operand", "nki_assist.contracts.runs:ResourcePeaks",
    "nki_assist.contracts.runs:ValueRange",
    "nki_assist.contracts.provenance:Provenance", "nki_assist.contracts.provenance:OutputProvenance",
    "nki_assist.contracts.provenance:StoreRecord", "nki_assist.contracts.provenance:Overlap",
    "nki_assist.contracts.provenance:Fault", "nki_assist.findings:Finding", "nki_assist.findings:RelatedLocation",
    "nki_assist.findings:Edit", "nki_assist.findings:Fix",
})

_ADAPTERS: dict[str, Any] = {}
_ADAPTERS_LOCK = threading.RLock()
TRACE = "nki_assist.contracts.runs:TraceEntry"


def prepare() -> None:
    """Build every validator now (the review does it while its child runs, off the critical path)."""
    for name in sorted(ALLOWED_NAMES):
        _adapter(name)


def _adapter(name: str):
    """A pydantic validator for an allow-listed class (arrays are checked as numpy arrays)."""
    with _ADAPTERS_LOCK:  # the review's thread that reads a result and its main thread may both build one
        return _build_adapter(name)


def _build_adapter(name: str):
    if name not in _ADAPTERS:
        from pydantic import ConfigDict, TypeAdapter  # deferred: parent side only

        cls = _allowed().get(name)
        if cls is None:
            raise WireError(f"type {name!r} is not allowed in a result")
        if dataclasses.is_dataclass(cls):
            for c in _allowed().values():  # stdlib dataclasses carry their pydantic config as a class attribute
                if dataclasses.is_dataclass(c) and "__pydantic_config__" not in vars(c):
                    c.__pydantic_config__ = ConfigDict(arbitrary_types_allowed=True, strict=False)
        _ADAPTERS[name] = TypeAdapter(cls)
    return _ADAPTERS[name]


def _dtype(name: Any) -> tuple[np.dtype, bool]:
    """(dtype, stored as raw uints) for a dtype name from the document; only numeric dtypes."""
    if not isinstance(name, str) or len(name) > 40:
        raise WireError("array dtype is not a name")
    if name[:1] in "<>|=":
        try:
            dt = np.dtype(name)
        except TypeError as exc:
            raise WireError(f"unknown array dtype {name!r}") from exc
        if dt.kind not in NATIVE_KINDS or dt.fields is not None or dt.subdtype is not None:
            raise WireError(f"array dtype {name!r} is not numeric")
        return dt, False
    import ml_dtypes  # deferred: parent side only, and only for an ml_dtypes array

    dt = getattr(ml_dtypes, name, None) if name.isidentifier() and not name.startswith("_") else None
    try:
        dt = np.dtype(dt) if isinstance(dt, type) else None
    except TypeError:
        dt = None
    if dt is None or dt.kind != "V" and dt.kind not in NATIVE_KINDS:
        raise WireError(f"unknown array dtype {name!r}")
    return dt, True


class _Decoder:
    def __init__(self, npz_path: Path, max_bytes: int):
        self.path, self.max_bytes = npz_path, max_bytes
        self.members: dict[str, zipfile.ZipInfo] | None = None
        self.used: set[int] = set()

    def _member(self, i: int) -> np.ndarray:
        if self.members is None:
            try:
                with zipfile.ZipFile(self.path) as zf:
                    self.members = {z.filename: z for z in zf.infolist()}
            except (OSError, zipfile.BadZipFile) as exc:
                raise WireError(f"result arrays unreadable: {exc}") from exc
            total = sum(z.file_size for z in self.members.values())
            if total > self.max_bytes:
                raise WireError(f"result arrays take {total:,} bytes, over the {self.max_bytes:,}-byte limit")
        info = self.members.get(f"a{i}.npy")
        if info is None or info.compress_type != zipfile.ZIP_STORED:
            raise WireError(f"result array {i} is missing or compressed")
        fmt = np.lib.format
        try:
            with zipfile.ZipFile(self.path) as zf, zf.open(info) as fh:
                version = fmt.read_magic(fh)
                header = {(1, 0): fmt.read_array_header_1_0, (2, 0): fmt.read_array_header_2_0}.get(version)
                if header is None:
                    raise WireError(f"result array {i} has npy format {version}")
                shape, fortran, dtype = header(fh)  # a parsed literal, never evaluated code
                if dtype.hasobject or dtype.fields is not None or dtype.kind not in NATIVE_KINDS:
                    raise WireError(f"result array {i} has dtype {dtype}")
                nbytes = int(np.prod(shape, dtype=object)) * dtype.itemsize
                if nbytes > info.file_size:  # checked before allocating: the header may lie
                    raise WireError(f"result array {i} declares {nbytes:,} bytes, its member holds less")
                data = bytearray(fh.read(nbytes))
        except WireError:
            raise
        except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
            raise WireError(f"result array {i} unreadable: {exc}") from exc
        if len(data) != nbytes:
            raise WireError(f"result array {i} is truncated")
        return np.frombuffer(data, dtype=dtype).reshape(shape, order="F" if fortran else "C")

    def array(self, node: dict) -> Any:
        i = node.get("i")
        if type(i) is not int or i < 0 or i in self.used:
            raise WireError("bad array reference")
        self.used.add(i)
        dt, raw = _dtype(node.get("dtype"))
        arr = self._member(i)
        if arr.dtype.fields is not None or arr.dtype.kind not in NATIVE_KINDS:
            raise WireError(f"result array {i} has dtype {arr.dtype}")
        if raw:
            if arr.dtype.kind != "u" or arr.dtype.itemsize != dt.itemsize:
                raise WireError(f"result array {i} does not hold {dt.name} bits")
            arr = arr.view(dt)
        elif arr.dtype != dt:
            raise WireError(f"result array {i} is {arr.dtype}, the document says {dt}")
        if node.get("scalar") is True:
            if arr.ndim:
                raise WireError(f"result scalar {i} is not 0-d")
            return arr[()]
        return arr

    def trace(self, rows: list, depth: int) -> list:
        """TraceEntry rows: the whole list validated by pydantic in one call, then built directly."""
        from pydantic import ValidationError  # deferred: parent side only

        from ..contracts.runs import Operand, TraceEntry  # deferred: parent side only

        try:
            rows = _trace_rows().validate_python(rows)
        except ValidationError as exc:
            raise WireError(f"invalid trace: {_first(exc)}") from exc

        def op(o):
            return None if o is None else Operand(*o)

        return [TraceEntry(r[0], r[1], r[2], r[3], r[4], op(r[5]), [op(x) for x in r[6]], r[7], r[8], r[9], r[10],
                           r[11], r[12], r[13], r[14], self.node(r[15], depth) if r[15] else {}) for r in rows]

    def node(self, v: Any, depth: int = 0, plain: bool = False) -> Any:
        if depth > MAX_DEPTH:
            raise WireError(f"result nests deeper than {MAX_DEPTH} levels")
        d = depth + 1
        if v is None or type(v) in (bool, int, float, str):
            return v
        if type(v) is list:
            return [self.node(x, d, plain) for x in v]
        if type(v) is not dict:
            raise WireError(f"unexpected JSON value {type(v).__name__}")
        tag = v.get("$")
        if tag is None:
            return {k: self.node(x, d, plain) for k, x in v.items()}
        if tag == "tuple" and type(v.get("items")) is list:
            return tuple(self.node(x, d, plain) for x in v["items"])
        if tag == "dict" and type(v.get("items")) is list:
            out = {}
            for pair in v["items"]:
                if type(pair) is not list or len(pair) != 2:
                    raise WireError("bad dict item")
                key = self.node(pair[0], d, plain)
                try:
                    out[key] = self.node(pair[1], d, plain)
                except TypeError as exc:  # an unhashable key (a list)
                    raise WireError(f"bad dict key: {exc}") from exc
            return out
        if tag == "array":
            return self.array(v)
        if tag == "trace" and type(v.get("rows")) is list:
            return self.trace(v["rows"], d)
        if tag == "complex" and all(type(v.get(k)) in (int, float) for k in ("re", "im")):
            return complex(v["re"], v["im"])
        if tag == "bytes" and type(v.get("hex")) is str:
            try:
                return bytes.fromhex(v["hex"])
            except ValueError as exc:
                raise WireError("bad bytes") from exc
        if tag == "opaque" and type(v.get("type")) is str:
            return Opaque(v["type"][:100])
        if tag == "obj" and type(v.get("type")) is str and type(v.get("fields")) is dict:
            if v["type"] not in ALLOWED_NAMES:
                raise WireError(f"type {v['type'][:100]!r} is not allowed in a result")
            fields = {k: self.node(x, d, True) for k, x in v["fields"].items()}
            if plain:  # inside an allow-listed object: its validator builds this one from the dict
                return fields
            from pydantic import ValidationError  # deferred: parent side only

            try:
                return _adapter(v["type"]).validate_python(fields)
            except ValidationError as exc:
                raise WireError(f"invalid {v['type'].rsplit(':', 1)[-1]}: {_first(exc)}") from exc
        raise WireError(f"unknown node {str(tag)[:40]!r}")


@functools.cache
def _trace_rows():
    """The schema of a trace row, from TraceEntry's and Operand's annotations."""
    from typing import Literal, Optional, get_args

    from pydantic import TypeAdapter  # deferred: parent side only

    from ..contracts import runs  # deferred: parent side only

    Op = Optional[tuple[tuple[int, ...], str, Literal[get_args(runs.Buffer)], int, Optional[str]]]  # noqa: F821
    Row = tuple[int, Literal[get_args(runs.Engine)], str, Optional[int], Optional[str], Op, list[Op], int, int, int,
                int, Optional[str], Optional[tuple[tuple[int, int], ...]], Optional[Literal["load", "store", "copy"]],
                int, Any]
    return TypeAdapter(list[Row])


@functools.cache
def _doc_model():
    """The envelope of a result document; `value` is decoded by _Decoder."""
    from pydantic import BaseModel, ConfigDict, Field  # deferred: parent side only

    class Doc(BaseModel):
        model_config = ConfigDict(extra="forbid", strict=True)
        format: str = Field(pattern=f"^{FORMAT}$")
        status: str = Field(pattern="^(ok|error|out-of-memory)$")
        value: Any = None
        error: str | None = None
        line: int | None = Field(default=None, ge=1)
        traceback: str = ""
        memory: bool = False
        nproc: bool = False  # the process limit was full when the task failed

    return Doc


def _first(exc) -> str:
    """One line per pydantic error (its text spans several lines with a URL)."""
    errs = exc.errors()[:3]
    return "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in errs)[:300]


def read(jobdir: Path, max_bytes: int) -> dict[str, Any]:
    """The worker's payload (status, value, error, line, traceback, memory), validated; WireError
    when the files are missing, too large or not a valid result."""
    from pydantic import ValidationError  # deferred: parent side only

    Doc = _doc_model()
    path = jobdir / "result.json"
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise WireError(f"result document unreadable: {exc}") from exc
    if size > max_bytes:
        raise WireError(f"result document takes {size:,} bytes, over the {max_bytes:,}-byte limit")
    try:
        raw = json.loads(path.read_bytes())
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise WireError(f"result document unreadable: {type(exc).__name__}: {str(exc)[:200]}") from exc
    try:
        doc = Doc.model_validate(raw)
    except ValidationError as exc:
        raise WireError(f"invalid result document: {_first(exc)}") from exc
    payload = {name: getattr(doc, name) for name in Doc.model_fields}  # no copy of the value tree
    try:
        payload["value"] = _Decoder(jobdir / "result.npz", max_bytes).node(doc.value)
    except RecursionError as exc:
        raise WireError("result nests too deeply") from exc
    return payload
