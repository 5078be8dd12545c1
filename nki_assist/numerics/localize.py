"""Name the statement behind a numerics failure, from the run's provenance (RunResult.provenance).

- NaN/Inf in an output: the sanitizer's first fault whose values reach that output (the store that last
  wrote the first non-finite element carries it), e.g. the `exp` that overflowed, not the store or `def`.
- A mismatch: the store that last wrote the first element differing from the reference, with its loop
  iteration, and (when a CUDA kernel is given) the CUDA statement storing the same output.

`Located` is what attribution puts on a finding: a line when provenance has one, the evidence behind it,
and related locations (the kernel-level location the finding used to cite stays one of them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..contracts.provenance import Fault, StoreRecord, iteration_text
from ..contracts.runs import RunResult
from ..findings import RelatedLocation

from ..parse.cuda import parse_cuda
from ..rules.migration.pair import cuda_outputs, pick_cuda_kernel


@dataclass
class Located:
    line: int | None = None  # the responsible statement (None: provenance could not name one)
    evidence: dict[str, Any] = field(default_factory=dict)
    related: list[RelatedLocation] = field(default_factory=list)


def first_nonfinite(actual: np.ndarray) -> tuple[int, ...] | None:
    a = np.asarray(actual)
    if a.dtype.kind not in "fV" or not a.size:
        return None
    bad = ~np.isfinite(a.astype(np.float64))
    if not bad.any():
        return None
    return tuple(int(i) for i in np.unravel_index(int(np.flatnonzero(bad.ravel())[0]), a.shape))


def first_mismatch(actual: np.ndarray, expected: np.ndarray, rtol: float, atol: float) -> tuple[int, ...] | None:
    """First element (C order) outside atol + rtol * |expected| (NaN where a number was expected counts)."""
    a = np.asarray(actual).astype(np.float64)
    e = np.asarray(expected).astype(np.float64)
    if a.shape != e.shape or not a.size:
        return None
    with np.errstate(invalid="ignore", over="ignore"):
        ok = (np.abs(a - e) <= atol + rtol * np.abs(e)) | (np.isnan(a) & np.isnan(e)) | (np.isinf(a) & (a == e))
    if ok.all():
        return None
    return tuple(int(i) for i in np.unravel_index(int(np.flatnonzero(~ok.ravel())[0]), a.shape))


def _output(run: RunResult | None, i: int):
    prov = run.provenance if run is not None else None
    if prov is None or i >= len(prov.outputs):
        return None, None
    return prov, prov.outputs[i]


def fault_reaching(run: RunResult | None, i: int) -> tuple[Fault, StoreRecord | None] | None:
    """The first fault whose NaN/Inf reach output `i`: via the store of its first non-finite element, else
    the first store into that output that carried a fault."""
    prov, out = _output(run, i)
    if out is None or i >= len(run.outputs):
        return None
    idx = first_nonfinite(run.outputs[i])
    rec = out.writer_of(idx) if idx is not None else None
    f = prov.fault_of(rec)
    if f is None:
        rec = next((r for r in out.records if r.fault is not None), None)
        f = prov.fault_of(rec)
    return (f, rec) if f is not None else None


def _store_text(rec: StoreRecord) -> str:
    it = iteration_text(rec.iteration)
    return f"line {rec.line}" + (f" ({it})" if it else "")


def nonfinite_location(runs: list[RunResult | None], nki_path: str) -> Located:
    """Where the NaN/Inf of the first output holding them were first produced. Without a fault, says
    whether the first non-finite element is one no store ever wrote (`nonfinite_never_written`)."""
    for run in runs:
        if run is None or run.status != "ok":
            continue
        for i in range(len(run.outputs)):
            hit = fault_reaching(run, i)
            if hit is None:
                _, out = _output(run, i)
                idx = first_nonfinite(run.outputs[i])
                if out is not None and idx is not None and not out.truncated and out.writer_of(idx) is None:
                    return Located(None, {"nonfinite_never_written": True, "first_nonfinite_index": list(idx)})
                continue
            f, rec = hit
            ev: dict[str, Any] = {"first_fault": f.to_json(), "first_fault_text": f.describe()}
            rel = []
            if rec is not None and rec.line and rec.line != f.line:
                ev["stored_at"] = {"line": rec.line, "iteration": dict(rec.iteration)}
                rel.append(RelatedLocation(file=nki_path, line=rec.line, message="store that writes the values out"))
            return Located(f.line, ev, rel)
    return Located()


def unwritten_anchor(located: Located, prior, nki_path: str):
    """The simulator's never-written-output finding (SIM112), when the NaN are elements no store wrote."""
    if not located.evidence.get("nonfinite_never_written"):
        return None
    name = nki_path.split("/")[-1]
    return next((f for f in prior if f.rule == "SIM112" and f.line and f.file
                 and (f.file == nki_path or f.file.endswith(name))), None)


