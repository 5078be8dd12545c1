"""Evidence reconciliation: static and migration claims about runtime behaviour, checked against the run.

One stage of the review, after every check and before drafting. A finding that predicts what happens at
run time declares it in `evidence["claim"]`:

  tail-dropped   a floored trip count loses `numerator % tile` elements (NKI203, MIG101)
  input-unused   the port never reads an input (NKI202, MIG103)
  operand-dtype  matmul operands are fp32 because the CUDA buffers are (MIG111)
  output-wrong   an indexing mistake or a dropped epilogue makes the output wrong (MIG110, MIG102, NKI207)

NKI402 (exp overflow) and NKI404 (activation valid range) are checked against the argument ranges the
simulator recorded (review/ranges.py).

Two cost-model estimates are checked the same way: partition underuse that is only the ragged remainder
of the size estimated (PERF103), and small-DMA gains that the tensors' HBM rows cannot deliver (PERF102).

The claim is evaluated on every size of the port spec that ran. A claim the run contradicts is demoted
to info (or dropped, when its premise is false) and says which evidence contradicts it; a claim the run
confirms is promoted to the severity of the numerics finding that shows it and linked to it as the root
cause (evidence["root_cause"], evidence["root_cause_lead"]). Input dtypes declared by the port spec
override the ones inferred from the CUDA declarations.
"""

from __future__ import annotations

import re

import ast
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from ..findings import Finding, Severity
from ..numerics.attribution import ragged_sizes, unwritten_elements
from ..numerics.registry import TRAINIUM, TRAINIUM_FP32
from .ranges import RangeEvidence

TAIL_ROOT = "unhandled-ragged-tail"
_FP32 = ("float32", "fp32", "tfloat32")


@dataclass
class SizeEvidence:
    """What the run showed for one size of the spec."""

    name: str
    bindings: dict[str, int]
    ran: bool  # the trainium run finished and was compared with the reference
    passed: bool  # real dtypes and fp32 storage both within tolerance
    mismatches: int
    elements: int
    unwritten: int  # output elements the kernel never stored (SIM112)

    def describe(self, extra: str = "") -> str:
        b = ", ".join(f"{k}={v}" for k, v in self.bindings.items())
        return f"size `{self.name}` ({b}{extra})"


def size_evidence(res) -> list[SizeEvidence]:
    out = []
    for sr in res.sizes:
        run = sr.runs.get(TRAINIUM.name)
        ags = [a for a in sr.agreement(TRAINIUM.name) if a is not None]
        ran = bool(sr.reference.ok and run is not None and run.status == "ok" and ags)
        out.append(SizeEvidence(
            sr.size, dict(sr.bindings), ran, ran and all(a.passed for a in ags) and sr.passed(TRAINIUM_FP32.name) is not False,
            sum(a.mismatches for a in ags), sum(a.elements for a in ags), unwritten_elements(sr)))
    return out


# ---- the kernel's shape symbols, bound to spec sizes ------------------------------------------------

