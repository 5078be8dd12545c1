"""Captured CUDA outputs on disk: what `nki-assist golden` writes and what review/simulate read back.

A capture folder (the spec's `[golden] dir`) holds, per size, `<size>.inputs.npz` (the exact
inputs, by input name), `<size>.outputs.npz` (`arr_0`, `arr_1`, ... in the reference's output
order) and one `golden.json` record: the GPU, driver, CUDA version, compile flags, nki-assist
version, date, and per size the SHA-256 of every input. A size is used only when the inputs the spec
generates today hash the same; otherwise the capture is refused with the input that changed.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import numpy as np

from .errors import SpecError
from .inputs import generate
from .npz import load_npz

RECORD = "golden.json"
SCHEMA = "nki-assist/golden@1"
MAX_RECORD_BYTES = 1_000_000


def size_file(size: str, what: str) -> str:
    """`<size>.<what>.npz`, the size name made safe for a file name."""
    return f"{re.sub(r'[^A-Za-z0-9_.-]', '_', size)}.{what}.npz"


def array_hash(name: str, value: Any) -> str:
    """SHA-256 of one kernel argument: name, dtype, shape and bytes (arrays) or its JSON (scalars)."""
    h = hashlib.sha256(name.encode())
    if isinstance(value, np.ndarray):
        a = np.ascontiguousarray(value)
        h.update(f"|{a.dtype.name}|{list(a.shape)}|".encode())
        h.update(a.view(np.uint8).reshape(-1).data if a.size else b"")
    else:
        h.update(b"|value|" + json.dumps(value, sort_keys=True, default=str).encode())
    return h.hexdigest()


def input_hashes(names: list[str], args: list[Any]) -> dict[str, str]:
    return {n: array_hash(n, a) for n, a in zip(names, args)}


def _where(spec) -> str:
    return f"{spec.path}: golden.dir"


def read_record(spec) -> dict[str, Any]:
    """The capture record of the spec's `[golden] dir`; SpecError naming file and key otherwise."""
    path = spec.dir / spec.golden.dir / RECORD
    where = _where(spec)
    try:
        if path.stat().st_size > MAX_RECORD_BYTES:
            raise SpecError(f"{where}: {path} is over {MAX_RECORD_BYTES:,} bytes")
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SpecError(f"{where}: no {RECORD} in {spec.dir / spec.golden.dir} (run `nki-assist golden "
                        f"{spec.path}` to capture)") from None
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise SpecError(f"{where}: cannot read {path}: {type(exc).__name__}: {exc}") from None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA or not isinstance(doc.get("sizes"), dict):
        raise SpecError(f"{where}: {path} is not a capture record ({SCHEMA})")
    return doc


def capture_label(record: dict[str, Any]) -> str:
    """'captured on NVIDIA H200 (driver 550.54.15, CUDA 12.4)', from a record's `device`."""
    dev = record.get("device") or {}
    name = dev.get("name") or "an unnamed GPU"
    detail = ", ".join(p for p in (f"driver {dev['driver']}" if dev.get("driver") else "",
                                   f"CUDA {dev['cuda']}" if dev.get("cuda") else "") if p)
    return f"captured on {name}" + (f" ({detail})" if detail else "")


def captured(spec, size, limit_bytes: int | None = None, args: list[Any] | None = None
             ) -> tuple[list[np.ndarray], dict[str, Any]] | None:
    """(outputs, size entry + label) of `size` from the capture folder, or None when the capture has
    no such size. Refuses (SpecError) a capture whose inputs differ from the ones generated now."""
    record = read_record(spec)
    entry = record["sizes"].get(size.name)
    if entry is None:
        return None
    where = _where(spec)
    names = list(spec.inputs)
    if args is None:
        args = [s.value if s.is_value else generate(n, s, spec.shape_of(n, size)) for n, s in spec.inputs.items()]
    now = input_hashes(names, args)
    then = entry.get("inputs") or {}
    changed = [n for n in names if (then.get(n) or {}).get("sha256") != now[n]]
    extra = [n for n in then if n not in now]
    if changed or extra:
        what = "; ".join([f"input {n!r} differs (captured {str((then.get(n) or {}).get('sha256'))[:12]}, "
                          f"generated now {now[n][:12]})" for n in changed]
                         + [f"input {n!r} was captured but is no longer in [inputs]" for n in extra])
        raise SpecError(f"{where}: the capture of size {size.name!r} was made from other inputs than the spec "
                        f"generates now ({what}); the spec's inputs, shapes or sizes changed since the capture: "
                        f"run `nki-assist golden {spec.path} --size {size.name}` again")
    outs_meta = entry.get("outputs") or []
    members = [f"arr_{i}" for i in range(len(outs_meta))]
    path = spec.dir / spec.golden.dir / size_file(size.name, "outputs")
    npz = load_npz(path, where, limit_bytes, members=members)
    outputs = []
    for i, (m, meta) in enumerate(zip(members, outs_meta)):
        if m not in npz:
            raise SpecError(f"{where}: {path} has no array {m!r} (output {i} of the record)")
        want = tuple(meta.get("shape") or ())
        if tuple(npz[m].shape) != want:
            raise SpecError(f"{where}: {path}: output {i} has shape {list(npz[m].shape)}, the record says {list(want)}")
        outputs.append(npz[m])
    info = dict(entry, label=capture_label(record), device=record.get("device"))
    return outputs, info


LEGACY_LABEL = "captured ([golden] npz files, no capture record)"


def golden_for(spec, size, limit_bytes: int | None = None, args: list[Any] | None = None
               ) -> tuple[list[np.ndarray], dict[str, Any]] | None:
    """The captured outputs of `size` and what is known of the capture (`label`, per-output
    `run_to_run` spread), from either form of `[golden]`; None when nothing was captured for it."""
    g = spec.golden
    if not g:
        return None
    if g.dir is not None:
        return captured(spec, size, limit_bytes, args)
    if not g.outputs or (g.size or spec.sizes[0].name) != size.name:
        return None
    npz = load_npz(spec.dir / g.outputs, f"{spec.path}: golden.outputs", limit_bytes)
    keys = sorted(npz, key=lambda k: (not k.startswith("arr_"), int(k[4:]) if k[4:].isdigit() else 0, k))
    return [npz[k] for k in keys], {"label": LEGACY_LABEL}