def mismatch_location(run: RunResult | None, expected: list[np.ndarray] | None, rtol: float, atol: float,
                      nki_path: str, cuda_store: tuple[str, int] | None = None) -> Located:
    """The store that last wrote the first element differing from the reference."""
    if run is None or run.status != "ok" or not expected:
        return Located()
    for i, (act, exp) in enumerate(zip(run.outputs, expected)):
        idx = first_mismatch(act, exp, rtol, atol)
        if idx is None:
            continue
        _, out = _output(run, i)
        rec = out.writer_of(idx) if out is not None else None
        ev: dict[str, Any] = {"first_mismatch_index": list(idx), "first_mismatch_output": i,
                              "first_mismatch_actual": _num(act[idx]), "first_mismatch_expected": _num(exp[idx])}
        rel = []
        if cuda_store is not None:
            ev["cuda_store_line"] = cuda_store[1]
            rel.append(RelatedLocation(file=cuda_store[0], line=cuda_store[1],
                                       message="the CUDA statement that stores the same output"))
        if rec is None or rec.line is None:
            return Located(None, ev, rel)
        ev["producing_store"] = {"line": rec.line, "iteration": dict(rec.iteration),
                                 "region": [list(b) for b in rec.box]}
        ev["producing_store_text"] = f"{_store_text(rec)} wrote element {list(idx)}"
        return Located(rec.line, ev, rel)
    return Located()


def _num(x) -> float | None:
    v = float(np.asarray(x, dtype=np.float64))
    return v if np.isfinite(v) else None


def cuda_store_line(cuda_path: Path | None, display: str | None, kernel: str | None) -> tuple[str, int] | None:
    """(file, line) of the CUDA kernel's last store to its (first) output pointer; None without CUDA."""
    if cuda_path is None or display is None:
        return None

    try:
        cf = parse_cuda(cuda_path.read_text(encoding="utf-8", errors="replace"), display)
    except OSError:
        return None
    ck = pick_cuda_kernel(cf, kernel)
    if ck is None:
        return None
    outs = [p.name for p in cuda_outputs(ck)]
    stores = [s for s in ck.global_stores if not outs or s.target == outs[0]]
    return (display, stores[-1].line) if stores else None


def place(located: Located, base: dict[str, Any], kernel_line: int | None, nki_path: str, *,
          prefer: bool = False) -> dict[str, Any]:
    """Location fields of a numerics finding: the anchor `base` when it came from a finding that names the
    cause (unless `prefer`: the provenance line wins, e.g. a traced NaN origin), else the provenance line;
    the location it replaced becomes a related location."""
    out = dict(base)
    related = list(located.related)
    anchored = base.get("confidence") == "high" and not prefer
    if not anchored and located.line is not None:
        if base.get("line") and base["line"] not in (located.line, kernel_line):
            related.append(RelatedLocation(file=base.get("file") or nki_path, line=base["line"],
                                           message="finding that names a possible cause"))
        out.update(line=located.line, end_line=located.line, confidence="high")
        if kernel_line and kernel_line != located.line:
            related.append(RelatedLocation(file=nki_path, line=kernel_line, message="kernel"))
    elif located.line is not None and located.line != base.get("line"):
        related.insert(0, RelatedLocation(file=nki_path, line=located.line,
                                          message="statement the simulator traced it to"))
    if related:
        out["related"] = related
    return out