def kernel_params(source: str, kernel: str | None, spec_inputs: list[str]) -> tuple[ast.FunctionDef | None, dict[str, str]]:
    """The kernel's function node and its parameters mapped to spec inputs by position (the spec lists
    the kernel's arguments in order)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None, {}
    fns = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and (kernel is None or n.name == kernel)]
    if len(fns) != 1:
        return None, {}
    return fns[0], {a.arg: spec_inputs[i] for i, a in enumerate(fns[0].args.args) if i < len(spec_inputs)}


def shape_symbols(fn: ast.FunctionDef | None, params: dict[str, str]) -> dict[str, tuple[str, int]]:
    """Kernel locals unpacked from input shapes (`R, D = x.shape`, `N = rhs.shape[1]`) -> (spec input, axis)."""
    out: dict[str, tuple[str, int]] = {}
    for node in ast.walk(fn) if fn is not None else ():
        if not isinstance(node, ast.Assign) or len(node.targets) != 1:
            continue
        tgt, val = node.targets[0], node.value
        if isinstance(val, ast.Attribute) and val.attr == "shape" and isinstance(val.value, ast.Name) \
                and val.value.id in params and isinstance(tgt, ast.Tuple):
            for i, e in enumerate(tgt.elts):
                if isinstance(e, ast.Name) and e.id != "_":
                    out[e.id] = (params[val.value.id], i)
        elif isinstance(val, ast.Subscript) and isinstance(val.value, ast.Attribute) and val.value.attr == "shape" \
                and isinstance(val.value.value, ast.Name) and val.value.value.id in params \
                and isinstance(tgt, ast.Name) and isinstance(val.slice, ast.Constant) \
                and isinstance(val.slice.value, int):
            out[tgt.id] = (params[val.value.value.id], val.slice.value)
    return out


def _sym_values(spec, symbols: dict[str, tuple[str, int]], bindings: dict[str, int]) -> dict[str, int]:
    """Values of the kernel's shape symbols under one size's bindings of the spec's symbols."""
    vals = {}
    for sym, (inp, axis) in symbols.items():
        shape = spec.inputs[inp].shape if inp in spec.inputs else None
        if shape and axis < len(shape):
            d = shape[axis]
            v = d if isinstance(d, int) else bindings.get(d)
            if v is not None:
                vals[sym] = v
    return vals


def _numerator(claim: dict[str, Any], vals: dict[str, int]) -> int | None:
    terms = claim.get("terms")
    if terms is None or claim.get("const") is None:
        return None
    total = claim["const"]
    for sym, coef in terms.items():
        if sym not in vals:
            return None
        total += coef * vals[sym]
    return total


# ---- the stage -------------------------------------------------------------------------------------

