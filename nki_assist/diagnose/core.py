"""One diagnosis of a port that passes at some sizes and fails at others: anatomy -> slice -> proven repair.

`diagnose` is the one entry the review calls with the numerics result. It returns None when no size fails.
"""

from __future__ import annotations

import ast
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..numerics.guard import budget_bytes
from ..numerics.inputs import make_inputs
from ..numerics.registry import TRAINIUM, TRAINIUM_FP32
from .anatomy import Contrast, OutputAnatomy, anatomy, contrast
from .mutate import Edit, Vocabulary, edits_for_line
from .repair import Proof, prove, unified_diff
from .slice import Suspect, parse_kernel, rank

DEFAULT_BUDGET_S = 4.0  # per failing size
TOP_LINES = 8  # suspects whose edits are tried
FIRST_PASS = 12  # edits per line in the first pass over the top lines
PROVEN = "proven by re-running all sizes"

# what a proven edit's kind says about the cause (taxonomy categories)
FAMILY = {"index": "indexing-error", "constant": "indexing-error", "loop-variable": "indexing-error",
          "transpose": "indexing-error", "axis": "indexing-error", "tile-start": "missing-boundary-mask",
          "rounding": "missing-boundary-mask", "size": "indexing-error", "dtype": "low-precision-accumulation",
          "scale": "missing-epilogue", "branch": "missing-epilogue"}


@dataclass
class Repair:
    edit: Edit
    diff: str
    sizes: list[str]  # every size it was re-run on (all passed)

    def to_json(self) -> dict[str, Any]:
        return {"line": self.edit.line, "edit": self.edit.what, "kind": self.edit.kind, "diff": self.diff,
                "sizes": self.sizes, "status": PROVEN}


@dataclass
class Diagnosis:
    file: str
    failing: list[str]  # sizes that fail
    passing: list[str]
    line: int | None  # the root-cause line: the proven edit's, else the top suspect's
    cause: str  # in words
    category: str
    anatomy: list[OutputAnatomy] = field(default_factory=list)
    contrast: Contrast = field(default_factory=Contrast)
    suspects: list[Suspect] = field(default_factory=list)
    repair: Repair | None = None
    tried: int = 0
    seconds: float = 0.0  # spent re-running candidates
    total_s: float = 0.0
    budget_s: float = 0.0
    exhausted: bool = False
    notes: list[str] = field(default_factory=list)

    @property
    def proven(self) -> bool:
        return self.repair is not None

    def budget_text(self) -> str:
        spent = f"{self.tried} candidate edit(s) re-run in {self.seconds:.1f} s of a {self.budget_s:.1f} s budget"
        return spent + (" (budget exhausted)" if self.exhausted else "")

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "cause": self.cause, "category": self.category,
                "failing_sizes": self.failing, "passing_sizes": self.passing, "proven": self.proven,
                "anatomy": [a.to_json() for a in self.anatomy], "contrast": self.contrast.text(),
                "suspects": [s.to_json() for s in self.suspects[:5]],
                "repair": self.repair.to_json() if self.repair else None, "budget_s": self.budget_s,
                "notes": self.notes}


def _fails(sr) -> bool:
    trn = sr.runs.get(TRAINIUM.name)
    if sr.reference is None or not sr.reference.ok or trn is None:
        return False
    return trn.status == "kernel-error" or sr.passed(TRAINIUM.name) is False


def _symbols(k, spec) -> dict[str, str]:
    """Kernel names of the spec's size symbols (`R, C = x.shape` with x's shape ["R", "C"])."""
    params = [a.arg for a in k.func.args.args]
    shapes = {params[i]: inp.shape for i, inp in enumerate(spec.inputs.values()) if i < len(params)}
    out = {}
    for n in ast.walk(k.func):
        v = n.value if isinstance(n, ast.Assign) else None
        if isinstance(v, ast.Subscript) and isinstance(v.value, ast.Attribute) and v.value.attr == "shape" \
                and isinstance(v.value.value, ast.Name) and isinstance(n.targets[0], ast.Name) \
                and isinstance(v.slice, ast.Constant) and isinstance(v.slice.value, int):
            shape = shapes.get(v.value.value.id) or []
            if v.slice.value < len(shape) and isinstance(shape[v.slice.value], str):
                out[n.targets[0].id] = shape[v.slice.value]
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Attribute) and n.value.attr == "shape" \
                and isinstance(n.value.value, ast.Name) and isinstance(n.targets[0], ast.Tuple):
            shape = shapes.get(n.value.value.id) or []
            for t, s in zip(n.targets[0].elts, shape):
                if isinstance(t, ast.Name) and isinstance(s, str):
                    out[t.id] = s
    return out


