"""What every claim check reads: the run's evidence per size, the kernel's shape symbols bound to the spec's
sizes, and the three verdicts a check can give a claim (annotate, contradict, confirm)."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

from ...findings import Finding, Severity
from ...numerics.attribution import ragged_sizes, unwritten_elements
from ...numerics.registry import TRAINIUM, TRAINIUM_FP32
from ..ranges import RangeEvidence


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


def sym_values(spec, symbols: dict[str, tuple[str, int]], bindings: dict[str, int]) -> dict[str, int]:
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


class RunContext:
    """The run as the claim checks read it: sizes, the kernel's parameters and shape symbols, ragged sizes,
    value ranges. `notes` collects what the review should tell the reader (a claim dropped, and why)."""

    def __init__(self, spec, res, source: str, notes: list[str]):
        self.spec, self.res, self.notes = spec, res, notes
        self.sizes = size_evidence(res) if res is not None else []
        positional = [n for n, i in spec.inputs.items() if not i.keyword] if spec is not None else []
        fn, self.params = kernel_params(source, spec.kernel_name if spec else None, positional)
        if fn is not None and spec is not None:  # keyword inputs bind the parameter of the same name
            named = {a.arg for a in fn.args.args + fn.args.kwonlyargs}
            self.params.update({n: n for n, i in spec.inputs.items() if i.keyword and n in named})
        self.symbols = shape_symbols(fn, self.params)
        self.ragged = ragged_sizes(res) if res is not None else set()
        self.ranges = RangeEvidence(res, self.sizes, lambda b: sym_values(self.spec, self.symbols, b)
                                    if self.spec is not None else {})

    def values(self, bindings: dict[str, int]) -> dict[str, int]:
        return sym_values(self.spec, self.symbols, bindings) if self.spec is not None else {}


# ---- verdicts ----------------------------------------------------------------------------------------

def recon(f: Finding, status: str, text: str, sizes: list[str]) -> dict[str, Any]:
    return {**f.evidence, "reconciled": {"status": status, "evidence": text, "sizes": sizes}}


def annotate(f: Finding, status: str, text: str, sizes: list[str]) -> Finding:
    return f.model_copy(update={"evidence": recon(f, status, text, sizes)})


def predicted(f: Finding) -> str:
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
    if f.rule == "NKI402":
        return "that this exp overflows and causes the failure"
    return f"a runtime effect ({f.category})"


def contradict(f: Finding, text: str, sizes: list[str], *, fix: str) -> Finding:
    ev = recon(f, "contradicted", text, sizes)
    ev["static_message"] = f.message
    ev.pop("root_cause", None)  # a cleared claim is nobody's root cause
    msg = f"{f.rule} predicted {predicted(f)}, but the run contradicts it: {text}."
    return f.model_copy(update={"severity": Severity.INFO, "evidence": ev, "message": msg, "fix": fix})


def confirm(f: Finding, text: str, sizes: list[str], severity: Severity, root: str | None) -> Finding:
    ev = recon(f, "confirmed", text, sizes)
    if root:
        ev["root_cause"] = root
    ev["root_cause_lead"] = True
    sev = severity if severity.rank < f.severity.rank else f.severity
    return f.model_copy(update={"severity": sev, "evidence": ev,
                                "message": f"{f.message} Confirmed by the run: {text.rstrip('.')}."})


def status(f: Finding) -> str | None:
    return (f.evidence.get("reconciled") or {}).get("status")