class _Reconciler:
    def __init__(self, findings: list[Finding], spec, res, source: str, notes: list[str]):
        self.findings = findings
        self.spec, self.res, self.notes = spec, res, notes
        self.sizes = size_evidence(res) if res is not None else []
        positional = [n for n, i in spec.inputs.items() if not i.keyword] if spec is not None else []
        fn, self.params = kernel_params(source, spec.kernel_name if spec else None, positional)
        if fn is not None and spec is not None:  # keyword inputs bind the parameter of the same name
            named = {a.arg for a in fn.args.args + fn.args.kwonlyargs}
            self.params.update({n: n for n, i in spec.inputs.items() if i.keyword and n in named})
        self.symbols = shape_symbols(fn, self.params)
        self.ragged = ragged_sizes(res) if res is not None else set()
        self.ranges = RangeEvidence(res, self.sizes, lambda b: _sym_values(self.spec, self.symbols, b)
                                    if self.spec is not None else {})

    # -- tail-dropped --
    def tail(self, f: Finding, claim: dict[str, Any]) -> Finding | None:
        tile = claim.get("tile") or 0
        applies, spared = [], []
        for e in self.sizes:
            n = _numerator(claim, _sym_values(self.spec, self.symbols, e.bindings)) if self.spec else None
            if n is None:  # not evaluable on the spec's symbols: the attribution's ragged sizes stand in
                (applies if e.name in self.ragged else spared).append((e, None))
            elif tile and n % tile:
                applies.append((e, n))
            else:
                spared.append((e, n))
        ran = [(e, n) for e, n in applies if e.ran]

        def why(e: SizeEvidence, n: int | None) -> str:
            extra = f"; {claim.get('numerator')} = {n}, {n} % {tile} = {n % tile}" if n is not None and tile else ""
            return e.describe(extra)

        if not ran:
            what = ("no size of the spec leaves a partial tile for this loop" if not applies
                    else "the sizes that would show it did not run")
            return _annotate(f, "untested", what, [e.name for e, _ in applies])
        dropped = [(e, n) for e, n in ran if e.unwritten]
        if dropped:
            e, n = dropped[0]
            return _confirm(f, f"{why(e, n)} leaves {e.unwritten} output elements unwritten", [e.name for e, _ in dropped],
                            Severity.ERROR, TAIL_ROOT)
        aligned_fail = [e for e, _ in spared if e.ran and not e.passed]
        if all(e.passed for e, _ in ran):
            text = "; ".join(f"{why(e, n)} passes with 0 mismatches and every output element written" for e, n in ran)
        elif aligned_fail:
            text = "; ".join(f"{why(e, n)} writes every output element" for e, n in ran) + \
                f", and it fails the same way as {', '.join(f'`{e.name}`' for e in aligned_fail)}, which has no " \
                "partial tile: the failure has another cause"
        else:
            fails = [e for e, _ in ran if not e.passed]
            e = fails[0]
            return _confirm(f, f"{why(e, None)} fails ({e.mismatches} of {e.elements} elements) while the sizes "
                            "without a partial tile pass", [x.name for x in fails], Severity.ERROR, TAIL_ROOT)
        return _contradict(f, text, [e.name for e, _ in ran],
                           fix=f"No change needed for the sizes tested: the run shows the tail of loop "
                               f"`{claim.get('loop_var')}` is handled (e.g. by a separate tail tile). A comment at "
                               "the loop saying where the tail goes keeps the next reader from the same doubt.")

    # -- output-wrong --
    def output_wrong(self, f: Finding, claim: dict[str, Any]) -> Finding | None:
        ran = [e for e in self.sizes if e.ran]
        if not ran or len(ran) < len(self.sizes) or not all(e.passed for e in ran):
            return f
        text = "; ".join(f"{e.describe()} passes with 0 of {e.elements} elements out of tolerance" for e in ran)
        return _contradict(f, text + ": the port computes what the reference computes", [e.name for e in ran],
                           fix="No change needed for the sizes tested: every size matches the reference. (If the "
                               "reference itself leaves out what the CUDA kernel does, fix the reference first.)")

    # -- input-unused --
    def input_unused(self, f: Finding, claim: dict[str, Any]) -> Finding | None:
        if claim.get("pointer") is not False or claim.get("nki_param"):
            return f  # an unread tensor, or a parameter the port has and ignores: the run cannot clear it
        ran = [e for e in self.sizes if e.ran]
        if not ran or len(ran) < len(self.sizes) or not all(e.passed for e in ran):
            return f
        text = "; ".join(f"{e.describe()} passes with 0 mismatches" for e in ran)
        return _contradict(f, text + f": the port computes with the value of `{claim.get('cuda_param')}` the "
                           "reference uses (a constant baked into the kernel)", [e.name for e in ran],
                           fix=f"No change needed if the port's constant equals the value callers pass for "
                               f"`{claim.get('cuda_param')}`; name it after the CUDA parameter so the pairing is "
                               "visible.")

    # -- operand-dtype --
    def operand_dtype(self, f: Finding, claim: dict[str, Any]) -> Finding | None:
        if self.spec is None:
            return f
        params = claim.get("nki_params") or []
        declared = self._declared_dtypes(params)
        if len(declared) < len(params) or any(d in _FP32 for d in declared.values()):
            return f
        listed = ", ".join(f"`{p}` {d}" for p, d in declared.items())
        self.notes.append(f"{f.rule} at line {f.line} dropped: it assumed fp32 operands from the CUDA declarations, "
                          f"but the port spec declares {listed}")
        return None

    def _declared_dtypes(self, params: list[str]) -> dict[str, str]:
        """Port-spec dtypes of kernel params (array inputs only)."""
        out = {}
        for p in params:
            inp = self.spec.inputs.get(self.params.get(p, ""))
            if inp is not None and not inp.is_value:
                out[p] = inp.dtype
        return out

    # -- cost-model partition underuse that is only the ragged tail --
    def ragged_underuse(self, f: Finding, perf_size: str | None) -> Finding | None:
        mean_p = f.evidence.get("mean_partitions")
        if perf_size is None or mean_p is None or perf_size not in self.ragged:
            return f
        e = next((x for x in self.sizes if x.name == perf_size), None)
        if e is None:
            return f
        tails = {k: v % 128 for k, v in e.bindings.items() if v % 128}
        hit = next((k for k, r in tails.items() if abs(r - mean_p) < 0.5), None)
        if hit is None:
            return f
        r = tails[hit]
        return _contradict(f, f"the cost model ran on ragged {e.describe()}: its {r}-partition instructions are the "
                           f"{hit} % 128 = {r} tail tile, which no packing removes; tile-aligned sizes use all 128 "
                           "partitions", [perf_size],
                           fix="No change needed: the narrow instructions are the ragged remainder of the size "
                               "that was estimated.")


    # -- cost-model small-DMA gain that the tensors' HBM layout cannot deliver --
    def layout_limited_dma(self, f: Finding, perf_size: str | None) -> Finding | None:
        thr = f.evidence.get("threshold_bytes")
        sr = next((x for x in self.res.sizes if x.size == perf_size), None) if perf_size else None
        run = sr.runs.get(TRAINIUM.name) if sr is not None else None
        if not thr or run is None or not run.trace or self.spec is None:
            return f
        tensors = self._hbm_tensors(sr.bindings, run)
        rows: dict[str, tuple[int, int, str, float]] = {}  # tensor -> (row bytes, row elems, dtype, moved B)
        lines: dict[int, tuple[str, int, float, str]] = {}  # line -> (tensor, row bytes, bytes per descriptor, direction)
        for e in run.trace:
            if e.engine != "dma" or not e.transfers or e.bytes / e.transfers >= thr:
                continue
            t = tensors.get(e.hbm_tensor or "")
            if t is None:
                return f  # a transfer whose tensor layout is unknown: the estimate may hold
            shape, dtype, itemsize = t
            row = shape[-1] * itemsize
            if row >= thr:
                return f  # this tensor's rows allow longer descriptors: the gain is available
            moved = max(rows.get(e.hbm_tensor, (0, 0, "", 0.0))[3], e.bytes / e.transfers)
            rows[e.hbm_tensor] = (row, shape[-1], dtype, moved)
            if e.line:
                lines[e.line] = (e.hbm_tensor, row, max(lines.get(e.line, ("", 0, 0.0, ""))[2], e.bytes / e.transfers),
                                 e.direction or "")
        if not rows:
            return f
        listed = ", ".join(f"`{n}` {el} x {dt} = {rb:,} B" for n, (rb, el, dt, _) in rows.items())
        partial = [f"`{n}` moves {mv:,.0f} of its {rb:,} B rows per partition" for n, (rb, _, _, mv) in rows.items()
                   if mv < rb]
        f = f.model_copy(update={"evidence": {**f.evidence, "layout_limited_lines": {
            str(ln): {"tensor": t, "row_bytes": rb, "moved_bytes": round(mv), "direction": d}
            for ln, (t, rb, mv, d) in sorted(lines.items())}}})
        return _contradict(
            f, f"on size `{perf_size}` every small transfer moves rows of a tensor whose HBM rows are shorter than "
               f"{thr:,} B ({listed}); a descriptor cannot span more than one row, so the estimated gain needs "
               "another HBM layout, not another kernel", [perf_size],
            fix=("Load whole rows where the kernel moves less (" + "; ".join(partial) + "); beyond that only an "
                 "HBM layout with longer rows (a producer-side change) makes the descriptors longer.") if partial
            else "Nothing to change in the kernel: only an HBM layout with longer rows (a producer-side change) "
                 "makes these descriptors longer.")

    def _hbm_tensors(self, bindings: dict[str, int], run) -> dict[str, tuple[tuple[int, ...], str, int]]:
        """HBM tensor name -> (shape, dtype, itemsize): kernel inputs from the spec, a single output from the run."""
        out = {}
        for param, inp in self.params.items():
            spec = self.spec.inputs.get(inp)
            if spec is None or spec.is_value:
                continue
            shape = tuple(d if isinstance(d, int) else bindings.get(d, 0) for d in spec.shape or ())
            if shape and all(shape):
                out[param] = (shape, spec.dtype, spec.np_dtype.itemsize)
        names = {e.hbm_tensor for e in run.trace if e.engine == "dma" and e.hbm_tensor} - set(out)
        if len(run.outputs) == 1 and len(names) == 1:
            o = run.outputs[0]
            out[names.pop()] = (tuple(o.shape), str(o.dtype), o.dtype.itemsize)
        return out


