"""MIG112: number-format semantics across platforms (fp8 variants, fp16 vs bf16 range).

CUDA's `__nv_fp8_e4m3` is OCP E4M3 (largest finite value 448, conversions saturate with __NV_SATFINITE);
Neuron's `float8_e4m3` on trn1/trn2 has 240 (nki-facts §3 "Data types"); e5m2 is 57344 on both; fp16 is
65504 where bf16 keeps the fp32 range. A port that keeps the CUDA kernel's scale or clamp constant for a
different format overflows: reported at the line of the constant, with both maxima. A port that casts to
float16 where the CUDA kernel rounds to bfloat16 loses range: reported at the cast.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Any, Iterable

from ...api.hardware import CUDA_FLOAT_MAX, FLOAT_MAX, Target
from ...findings import Finding, RelatedLocation, Severity
from ...parse.cuda_formats import FormatUse, format_facts, saturates
from ...parse.cuda_model import CudaFile, CudaKernel
from ...parse.nki_model import NkiFile, NkiKernel
from ...parse.pyast import dotted_name as _dotted
from ..registry import get

_ALLOC = {"ndarray", "zeros", "ones", "full", "empty", "zeros_like", "ones_like", "full_like", "empty_like"}
_CLAMP = {"minimum", "maximum", "clip", "clamp", "min", "max"}
_RANGE_NAME = re.compile(r"max|fp8|e4m3|e5m2|scale|clip|clamp|range|sat|bound|limit", re.I)
# a literal equal to a format's largest finite value, and the format it belongs to
_MAXIMA = {448.0: "float8_e4m3fn", 240.0: "float8_e4m3", 57344.0: "float8_e5m2", 65504.0: "float16"}
_CUDA_NAME = {"fp8_e4m3": "__nv_fp8_e4m3 (OCP E4M3)", "fp8_e5m2": "__nv_fp8_e5m2 (E5M2)", "half": "half",
              "bfloat16": "__nv_bfloat16"}


@dataclass
class _Cast:
    fmt: str  # NKI dtype name
    line: int
    kind: str  # alloc | cast
    target: str | None  # the allocated name


@dataclass
class _Const:
    value: float
    line: int
    text: str  # the literal or `NAME = 448.0`
    role: str  # scale | clamp
    named: bool  # defined as a named constant (module or kernel level)


def _number(node) -> float | None:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        node = node.operand
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return float(node.value)
    return None


class _Facts:
    """Casts and format-maximum constants of one NKI kernel, from the Python AST of the file."""

    def __init__(self, nf: NkiFile, nk: NkiKernel):
        self.text = "\n".join(nf.lines)
        self.casts: list[_Cast] = []
        self.consts: list[_Const] = []
        try:
            tree = ast.parse(self.text)
        except SyntaxError:
            return
        fn = next((n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                   and n.name == nk.name and n.lineno <= nk.line <= (n.end_lineno or n.lineno) + 1), None)
        if fn is None:
            return
        module_vals: dict[str, tuple[Any, int, str]] = {}
        for st in tree.body:
            if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name):
                module_vals[st.targets[0].id] = (st.value, st.lineno, ast.get_source_segment(self.text, st) or "")
        self._walk(fn, module_vals)

    def _dtype_of(self, node, module_vals) -> str | None:
        if isinstance(node, ast.Name) and node.id in module_vals:
            node = module_vals[node.id][0]
        name = _dotted(node).rsplit(".", 1)[-1]
        return name if name in FLOAT_MAX else None

    def _walk(self, fn, module_vals) -> None:
        parents: dict[int, ast.AST] = {}
        for node in ast.walk(fn):
            for ch in ast.iter_child_nodes(node):
                parents[id(ch)] = node
        seen_names: set[str] = set()
        self._scan(fn, module_vals, parents, seen_names)
        # new dialect: the cast happens where an instruction writes a tile of that dtype (`dst=f8`)
        tiles = {c.target: c.fmt for c in self.casts if c.kind == "alloc" and c.target}
        for node in ast.walk(fn):
            if isinstance(node, ast.Call) and _dotted(node.func).rsplit(".", 1)[-1] not in _ALLOC:
                dst = next((kw.value for kw in node.keywords if kw.arg == "dst"), None)
                base = dst.value if isinstance(dst, ast.Subscript) else dst
                if isinstance(base, ast.Name) and base.id in tiles:
                    self.casts.append(_Cast(tiles[base.id], node.lineno, "cast", base.id))

    def _scan(self, fn, module_vals, parents, seen_names) -> None:
        for node in ast.walk(fn):
            if isinstance(node, ast.Call):
                tail = _dotted(node.func).rsplit(".", 1)[-1]
                dt = next((kw.value for kw in node.keywords if kw.arg == "dtype"), None)
                if dt is None and tail in ("ndarray", "empty", "zeros", "ones") and len(node.args) > 1:
                    dt = node.args[1]
                fmt = self._dtype_of(dt, module_vals) if dt is not None else None
                if fmt:
                    parent = parents.get(id(node))
                    target = (parent.targets[0].id if isinstance(parent, ast.Assign) and len(parent.targets) == 1
                              and isinstance(parent.targets[0], ast.Name) else None)
                    self.casts.append(_Cast(fmt, node.lineno, "alloc" if tail in _ALLOC else "cast", target))
            v = _number(node) if isinstance(node, ast.Constant) else None
            if v is not None and abs(v) in _MAXIMA:
                role = self._role(node, parents)
                parent = parents.get(id(node))
                named = isinstance(parent, ast.Assign)
                if isinstance(node.value, float) or role == "clamp" or (named and any(
                        isinstance(t, ast.Name) and _RANGE_NAME.search(t.id) for t in parent.targets)):
                    seg = ast.get_source_segment(self.text, parent if named else node) or str(node.value)
                    self.consts.append(_Const(abs(v), node.lineno, seg.strip(), role, named))
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in module_vals:
                if node.id in seen_names:
                    continue
                value, line, seg = module_vals[node.id]
                mv = _number(value)
                if mv is not None and abs(mv) in _MAXIMA and (isinstance(_inner(value), float) or
                                                              _RANGE_NAME.search(node.id)):
                    seen_names.add(node.id)
                    self.consts.append(_Const(abs(mv), line, seg.strip(), self._role(node, parents), True))

    @staticmethod
    def _role(node, parents) -> str:
        p = parents.get(id(node))
        for _ in range(3):
            if p is None:
                break
            if isinstance(p, ast.Call) and (_dotted(p.func).rsplit(".", 1)[-1] in _CLAMP or any(
                    kw.arg in ("op", "op0", "op1") and _dotted(kw.value).rsplit(".", 1)[-1] in _CLAMP
                    for kw in p.keywords)):
                return "clamp"
            p = parents.get(id(p))
        return "scale"


def _inner(node):
    if isinstance(node, ast.UnaryOp):
        node = node.operand
    return node.value if isinstance(node, ast.Constant) else None


def _cuda_side(uses: list[FormatUse], fmt_prefix: str) -> FormatUse | None:
    """The last conversion to (or use of) the format: past the parameter list, in the body."""
    hits = [u for u in uses if (u.format or "").startswith(fmt_prefix) and u.kind in ("type", "convert")]
    return hits[-1] if hits else None


def _finding(nf: NkiFile, cf: CudaFile, ck: CudaKernel, line: int, cuda_line: int, message: str,
             evidence: dict[str, Any], note: str, *, severity: Severity | None = None,
             category: str | None = None, fix: str | None = None) -> Finding:
    ev = {"cuda_file": cf.path, "cuda_line": cuda_line, "cuda_kernel": ck.name, **evidence}
    fields: dict[str, Any] = dict(file=nf.path, line=max(1, line), evidence=ev,
                                  related=[RelatedLocation(file=cf.path, line=max(1, cuda_line), message=note)])
    if category:
        fields["category"] = category
    if fix:
        fields["fix"] = fix
    return get("MIG112").finding(message, severity=severity, **fields)


def check_formats(cf: CudaFile, nf: NkiFile, ck: CudaKernel, nk: NkiKernel, target: Target) -> Iterable[Finding]:
    uses = format_facts(cf, ck)
    facts = _Facts(nf, nk)
    if not facts.casts:
        return
    yield from _constants(cf, nf, ck, target, uses, facts)
    yield from _fp16_for_bf16(cf, nf, ck, nk, uses, facts)


def _constants(cf, nf, ck, target, uses, facts) -> Iterable[Finding]:
    done: set[float] = set()
    casts = sorted(facts.casts, key=lambda c: (not c.fmt.startswith("float8"), c.kind != "cast", c.line))
    sat = saturates(uses)
    for k in sorted(facts.consts, key=lambda k: k.line):
        if k.value in done:
            continue
        below = [c for c in casts if FLOAT_MAX[c.fmt] < k.value]
        above = [c for c in casts if c.fmt.startswith("float8") and FLOAT_MAX[c.fmt] > k.value and
                 k.value == 240.0]
        if not below and not above:
            continue
        done.add(k.value)
        also = sorted({o.line for o in facts.consts if o.value == k.value and o.line != k.line})
        own = _MAXIMA[k.value]
        cuda = _cuda_side(uses, "fp8" if own.startswith("float8") else "half")
        twin = next((u for u in uses if u.kind == "constant" and u.value == k.value), None)
        cuda_line = twin.line if twin is not None else cuda.line if cuda is not None else ck.line
        cuda_fmt = cuda.format if cuda is not None and cuda.format else None
        verb = "clamps at" if k.role == "clamp" else "scales to"
        where = f"`{k.text}` (line {k.line})"
        if below:
            c = below[0]
            nmax = FLOAT_MAX[c.fmt]
            origin = (f", the largest finite value of the CUDA kernel's {_CUDA_NAME[cuda_fmt]} ("
                      + (f"`{twin.text}` at line {twin.line}, " if twin is not None else "")
                      + f"conversion at line {cuda.line}"
                      + (", which saturates with __NV_SATFINITE" if sat and cuda_fmt.startswith("fp8") else "") + ")"
                      if cuda_fmt in _CUDA_NAME and CUDA_FLOAT_MAX.get(cuda_fmt) == k.value else f" ({own}'s maximum)")
            overflow = "NaN" if c.fmt == "float8_e4m3fn" else "inf"
            yield _finding(
                nf, cf, ck, k.line, cuda_line,
                f"{where} {verb} {k.value:g}{origin}, but the port casts to {c.fmt} (line {c.line}), whose largest "
                f"finite value is {nmax:g} on {target.name}: every value between {nmax:g} and {k.value:g} overflows "
                f"(to {overflow} in the simulator; the NKI docs do not promise saturation). Use {nmax:g} for "
                f"{c.fmt}" + (f" (also line(s) {', '.join(map(str, also))})." if also else "."),
                {"constant": k.value, "constant_line": k.line, "constant_text": k.text, "role": k.role,
                 "constant_format": own, "constant_max": k.value, "nki_format": c.fmt, "nki_max": nmax,
                 "cast_line": c.line, "cuda_format": cuda_fmt, "cuda_max": CUDA_FLOAT_MAX.get(cuda_fmt or ""),
                 "cuda_conversion_line": cuda.line if cuda is not None else None,
                 "cuda_saturates": sat, "target": target.name, "root_cause": f"format-range:{k.line}",
                 "also_lines": also},
                f"CUDA {'constant ' + twin.text if twin is not None else cuda.text if cuda else 'kernel'}: "
                f"{cuda_fmt or own} max {k.value:g}",
                category="fp8-range" if c.fmt.startswith("float8") else "overflow-risk",
                fix=f"Scale/clamp to {nmax:g}, the largest finite {c.fmt} value on {target.name}, and clamp "
                    f"(nl.minimum/nl.maximum) before the cast if inputs can exceed the scaled range.")
        else:
            c = above[0]
            yield _finding(
                nf, cf, ck, k.line, cuda_line,
                f"{where} {verb} 240, the largest float8_e4m3 value of trn1/trn2, but the port casts to {c.fmt} "
                f"(line {c.line}), whose largest finite value is {FLOAT_MAX[c.fmt]:g}: the values use part of the "
                f"format's range and keep less precision than they could.",
                {"constant": k.value, "constant_line": k.line, "constant_text": k.text, "role": k.role,
                 "constant_format": "float8_e4m3", "constant_max": 240.0, "nki_format": c.fmt,
                 "nki_max": FLOAT_MAX[c.fmt], "cast_line": c.line, "target": target.name},
                "CUDA kernel", severity=Severity.INFO, category="fp8-range",
                fix=f"Scale to {FLOAT_MAX[c.fmt]:g} for {c.fmt}.")


def _fp16_for_bf16(cf, nf, ck, nk, uses, facts) -> Iterable[Finding]:
    bf16 = _cuda_side(uses, "bfloat16")
    if bf16 is None or any(u.format == "half" for u in uses):
        return
    outputs = {n for r in nk.returns for n in r.names}
    for c in facts.casts:
        if c.fmt != "float16" or (c.kind == "alloc" and c.target in outputs):
            continue
        # the statement to change is the dtype (allocation); the cast is the first instruction writing it
        cast = next((w for w in facts.casts if w.kind == "cast" and w.fmt == "float16" and c.kind == "alloc"
                     and w.target == c.target), c)
        yield _finding(
            nf, cf, ck, c.line, bf16.line,
            f"The CUDA kernel rounds to bfloat16 (`{bf16.text}`, line {bf16.line}: largest finite value 3.39e+38, "
            f"the fp32 range), but the port {'allocates' if c.kind == 'alloc' else 'casts to'} float16 at line "
            f"{c.line}, whose largest finite value is 65504: values the CUDA kernel keeps overflow to inf here.",
            {"nki_format": "float16", "nki_max": FLOAT_MAX["float16"], "cuda_format": "bfloat16",
             "cuda_max": CUDA_FLOAT_MAX["bfloat16"], "cast_line": cast.line, "root_cause": f"format-range:{c.line}"},
            f"{bf16.text}: bfloat16", severity=Severity.WARNING, category="overflow-risk",
            fix="Use nl.bfloat16 like the CUDA kernel (same 2 bytes, fp32 range), or prove the values stay below "
                "65504.")
        return