def _cuda_constants(spec) -> set[int]:
    if spec.cuda_path is None:
        return set()
    try:
        text = Path(spec.cuda_path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return set()
    return {int(x) for x in re.findall(r"(?:#define\s+\w+\s+|constexpr\s+int\s+\w+\s*=\s*)(\d+)", text)
            if 2 <= int(x) <= 4096}


def diagnose(spec, res, *, display: str, target: str, budget_s_per_size: float = DEFAULT_BUDGET_S, memory_mb: int = 4096,
             runner: str | None = None, progress: Callable[[str], None] | None = None) -> Diagnosis | None:
    """The diagnosis of the failing sizes of `res` (numerics.scenarios.NumericsResult); None when none fails
    while another passes, or the kernel cannot be parsed."""
    t0 = time.perf_counter()
    failing = [s for s in res.sizes if _fails(s)]
    passing = [s for s in res.sizes if s.passed(TRAINIUM.name) is True]
    if not failing:
        return None
    source = Path(spec.nki_path).read_text(encoding="utf-8", errors="replace")
    k = parse_kernel(source, spec.kernel_name)
    if k is None:
        return None
    tol = spec.tolerance
    anats, provs, masks, faults, origins = [], [], [], [], []
    error_line = None
    for sr in failing:
        trn = sr.runs[TRAINIUM.name]
        if trn.status != "ok":
            error_line = error_line or trn.error_line or next((f.line for f in trn.findings
                                                               if f.severity.value == "error"), None)
            continue
        fp32 = sr.runs.get(TRAINIUM_FP32.name)
        fp32_ok = sr.passed(TRAINIUM_FP32.name) is True if fp32 is not None else False
        prov = trn.provenance
        for i, (a, e) in enumerate(zip(trn.outputs, sr.reference.outputs)):
            pout = prov.outputs[i] if prov is not None and i < len(prov.outputs) else None
            unwritten = _unwritten(pout, np.shape(a))
            an = anatomy(a, e, rtol=tol.rtol, atol=tol.atol, size=sr.size, output=i, unwritten_mask=unwritten,
                         fp32_passes=fp32_ok)
            if an is None:
                continue
            anats.append(an)
            provs.append(pout)
            masks.append(_wrong_mask(a, e, tol))
        if prov is not None:
            faults += [f.line for f in prov.faults if f.line is not None]
            origins += [f.describe() for f in prov.faults[:2]]
    worst = failing[0]
    con = contrast(worst.bindings, [s.bindings for s in passing])
    symbols = _symbols(k, spec)
    suspects, loops = rank(k, anats, provs, con, faults, masks, symbols, error_line,
                    _lines(failing) - _lines(passing) if passing else set())
    diag = Diagnosis(display, [s.size for s in failing], [s.size for s in passing], None, "", "output-mismatch",
                     anats, con, suspects)
    budget = round(budget_s_per_size * len(failing), 2)
    diag.budget_s = budget
    diag.notes += [f"NaN/Inf origin: {o}" for o in dict.fromkeys(origins)]
    if budget > 0 and suspects:
        voc = Vocabulary(k, _cuda_constants(spec))
        edits = _candidates(k, suspects, voc, anats, loops, _pairs(con, symbols))
        jobs = _jobs(spec, res, failing)
        if jobs:
            from ..toolchain.builtin import DEFAULT_RUNNER  # deferred: the child's runner, as the review's runs

            proof = prove(source, str(spec.nki_path), spec.kernel_name, edits, jobs, runner=runner or DEFAULT_RUNNER,
                          options={"target": target, "seed": 0, "lenient": True, "grid": spec.grid,
                                   "trace": False, "sanitize": False, "precise": True},
                          rtol=tol.rtol, atol=tol.atol, budget_s=budget, memory_mb=memory_mb, progress=progress)
            _take(diag, proof, source, display, [j["size"] for j in jobs])
    _words(diag, k)
    diag.total_s = time.perf_counter() - t0
    return diag


def _lines(sizes) -> set[int]:
    """Kernel lines that issued an instruction in the traced runs of `sizes`."""
    return {e.line for s in sizes if (r := s.runs.get(TRAINIUM.name)) is not None for e in r.trace
            if e.line is not None}


def _unwritten(pout, shape) -> np.ndarray | None:
    """Elements no recorded store wrote (exact records only; None when the log was truncated)."""
    if pout is None or pout.truncated or len(shape) == 0:
        return None
    m = np.zeros(shape, dtype=bool)
    for r in pout.records:
        if len(r.box) != len(shape):
            return None
        m[tuple(slice(a, b, s) for (a, b), s in zip(r.box, r.step))] = True
    return ~m


def _wrong_mask(a, e, tol) -> np.ndarray:
    a, e = np.asarray(a).astype(np.float64), np.asarray(e).astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        ok = (np.abs(a - e) <= tol.atol + tol.rtol * np.abs(e)) | (np.isnan(a) & np.isnan(e))
    return ~ok


_KIND_ORDER = {"permutation": ("constant", "index", "loop-variable", "tile-start", "transpose", "axis", "size"),
               "unwritten": ("rounding", "tile-start", "axis", "index", "constant", "size"),
               "ratio": ("size", "scale", "branch", "rounding", "constant"),
               "precision": ("dtype",)}


_PROMOTE = {"precision": "dtype", "nonfinite": "dtype", "unwritten": "rounding"}


def _pairs(con: Contrast, symbols: dict[str, str]) -> list[tuple[set[str], set[str]]]:
    """Kernel names of each two dimensions that are equal at every passing size and differ at the failing one."""
    def names(sym: str) -> set[str]:
        return {sym} | {n for n, s in symbols.items() if s == sym}

    return [(names(a), names(b)) for text, syms in con.items if "differ (equal" in text for a, b in [syms]]


def _swaps(e: Edit, pairs) -> bool:
    """The edit replaces one name of such a pair by the other (`C` -> `S` where C = S at every passing size)."""
    m = re.match(r"`(\w+)` -> `(\w+)`", e.what)
    return bool(m) and any(m[1] in a and m[2] in b or m[1] in b and m[2] in a for a, b in pairs)


def _candidates(k, suspects: list[Suspect], voc: Vocabulary, anats: list[OutputAnatomy],
                loops: set[str] = frozenset(), pairs=()) -> list[Edit]:
    """Edits of the top suspect lines, best line first; within a line, edits of expressions that read a loop
    variable whose values tell wrong stores from right ones first, then the kinds that fit the error's shape."""
    rel = anats[0].relation if anats else None
    order = _KIND_ORDER.get(rel or "", _KIND_ORDER["permutation"])
    first: list[Edit] = []
    later: list[Edit] = []
    for s in suspects[:TOP_LINES]:
        es = edits_for_line(k, s.line, voc)
        es.sort(key=lambda e: (not (e.context & loops), order.index(e.kind) if e.kind in order else len(order)))
        first += es[:FIRST_PASS]  # every top line gets its likeliest edits before any line gets all of its
        later += es[FIRST_PASS:]
    promote = _PROMOTE.get(rel or "")
    # first the edits the evidence asks for: the other of two dims that stopped being equal, the edit kind the
    # error's shape names
    lead = [e for e in first + later if _swaps(e, pairs)] + [e for e in first if e.kind == promote]
    return list(dict.fromkeys(lead + first + later))


def _jobs(spec, res, failing) -> list[dict]:
    """Every size with a reference, failing sizes first, each group smallest first."""
    def nbytes(sr):
        return sum(int(np.prod(o.shape)) for o in sr.reference.outputs)

    ok = [s for s in res.sizes if s.reference is not None and s.reference.ok]
    fail = sorted([s for s in ok if s in failing], key=nbytes)
    rest = sorted([s for s in ok if s not in failing], key=nbytes)
    jobs = []
    limit = budget_bytes(4096)
    for sr in fail + rest:
        try:
            args = make_inputs(spec, spec.size(sr.size), limit)
        except Exception:
            return []  # inputs that cannot be remade: nothing can be proven
        trn = sr.runs.get(TRAINIUM.name)
        allowed = sorted({f.rule for f in (trn.findings if trn is not None else []) if f.severity.value == "error"})
        # a candidate may take a few times the original run (a simulator run is slower with its trace on)
        limit = max(0.5, 3.0 * (trn.elapsed_s if trn is not None else 1.0))
        jobs.append({"size": sr.size, "args": args, "ref": sr.reference.outputs, "allowed": allowed,
                     "limit_s": limit})
    return jobs


def _take(diag: Diagnosis, proof: Proof, source: str, display: str, sizes: list[str]) -> None:
    diag.tried, diag.exhausted, diag.seconds = len(proof.trials), proof.exhausted, proof.seconds
    if proof.proven:
        t = proof.proven[0]
        diag.repair = Repair(t.edit, unified_diff(source, t.edit, display), sizes)


def _words(diag: Diagnosis, k) -> None:
    shape = "; ".join(a.summary for a in diag.anatomy[:2]) or "the kernel run fails at this size"
    if diag.notes:
        shape += "; " + "; ".join(diag.notes[:2])
    differs = f" What differs from the passing sizes: {diag.contrast.text()}." if diag.contrast.items else ""
    if diag.repair is not None:
        e = diag.repair.edit
        diag.line = e.line
        diag.category = FAMILY.get(e.kind, "output-mismatch")
        if e.kind == "dtype" and any(a.relation == "nonfinite" for a in diag.anatomy):
            diag.category = "overflow-risk"  # Inf/NaN where the reference is finite: the dtype's range, not rounding
        diag.cause = (f"line {e.line} `{e.old.strip()}`: {e.what} makes every size pass ({PROVEN}: "
                      f"{', '.join(diag.repair.sizes)}). Error shape: {shape}.{differs}")
        return
    if diag.suspects:
        top = diag.suspects[0]
        diag.line = top.line
        ranked = "; ".join(f"line {s.line} `{s.text}` ({', '.join(s.reasons[:2]) or 'in the slice'})"
                           for s in diag.suspects[:3])
        # no counts or times in the text: they vary with the machine's load (the notes carry them)
        tried = (f"no candidate edit made every size pass within the repair budget ({diag.budget_s:g} s)"
                 if diag.budget_s > 0 else "candidate edits were not tried (repair budget 0)")
        diag.cause = (f"{tried}. Error shape: {shape}."
                      f"{differs} Lines that fed the wrong elements, ranked: {ranked}.")
    else:
        diag.cause = f"no store or fault names a line. Error shape: {shape}.{differs}"