def _recon(f: Finding, status: str, text: str, sizes: list[str]) -> dict[str, Any]:
    return {**f.evidence, "reconciled": {"status": status, "evidence": text, "sizes": sizes}}


def _annotate(f: Finding, status: str, text: str, sizes: list[str]) -> Finding:
    return f.model_copy(update={"evidence": _recon(f, status, text, sizes)})


def _predicted(f: Finding) -> str:
    """What the check predicted, in a few words (the full text stays in evidence["static_message"])."""
    c = f.evidence.get("claim") or {}
    kind = c.get("kind")
    if kind == "tail-dropped":
        return (f"that loop `{c.get('loop_var')}` (`{c.get('trip_expr')}`) skips the last "
                f"{c.get('numerator')} % {c.get('tile')} elements")
    if kind == "output-wrong":
        return f"a wrong output ({c.get('what')})"
    if kind == "input-unused":
        return f"that the port ignores `{c.get('cuda_param') or c.get('nki_param')}`"
    if f.category == "partition-underutilized":
        return "that packing rows onto more partitions would speed the kernel up"
    if f.category == "small-dma":
        return "that larger DMA transfers would speed the kernel up"
    return f"a runtime effect ({f.category})"


def _contradict(f: Finding, text: str, sizes: list[str], *, fix: str) -> Finding:
    ev = _recon(f, "contradicted", text, sizes)
    ev["static_message"] = f.message
    ev.pop("root_cause", None)  # a cleared claim is nobody's root cause
    msg = f"{f.rule} predicted {_predicted(f)}, but the run contradicts it: {text}."
    return f.model_copy(update={"severity": Severity.INFO, "evidence": ev, "message": msg, "fix": fix})


def _confirm(f: Finding, text: str, sizes: list[str], severity: Severity, root: str | None) -> Finding:
    ev = _recon(f, "confirmed", text, sizes)
    if root:
        ev["root_cause"] = root
    ev["root_cause_lead"] = True
    sev = severity if severity.rank < f.severity.rank else f.severity
    return f.model_copy(update={"severity": sev, "evidence": ev,
                                "message": f"{f.message} Confirmed by the run: {text.rstrip('.')}."})


def _same_file(a: str | None, b: str | None) -> bool:
    return bool(a and b) and PurePath(a).name == PurePath(b).name


def _status(f: Finding) -> str | None:
    return (f.evidence.get("reconciled") or {}).get("status")


def _reanchor(nf: Finding, old: Finding | None, findings: list[Finding]) -> tuple[Finding, int | None]:
    """The attribution named a cause the run did not bear out (its claim untested or contradicted on the
    spec's sizes): point the numerics finding at a finding of the same category the run confirmed instead."""
    j = next((k for k, g in enumerate(findings) if _status(g) == "confirmed" and g.category == nf.category
              and g.source in ("static", "migration") and _same_file(g.file, nf.file)), None)
    if j is None:
        return nf, None
    new = findings[j]
    msg = nf.message if old is None else nf.message.replace(f"{old.rule} {old.name} at line {old.line}",
                                                            f"{new.rule} {new.name} at line {new.line}")
    return nf.model_copy(update={"line": new.line, "end_line": new.end_line, "column": new.column, "message": msg,
                                 "fix": new.fix or nf.fix, "evidence": {**nf.evidence, "cause_rule": new.rule}}), j


def _link_causes(findings: list[Finding]) -> list[Finding]:
    """A numerics finding that names its cause (evidence["cause_rule"] at its line) confirms that finding:
    the cause is promoted to the numerics severity and both share one root cause, the cause leading."""
    out = list(findings)
    for i, nf in enumerate(out):
        rule = nf.evidence.get("cause_rule")
        if nf.source != "numerics" or not rule or nf.severity is Severity.INFO:
            continue
        j = next((k for k, f in enumerate(out) if f.rule == rule and f.line == nf.line and f.source != "numerics"
                  and _same_file(f.file, nf.file)), None)
        if j is None or _status(out[j]) in ("contradicted", "untested"):
            nf, j = _reanchor(nf, out[j] if j is not None else None, out)
            out[i] = nf
            if j is None:
                continue
        f = out[j]
        root = f.evidence.get("root_cause") or nf.evidence.get("root_cause") or f"cause:{f.rule}:{f.line}"
        out[i] = nf.model_copy(update={"evidence": {**nf.evidence, "root_cause": root}})
        if f.source not in ("static", "migration"):  # a simulator finding is run evidence itself: link only
            out[j] = f.model_copy(update={"evidence": {**f.evidence, "root_cause": root}})
            continue
        if _status(f) != "confirmed":
            out[j] = _confirm(f, f"{nf.rule} ({nf.name}) shows it: {nf.message}", [], nf.severity, root)
        else:
            out[j] = f.model_copy(update={"evidence": {**f.evidence, "root_cause": root}})
        # the same mistake elsewhere in the file (a tail tile repeating the main loop's exp) is the same defect
        for m, g in enumerate(out):
            if m != j and g.rule == f.rule and _same_file(g.file, f.file) and g.category == f.category \
                    and not g.evidence.get("reconciled") and g.source != "numerics":
                out[m] = _confirm(g, f"the same defect as line {f.line}, which {nf.rule} confirms", [],
                                  out[j].severity, root)
    return out


def _link_windows(findings: list[Finding]) -> list[Finding]:
    """The cost model's redundant-DMA estimate on a load NKI111 reads as a sliding window is that window's
    price: one item, and the fix is the halo tile rather than a generic hoist."""
    windows = {(PurePath(f.file or "").name, f.line): f for f in findings if f.rule == "NKI111"}
    out = []
    for f in findings:
        w = windows.get((PurePath(f.file or "").name, f.line))
        if w is not None and f.source == "cost-model" and f.category == "redundant-dma":
            root = f"sliding-window:{w.line}"
            f = f.model_copy(update={"fix": w.fix, "evidence": {**f.evidence, "root_cause": root}})
            windows[(PurePath(w.file or "").name, w.line)] = w.model_copy(
                update={"evidence": {**w.evidence, "root_cause": root}})
        out.append(f)
    return [windows.get((PurePath(f.file or "").name, f.line), f) if f.rule == "NKI111" else f for f in out]


def reconcile(findings: list[Finding], *, spec=None, res=None, source: str = "", perf_size: str | None = None,
              notes: list[str] | None = None) -> list[Finding]:
    """Findings with every runtime claim checked against the run (see the module docstring)."""
    notes = notes if notes is not None else []
    if res is None:
        return findings
    r = _Reconciler(findings, spec, res, source, notes)
    out: list[Finding] = []
    for f in findings:
        claim = f.evidence.get("claim") if f.source in ("static", "migration") else None
        kind = claim.get("kind") if isinstance(claim, dict) else None
        g: Finding | None = f
        if kind == "tail-dropped":
            g = r.tail(f, claim)
        elif kind == "output-wrong":
            g = r.output_wrong(f, claim)
        elif kind == "input-unused":
            g = r.input_unused(f, claim)
        elif kind == "operand-dtype":
            g = r.operand_dtype(f, claim)
        elif f.rule == "NKI402" and f.source == "static":
            g = r.ranges.exp(f, findings)
        elif f.rule == "NKI404" and f.source == "static":
            g = r.ranges.activation(f)
        elif f.source == "cost-model" and f.category == "partition-underutilized":
            g = r.ragged_underuse(f, perf_size)
        elif f.source == "cost-model" and f.category == "small-dma":
            g = r.layout_limited_dma(f, perf_size)
        if g is not None:
            out.append(g)
    return _align_dma_advice(_link_windows(_link_overflow(_link_causes(out))))


def _link_overflow(findings: list[Finding]) -> list[Finding]:
    """NKI402 the run's value ranges confirmed and the NUM104 its overflow produced: one root cause."""
    roots = {(PurePath(f.file or "").name, f.line): f.evidence["root_cause"] for f in findings
             if f.rule == "NKI402" and _status(f) == "confirmed" and f.evidence.get("run_range")
             and f.evidence.get("root_cause")}
    if not roots:
        return findings
    out = []
    for f in findings:
        if f.rule == "NUM104" and "root_cause" not in f.evidence:
            root = roots.get((PurePath(f.file or "").name, f.line))
            if root is None and f.evidence.get("cause_rule") == "NKI402" and len(roots) == 1:
                root = next(iter(roots.values()))
            if root is not None:
                f = f.model_copy(update={"evidence": {**f.evidence, "root_cause": root}})
        out.append(f)
    return out


def _align_dma_advice(findings: list[Finding]) -> list[Finding]:
    """One verdict per DMA line: when the run shows a line's transfers are capped by its tensor's HBM row length
    (PERF102 contradicted), NKI108 on that line asks for whole rows at most, never for the 2 KiB the rows cannot
    give; a partition-count problem it also names still stands."""
    capped = [f for f in findings if f.rule == "PERF102" and f.evidence.get("layout_limited_lines")]
    if not capped:
        return findings
    out = []
    for f in findings:
        p = next((p for p in capped if f.rule == "NKI108" and _same_file(f.file, p.file)
                  and str(f.line) in p.evidence["layout_limited_lines"]), None)
        if p is None or "bytes_per_partition" not in f.evidence:
            out.append(f)
            continue
        row = p.evidence["layout_limited_lines"][str(f.line)]
        t, rb, mv = row["tensor"], row["row_bytes"], row["moved_bytes"]
        head = re.sub(r"[\d,]+ B per partition \(at most, fp32\)", f"{mv:,} B per partition", f.message.split("; DMA needs")[0])
        cap = f"the run shows `{t}` rows are {rb:,} B in HBM, and a descriptor cannot span two rows"
        grow = mv < rb
        api = head.split("`")[1] if head.count("`") >= 2 else ""
        verb = "Store" if "store" in api or row.get("direction") == "store" else "Load"
        parts = "partitions" in f.evidence
        verdict = (f"{head}. {cap[0].upper() + cap[1:]}: this transfer can grow to whole rows ({rb:,} B per partition, "
                   f"{rb / max(mv, 1):.0f}x what it moves) but no further"
                   if grow else f"{head}. {cap[0].upper() + cap[1:]}: it already moves whole rows")
        verdict += ("; the partition count is the kernel's to fix." if parts else
                    "." if grow else "; only a producer-side HBM layout with longer rows would help.")
        fixes = ([f"Load all 128 partitions per DMA."] if parts else []) + (
            [f"{verb} whole `{t}` rows ({rb:,} B) per partition."] if grow else [])
        ev = {**f.evidence, "static_message": f.message,
              "reconciled": {"status": "narrowed", "evidence": cap, "by": p.rule, "row_bytes": rb}}
        upd = {"message": verdict, "evidence": ev,
               "fix": " ".join(fixes) or "Nothing to change in the kernel: only an HBM layout with longer rows "
                                        "(a producer-side change) makes these descriptors longer."}
        if not (parts or grow):
            upd["severity"] = Severity.INFO
        out.append(f.model_copy(update=upd))
    return out
