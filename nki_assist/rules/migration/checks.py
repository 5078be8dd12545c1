"""Pair-level migration checks (MIG1xx): what the CUDA kernel does that the NKI port does not.

Every finding is anchored on the NKI line, names the CUDA line in `related` and in evidence, and says
how CUDA and NKI parameters were paired. A check whose premise cannot be established from the facts
stays silent.
"""

from __future__ import annotations

import math
import re
from typing import Any, Iterable

from ...findings import Finding, RelatedLocation, Severity
from ...api.hardware import LOW_PRECISION_FLOATS, Target
from ...parse import consts
from ...parse.cuda_model import CudaFile, CudaKernel, canonical_dtype
from ...parse.cuda_vocab import FAST_MATH, SCALE_NAME
from ...parse.nki import proves_divisible
from ...parse.nki_model import NkiFile, NkiKernel
from .formats import check_formats
from .index import check_matmul, evaluator, output_axes
from .pair import CUDA_TO_NKI_DTYPE, PRECISION_BITS, Pairing, cuda_accumulators, cuda_outputs, cuda_tile_sizes, cuda_value_inputs, nki_dtype, nki_output_names, output_store, pair_constants, pair_params, params_by_name, pick_cuda_kernel, pick_nki_kernel, transposed_name
from ..nki.tails import has_tail_block
from ..nki.common import allocation_of, defined_outside, fresh_in_loop_before, inside, reads_self, tail_claim
from ..registry import get
from ..runner import Check, CheckSet, crash_message

# The migration checks in registration (= definition) order; run by run_migration_rules.
CHECKS = CheckSet("migration")


class _Ctx:
    def __init__(self, cf: CudaFile, nf: NkiFile, ck: CudaKernel, nk: NkiKernel, target: Target,
                 nki_source: str | None = None):
        self.cf, self.nf, self.ck, self.nk, self.target = cf, nf, ck, nk, target
        self.pairing: Pairing = pair_params(ck, nk)
        pair_constants(self.pairing, cf, ck, nk, nki_source)
        self.store = output_store(nk)

    def finding(self, rule: str, nki_line: int, cuda_line: int, message: str, evidence: dict[str, Any],
                cuda_note: str, *, severity: Severity | None = None, fix: str | None = None,
                column: int | None = None, confidence: str = "high") -> Finding:
        ev = {"cuda_file": self.cf.path, "cuda_line": cuda_line, "cuda_kernel": self.ck.name,
              "nki_kernel": self.nk.name, **evidence}
        fields: dict[str, Any] = dict(file=self.nf.path, line=max(1, nki_line), evidence=ev, confidence=confidence,
                                      related=[RelatedLocation(file=self.cf.path, line=max(1, cuda_line),
                                                               message=cuda_note)])
        if column:
            fields["column"] = column
        if fix is not None:
            fields["fix"] = fix
        return get(rule).finding(message, severity=severity, **fields)

    @property
    def store_line(self) -> int:
        return self.store.line if self.store is not None else self.nk.line


def run_migration_rules(cuda_file: CudaFile, nki_file: NkiFile, target: Target, *,
                        cuda_kernel: str | None = None, nki_kernel: str | None = None,
                        nki_source: str | None = None) -> list[Finding]:
    """MIG1xx findings for the CUDA kernel and its NKI port (empty when either kernel cannot be chosen).
    `nki_source` (the port's text) lets CUDA scalars pair with literals written in the kernel body."""
    ck = pick_cuda_kernel(cuda_file, cuda_kernel)
    nk = pick_nki_kernel(nki_file, nki_kernel)
    if ck is None or nk is None:
        return []
    ctx = _Ctx(cuda_file, nki_file, ck, nk, target, nki_source)

    def crashed(check: Check, exc: Exception) -> Finding:
        return get(check.rules[0]).finding(
            crash_message(check, exc), severity=Severity.INFO, file=nki_file.path, line=nk.line, confidence="low",
            evidence={"internal_error": f"{type(exc).__name__}: {exc}", "check": check.name})

    return CHECKS.run(ctx, on_crash=crashed)


# ---- MIG101 boundary guards --------------------------------------------------------------------

_CMP = re.compile(r"(<=?|>=?)")


def _size_guards(ck: CudaKernel) -> list[tuple[str, int]]:
    """Bounds guards that compare an index with a size parameter (not `v > 0.0f`)."""
    sizes = {p.name for p in ck.params if not p.is_pointer and canonical_dtype(p.type) not in
             ("float", "double", "half", "bfloat16")}
    out = []
    for g in ck.bounds_guards:
        names = set(re.findall(r"[A-Za-z_]\w*", g.expr))
        if _CMP.search(g.expr) and names & sizes:
            out.append((g.expr, g.line))
    # The guard of the output store first: it is the one a port must reproduce.
    stores = [s.line for s in ck.global_stores if s.guarded]
    return sorted(out, key=lambda g: (not any(0 <= s - g[1] <= 3 for s in stores), g[1]))


@CHECKS.register("MIG101")
def _bounds(c: _Ctx) -> Iterable[Finding]:
    guards = _size_guards(c.ck)
    guarded_stores = [s for s in c.ck.global_stores if s.guarded]
    if not guards and not guarded_stores:
        return
    k = c.nk
    for lp in k.loops:
        for num_text, num, den, *_ in lp.floor_divs:
            if consts.as_int(num) is not None:
                continue  # a numeric trip count: NKI203 reports the exact dropped tail
            lin = num if isinstance(num, consts.Lin) else None
            syms = {t for t, _ in lin.terms} if lin is not None else set()
            if lin is not None and consts.as_int(lin.const) == den - 1:
                continue  # ceil-div: the tail tile is visited (its clamping is another matter)
            if proves_divisible(k, num, den) or syms & k.guarded_names or any(inside(g, lp) for g in k.guard_lines):
                continue
            if has_tail_block(k, lp):
                continue  # a partial tile after the loop completes it (NKI207 checks where it starts)
            guard = next(((e, ln) for e, ln in guards if syms & set(re.findall(r"\w+", e))), None)
            guard = guard or (guards[0] if guards else (guarded_stores[0].index, guarded_stores[0].line))
            yield c.finding(
                "MIG101", lp.line, guard[1],
                f"The CUDA kernel guards its tail (`{guard[0]}`, line {guard[1]}) and so accepts any size, but the "
                f"port's loop over `{lp.var}` runs `{lp.trip_expr}` tiles with no mask, min() clamp or assert "
                f"that {den} divides {num_text}: sizes that are not a multiple of {den} lose their last "
                f"{num_text} % {den} elements.",
                {"cuda_guard": guard[0], "loop_var": lp.var, "trip_expr": lp.trip_expr, "tile": den,
                 "numerator": num_text, "claim": tail_claim(lp, num_text, num, den)},
                f"bounds guard `{guard[0]}`", column=lp.col,
                fix=f"Loop `{lp.var}` over ceil({num_text} / {den}) tiles and clamp the last one to {num_text} % {den} "
                    f"elements ({'mask=' if c.nf.dialect == 'legacy' else 'min()-bounded slices'}), as the CUDA guard "
                    f"`{guard[0]}` does, or assert {num_text} % {den} == 0 if the port only supports such sizes.")


# ---- MIG102 / MIG103 epilogue and inputs ---------------------------------------------------------

_ACT_WORDS = {"relu": ("relu", "maximum", "max"), "gelu": ("gelu",), "silu": ("silu", "swish"),
              # A CUDA exp/sigmoid is often the inside of SiLU/GELU/softplus written out by hand; a
              # port calling the fused ScalarE function computes it.
              "sigmoid": ("sigmoid", "silu", "swish"), "tanh": ("tanh", "gelu_apprx_tanh"),
              "exp": ("exp", "softmax", "silu", "swish", "sigmoid", "gelu", "softplus", "elu", "mish", "tanh"),
              "erf": ("erf", "gelu"), "leaky_relu": ("leaky", "lrelu"), "softplus": ("softplus",),
              "mish": ("mish",), "elu": ("elu",)}


def _ops(k: NkiKernel) -> set[str]:
    """Lower-case words naming the operations the kernel performs (api names, op= arguments)."""
    words: set[str] = set()
    for call in k.calls:
        words.add(call.api.split(".")[-1].lower())
        for key, v in call.kwargs.items():
            if key.startswith("op") or key in ("reduce_op",):
                words.add(v.split(".")[-1].lower())
        if call.op:
            words.add(call.op.split(".")[-1].lower())
        if "bias" in call.kwargs:
            words.add("bias=")
        if "scale" in call.kwargs:
            words.add("scale=")
    for a in k.assignments:
        if a.value_kind in ("add", "sub", "mul"):
            words.add({"add": "add", "sub": "subtract", "mul": "multiply"}[a.value_kind])
        if a.op in ("+=", "-=", "*="):
            words.add({"+=": "add", "-=": "subtract", "*=": "multiply"}[a.op])
        text = a.value_text
        if re.search(r"[^*]\*[^*]", text):
            words.add("multiply")
        if "+" in text:
            words.add("add")
    return words


def _has_add(words: set[str]) -> bool:
    return bool(words & {"add", "bias=", "tensor_scalar", "bias_add"})


def _has_mul(words: set[str]) -> bool:
    return bool(words & {"multiply", "mult", "mul", "scale=", "tensor_scalar"})


@CHECKS.register("MIG102")
def _epilogue(c: _Ctx) -> Iterable[Finding]:
    k = c.nk
    words = _ops(k)
    seen: set[str] = set()
    for h in c.ck.epilogue:
        if h.kind == "bias":
            cp = c.ck.param(h.detail)
            counterpart = c.pairing.nki_for(h.detail) if cp else None
            if counterpart and counterpart in k.used_names and _has_add(words):
                continue
            why = (f"the port has no parameter for `{h.detail}`" if not counterpart
                   else f"`{counterpart}` is never read" if counterpart not in k.used_names
                   else "no add of it reaches the output")
            key = f"bias:{h.detail}"
        elif h.kind == "scale":
            counterpart = c.pairing.nki_for(h.detail)
            if (counterpart and counterpart in k.used_names) or (not counterpart and _has_mul(words)):
                continue
            why = (f"`{counterpart}` is never read" if counterpart else
                   f"the port has no parameter for `{h.detail}` and multiplies by nothing")
            key = f"scale:{h.detail}"
        elif h.kind == "activation":
            wanted = _ACT_WORDS.get(h.detail, (h.detail,))
            if any(w in word for w in wanted for word in words):
                continue
            why = f"no {h.detail} is applied (no {' / '.join(wanted)} call or op=)"
            key = f"act:{h.detail}"
            counterpart = None
        else:
            continue
        if key in seen:
            continue
        seen.add(key)
        yield c.finding(
            "MIG102", c.store_line, h.line,
            f"The CUDA kernel applies {h.kind} `{h.detail}` to its output (line {h.line}), but {why}: the "
            f"value the port stores here lacks it.",
            {"epilogue_kind": h.kind, "epilogue_detail": h.detail, "nki_counterpart": counterpart,
             "pairing": c.pairing.describe(h.detail) if h.kind != "activation" else None,
             "pairings": c.pairing.to_json(),
             # the same defect as NKI202/MIG103 on that parameter: one item in the written review
             **({"root_cause": f"unread-input:{counterpart}"} if counterpart and counterpart not in k.used_names
                else {}),
             "claim": {"kind": "output-wrong", "what": f"{h.kind} {h.detail} missing"}},
            f"{h.kind} `{h.detail}` applied here", fix=_epilogue_fix(c, h.kind, counterpart or h.detail))


def _epilogue_fix(c: _Ctx, kind: str, what: str) -> str:
    """Where the missing operation goes in this port: folded into the PSUM evacuation after a matmul,
    else just before the output store."""
    where = (f"when the matmul result is evacuated from PSUM to SBUF (before the store at line {c.store_line})"
             if c.nk.matmuls else f"before the output store at line {c.store_line}")
    if kind == "bias":
        return (f"Add `{what}` {where}: one nisa.activation(..., bias=) or tensor_tensor add (broadcast the row "
                "along the partitions once, outside the loops).")
    if kind == "scale":
        return (f"Multiply by `{what}` {where}: fold it into that copy (scale= of nisa.activation, or a "
                "tensor_scalar multiply), so it costs no extra instruction.")
    return (f"Apply `{what}` {where}: a ScalarE nisa.activation with op=nl.{what} (it can also take the bias and "
            "scale in the same instruction).")


_SQRT_TEXT = re.compile(r"\bsqrt|\brsqrt|\*\*\s*\(?\s*-?\s*0?\.5\b")
_UNIT = {"1", "1.0", "1.", "None"}
_OP_KW = re.compile(r"^op\d*$")
_SCALING_OPS = {"nl.multiply", "nl.divide", "np.multiply", "np.divide"}


def _port_scales(c: _Ctx, param_counterparts: set[str]) -> bool:
    """True when the port scales something by a scale-like value: `scale=` on a call, a multiply or divide
    by a sqrt expression, a numeric literal, or a name bound to one / named like a scale."""
    k = c.nk
    names = {p.name for p in k.params if SCALE_NAME.match(p.name)} | param_counterparts
    for a in k.assignments:
        if _SQRT_TEXT.search(a.value_text) or (SCALE_NAME.match(a.name) and a.value_kind != "alloc"):
            names.add(a.name)
    ident = re.compile(r"\b(?:" + "|".join(map(re.escape, sorted(names))) + r")\b") if names else None

    def scaley(text: str) -> bool:
        if _SQRT_TEXT.search(text) or (ident is not None and ident.search(text)):
            return True
        try:
            return float(text) not in (0.0, 1.0)  # a literal factor (a hard-coded 1/sqrt(64) = 0.125)
        except ValueError:
            return False

    for call in k.calls:
        if "scale" in call.kwargs and call.kwargs["scale"].replace(" ", "") not in _UNIT:
            return True
        ops = {call.op, call.api} | {v for kk, v in call.kwargs.items() if _OP_KW.match(kk)}
        mult = bool(ops & _SCALING_OPS) or any(str(o).endswith(("multiply", "divide")) for o in ops if o)
        if mult and any(scaley(t) for t in list(call.args) + [v for kk, v in call.kwargs.items()
                                                               if not _OP_KW.match(kk) and kk != "dst"]):
            return True
    for a in k.assignments:
        if (a.value_kind == "mul" or a.op in ("*=", "/=") or "/" in a.value_text) and ident is not None \
                and ident.search(a.value_text):
            return True
    return False


def _score_consumer(c: _Ctx) -> tuple[int, int | None, str]:
    """(line, column, what) of the NKI call where scaled values are consumed: the first exp/softmax
    after the first matmul, else the first call reading the matmul result, else the output store."""
    k = c.nk
    mm = min(k.matmuls, key=lambda m: m.call.line) if k.matmuls else None
    after = [x for x in k.calls if mm is None or x.line > mm.call.line]
    for x in after:
        if x.api in ("nl.exp", "nl.softmax") or (x.op or "").endswith(("exp", "softmax")):
            return x.line, x.col, f"`{x.api}` (the softmax exponent)"
    if mm is not None:
        dst = mm.dst.name if mm.dst is not None else mm.call.target
        for x in after:
            if dst and dst in x.names:
                return x.line, x.col, f"`{x.api}` (the first read of the matmul result `{dst}`)"
    return c.store_line, None, "the output store"


@CHECKS.register("MIG102")
def _scale_factors(c: _Ctx) -> Iterable[Finding]:
    uses = c.ck.scale_uses
    if not uses:
        return
    hinted = {h.detail for h in c.ck.epilogue if h.kind == "scale"}  # checked by _epilogue
    counterparts = {n for f in {u.factor for u in uses} if (n := c.pairing.nki_for(f))}
    if _port_scales(c, counterparts):
        return
    for u in uses:
        if u.factor in hinted:
            continue
        cp = c.ck.param(u.factor) if u.origin == "parameter" else None
        if cp is not None and c.pairing.nki_for(u.factor) in c.nk.used_names:
            continue
        line, col, what = _score_consumer(c)
        origin = f"`{u.factor}` = `{u.origin}` (line {u.factor_line})" if u.origin not in ("parameter", u.factor) \
            else f"`{u.factor}`"
        yield c.finding(
            "MIG102", line, u.line,
            f"The CUDA kernel scales `{u.target}` by {origin} at line {u.line}, but the port never multiplies by a "
            f"scale (no `scale=`, no multiply or divide by a sqrt, a literal or a scale-named value): {what} "
            "consumes unscaled values.",
            {"epilogue_kind": "scale", "epilogue_detail": u.factor, "cuda_factor": u.origin,
             "cuda_factor_line": u.factor_line, "cuda_target": u.target, "nki_counterpart": None,
             "pairings": c.pairing.to_json(), "claim": {"kind": "output-wrong", "what": f"scale {u.factor} missing"}},
            f"`{u.target}` scaled by `{u.factor}`", column=col,
            fix=(f"Multiply the matmul result by {origin} when it is evacuated from PSUM to SBUF (scale= of the "
                 f"nisa.activation that copies it, or a tensor_scalar multiply), before {what}." if c.nk.matmuls else
                 f"Multiply by {origin} before {what}."))
        return  # one finding per kernel: the port applies no scale at all


@CHECKS.register("MIG103")
def _unused_inputs(c: _Ctx) -> Iterable[Finding]:
    k = c.nk
    epi = {h.detail for h in c.ck.epilogue if h.kind in ("bias", "scale")}
    nparams = params_by_name(k)
    for cp in cuda_value_inputs(c.ck):
        if cp.name in epi:
            continue  # reported by MIG102 as the missing operation
        n = c.pairing.nki_for(cp.name)
        if n is None and cp.name in c.pairing.constants:
            continue  # the launcher's literal is baked into the port as the same value
        if n is None:
            if not cp.is_pointer and len(k.params) >= len(cuda_value_inputs(c.ck)):
                continue  # scalars are often baked in as constants
            yield c.finding(
                "MIG103", k.line, cp.line,
                f"CUDA input `{cp.name}` ({cp.type}{'*' if cp.is_pointer else ''}, line {cp.line}) has no "
                f"counterpart among the port's parameters ({', '.join(p.name for p in k.params) or 'none'}).",
                {"cuda_param": cp.name, "pairings": c.pairing.to_json(),
                 "claim": {"kind": "input-unused", "cuda_param": cp.name, "pointer": cp.is_pointer}},
                f"input `{cp.name}`", severity=Severity.WARNING, confidence="medium",
                fix=f"Give the port a parameter (or a constant) for `{cp.name}` and apply it where the CUDA kernel "
                    f"reads it (line {cp.line}).")
        elif n not in k.used_names:
            p = nparams[n]
            yield c.finding(
                "MIG103", p.line, cp.line,
                f"`{n}` is the port's counterpart of CUDA input `{cp.name}` ({c.pairing.describe(cp.name)}), "
                f"which the CUDA kernel reads, but the port never reads it.",
                {"cuda_param": cp.name, "nki_param": n, "paired_by": c.pairing.how[cp.name],
                 "root_cause": f"unread-input:{n}",
                 "claim": {"kind": "input-unused", "cuda_param": cp.name, "nki_param": n, "pointer": cp.is_pointer}},
                f"input `{cp.name}`", column=p.col,
                fix=f"Read `{n}` where the CUDA kernel reads `{cp.name}` (line {cp.line}).")


# ---- MIG104 / MIG105 precision ------------------------------------------------------------------

def _nki_accumulators(k: NkiKernel) -> list[tuple[str, str, int, str]]:
    """(name, dtype, line, where) of running sums in the port: SBUF `+=` in loops and matmul PSUM tiles."""
    out = []
    for w in k.assignments:
        if not w.loops or not reads_self(w):
            continue
        if not (w.op in ("+=", "-=") or w.value_kind in ("add", "sub", "matmul")):
            continue
        a = allocation_of(k, w.name, w.line)
        if a is None or a.dtype is None:
            continue
        if any(defined_outside(k, w.name, lp) and not fresh_in_loop_before(k, w, lp)
               and lp.id not in w.index_dep_loops for lp in w.loops):
            out.append((w.name, a.dtype, w.line, a.buffer))
    for mm in k.matmuls:
        d = mm.dst
        if d is not None and d.dtype and mm.call.loops:
            out.append((d.name or "?", d.dtype, mm.call.line, d.buffer or "psum"))
    return out


@CHECKS.register("MIG104")
def _accumulation(c: _Ctx) -> Iterable[Finding]:
    caccs = cuda_accumulators(c.cf, c.ck)
    naccs = _nki_accumulators(c.nk)
    if not caccs or not naccs:
        return
    cdt = {a.dtype for a in caccs}
    if cdt & {"float", "double"}:
        ca = next(a for a in caccs if a.dtype in ("float", "double"))
        for name, dt, line, buf in naccs:
            if dt in LOW_PRECISION_FLOATS:
                yield c.finding(
                    "MIG104", line, ca.line,
                    f"The CUDA kernel accumulates `{ca.name}` in {ca.dtype} (line {ca.line}); the port keeps the "
                    f"running sum `{name}` in {dt} ({buf.upper()}): {PRECISION_BITS.get(dt, '?')} significant bits "
                    f"instead of 24, so the error grows with the reduction length.",
                    {"cuda_accumulator": ca.name, "cuda_dtype": ca.dtype, "nki_accumulator": name, "nki_dtype": dt,
                     "buffer": buf, "nki_bits": PRECISION_BITS.get(dt), "cuda_bits": 24 if ca.dtype == "float" else 53},
                    f"{ca.dtype} accumulator `{ca.name}`",
                    fix=(f"Allocate the PSUM accumulator `{name}` as nl.float32 (the matmul accumulates in it) and "
                         "cast once when evacuating it to SBUF." if buf == "psum" else
                         f"Allocate `{name}` as nl.float32, as CUDA's `{ca.name}` is {ca.dtype}, and cast to {dt} "
                         "once after the loop."))
                return
    elif cdt and cdt <= {"half", "bfloat16"}:
        ca = caccs[0]
        for name, dt, line, buf in naccs:
            if dt in ("float32", "float64"):
                yield c.finding(
                    "MIG105", line, ca.line,
                    f"The CUDA kernel accumulates `{ca.name}` in {ca.dtype} (line {ca.line}); the port accumulates "
                    f"`{name}` in {dt}. The port is the more accurate one: expect GPU outputs to differ by "
                    f"{ca.dtype} rounding of the partial sums.",
                    {"cuda_accumulator": ca.name, "cuda_dtype": ca.dtype, "nki_accumulator": name, "nki_dtype": dt},
                    f"{ca.dtype} accumulator `{ca.name}`", severity=Severity.INFO)
                return


@CHECKS.register("MIG105")
def _output_dtype(c: _Ctx) -> Iterable[Finding]:
    outs = cuda_outputs(c.ck)
    names = nki_output_names(c.nk)
    if len(outs) != 1 or not names:
        return
    cp = outs[0]
    cdt = CUDA_TO_NKI_DTYPE.get(canonical_dtype(cp.type) or "")
    allocs = [a for n in names if (a := allocation_of(c.nk, n)) is not None and a.dtype]
    if cdt is None or len(allocs) != 1:
        return
    a = allocs[0]
    ndt = nki_dtype(a.dtype)
    if ndt == cdt or ndt not in PRECISION_BITS:
        return
    lower = PRECISION_BITS[ndt] < PRECISION_BITS.get(cdt, 0)
    yield c.finding(
        "MIG105", a.line, cp.line,
        f"The CUDA kernel writes `{cp.name}` as {cp.type} ({cdt}); the port's output `{a.name}` is {ndt}"
        + (": results are rounded to fewer bits than the GPU produces." if lower else
           ": wider than the GPU output, so a bitwise comparison cannot match."),
        {"cuda_output": cp.name, "cuda_dtype": cdt, "nki_output": a.name, "nki_dtype": ndt},
        f"output `{cp.name}` ({cp.type})", severity=Severity.WARNING if lower else Severity.INFO, column=a.col)


# ---- MIG106 reduction order ----------------------------------------------------------------------

_REDUCE_APIS = ("nisa.tensor_reduce", "nl.sum", "nisa.activation_reduce", "nl.mean", "nisa.bn_stats")


@CHECKS.register("MIG106")
def _order(c: _Ctx) -> Iterable[Finding]:
    ck = c.ck
    kinds = []
    if any(re.search(r"shfl_(down|xor)|reduce_add", w.op) for w in ck.warp_shuffles):
        w = next(w for w in ck.warp_shuffles if re.search(r"shfl_(down|xor)|reduce_add", w.op))
        kinds.append(("warp-shuffle tree reduction", w.line))
    fl_atomics = [a for a in ck.atomics if a.op == "add" and canonical_dtype(a.dtype) in ("float", "half", "bfloat16", "double")]
    if fl_atomics:
        split = any(re.search(r"split|gridDim\.z|blockIdx\.z", p.name + " " + a.target)
                    for p in ck.params for a in fl_atomics) or any(t.builtin == "blockIdx.z" for t in ck.thread_index_uses)
        kinds.append(("split-K partial sums combined with atomicAdd" if split else
                      "atomicAdd (order varies from run to run)", fl_atomics[0].line))
    if ck.tensor_core:
        kinds.append(("tensor-core MMA (blocked partial sums)", ck.tensor_core[0].line))
    if not kinds:
        return
    nk = c.nk
    anchors = [(m.call.line, "sequential PSUM accumulation of nc_matmul/matmul partial products") for m in nk.matmuls]
    anchors += [(call.line, f"sequential {call.api} reduction") for call in nk.calls if call.api in _REDUCE_APIS]
    if not anchors:
        return
    line, how = min(anchors)
    acc_dt = "float32"
    u = 2.0 ** -PRECISION_BITS[acc_dt]
    example = {str(n): float(f"{2 * math.sqrt(n) * u:.3g}") for n in (1024, 4096, 65536)}
    what, cline = kinds[0]
    yield c.finding(
        "MIG106", line, cline,
        f"The CUDA kernel reduces with a {what} (line {cline}); the port uses {how}. The summation order "
        f"differs, so outputs agree only to rounding: relative differences up to ~2*sqrt(n)*u with "
        f"u = 2^-24 for fp32 accumulation (n = 4096 -> {example['4096']:.2g}), not bitwise.",
        {"cuda_reduction": what, "nki_reduction": how, "accumulation_dtype": acc_dt, "unit_roundoff": u,
         "tolerance_formula": "rtol ~ 2 * sqrt(n) * u", "rtol_for_n": example,
         "all_cuda_reductions": [k for k, _ in kinds]},
        what)


# ---- MIG107 activation approximations ---------------------------------------------------------

_INTRINSIC_FN = {"__expf": "exp", "__exp10f": "exp", "hexp": "exp", "h2exp": "exp", "__logf": "log",
                 "__log2f": "log", "__log10f": "log", "hlog": "log", "h2log": "log", "__sinf": "sin",
                 "__cosf": "cos", "__sincosf": "sin", "__tanf": "tan", "__tanhf": "tanh", "htanh_approx": "tanh",
                 "rsqrtf": "rsqrt", "rsqrt": "rsqrt", "hrsqrt": "rsqrt", "h2rsqrt": "rsqrt",
                 "__fdividef": "divide", "hrcp": "reciprocal", "h2rcp": "reciprocal", "__powf": "power",
                 "tanhf": "gelu", "tanh": "gelu"}
GELU_ERF_VS_TANH_MAX_ABS = 4.73e-4  # max |gelu_erf(x) - gelu_tanh(x)|, at x ~ -2.70 (computed)


@CHECKS.register("MIG107")
def _activations(c: _Ctx) -> Iterable[Finding]:
    nk = c.nk
    reported: set[str] = set()
    for fm in c.ck.fast_math:
        approx, note = FAST_MATH.get(fm.intrinsic, (False, ""))
        fn = _INTRINSIC_FN.get(fm.intrinsic)
        if not approx or fn is None or fn in reported:
            continue
        for call in nk.calls:
            names = [call.api.split(".")[-1].lower()] + [v.split(".")[-1].lower() for key, v in call.kwargs.items()
                                                        if key.startswith("op")] + ([call.op.split(".")[-1].lower()] if call.op else [])
            hit = next((n for n in names if fn in n or (fn == "reciprocal" and n == "divide")
                        or (fn == "divide" and n == "reciprocal")), None)
            if hit is None:
                continue
            reported.add(fn)
            ev: dict[str, Any] = {"cuda_intrinsic": fm.intrinsic, "cuda_note": note, "nki_function": hit,
                                  "nki_api": call.api}
            if fn == "gelu":
                tanh_form = "tanh" in hit or "apprx" in hit
                ev["gelu_forms"] = {"cuda": "tanh approximation", "nki": "tanh approximation" if tanh_form else "erf"}
                if not tanh_form:
                    ev["max_abs_difference"] = GELU_ERF_VS_TANH_MAX_ABS
                msg = (f"The CUDA kernel computes GELU with the tanh approximation (`{fm.intrinsic}`, line {fm.line}); "
                       + (f"the port's `{hit}` is the same form but evaluated by a ScalarE polynomial: expect "
                          "ULP-level differences." if tanh_form else
                          f"the port's `{hit}` is the erf form. The two formulas differ by up to "
                          f"{GELU_ERF_VS_TANH_MAX_ABS:.2g} absolute (at x ~ -2.7), before any rounding; use "
                          "nl.gelu_apprx_tanh to match the GPU or widen atol to >= 5e-4."))
            else:
                msg = (f"The CUDA kernel uses the fast-math intrinsic `{fm.intrinsic}` (line {fm.line}: {note}); the "
                       f"port's `{hit}` runs on ScalarE as a piecewise polynomial. Neither is correctly rounded, and "
                       "they differ from each other and from NumPy at the ULP level (more for large arguments).")
            if fn == "gelu" and not ev["gelu_forms"]["nki"].startswith("tanh"):
                fix = (f"Use nl.gelu_apprx_tanh (the tanh form of `{fm.intrinsic}`) instead of `{hit}`, or widen atol "
                       "to >= 5e-4.")
            else:
                fix = (f"Compare with a tolerance that covers both approximations (`{fm.intrinsic}` on the GPU, the "
                       f"ScalarE `{hit}` on Trainium): a few ULP, more for large arguments; bitwise equality is not "
                       "expected.")
            yield c.finding("MIG107", call.line, fm.line, msg, ev, f"fast-math `{fm.intrinsic}`", column=call.col,
                            fix=fix)
            break
    if "gelu" not in reported:
        yield from _gelu_erf_vs_tanh(c)


def _gelu_erf_vs_tanh(c: _Ctx) -> Iterable[Finding]:
    """CUDA computes the exact erf GELU; the port calls the tanh approximation (a formula change)."""
    erf = next((h for h in c.ck.epilogue if h.kind == "activation" and h.detail == "erf"), None)
    if erf is None:
        return
    for call in c.nk.calls:
        names = [call.api.split(".")[-1].lower()] + [v.split(".")[-1].lower() for key, v in call.kwargs.items()
                                                    if key.startswith("op")] + ([call.op.split(".")[-1].lower()] if call.op else [])
        hit = next((n for n in names if "gelu" in n and ("tanh" in n or "apprx" in n)), None)
        if hit is None:
            continue
        yield c.finding(
            "MIG107", call.line, erf.line,
            f"The CUDA kernel computes GELU in the exact erf form (line {erf.line}); the port's `{hit}` is the tanh "
            f"approximation. The two formulas differ by up to {GELU_ERF_VS_TANH_MAX_ABS:.2g} absolute (at x ~ -2.7) "
            "before any rounding, and the model was trained with the erf form: use nl.gelu.",
            {"cuda_function": "erf", "nki_function": hit, "nki_api": call.api,
             "gelu_forms": {"cuda": "erf", "nki": "tanh approximation"},
             "max_abs_difference": GELU_ERF_VS_TANH_MAX_ABS},
            "exact erf GELU", severity=Severity.WARNING, column=call.col,
            fix=f"Call nl.gelu (the erf form the CUDA kernel computes) instead of `{hit}`.")
        return


# ---- MIG108 tile sizes carried over ----------------------------------------------------------

@CHECKS.register("MIG108")
def _tile_sizes(c: _Ctx) -> Iterable[Finding]:
    tiles = cuda_tile_sizes(c.cf, c.ck)
    if not tiles:
        return
    pmax = c.target.partitions
    seen = set()
    for mm in c.nk.matmuls:
        for dim, val, limit, what in (("K", mm.K, pmax, "contraction (partition) size"),
                                      ("M", mm.M, pmax, "stationary free size (output partitions)")):
            if not isinstance(val, int) or val >= limit or val not in tiles or (dim, val) in seen:
                continue
            seen.add((dim, val))
            where, cline = tiles[val]
            yield c.finding(
                "MIG108", mm.call.line, cline,
                f"The matmul's {what} is {val}, the CUDA kernel's shared-memory tile ({where}, line {cline}); the "
                f"Tensor Engine takes {limit}, so each matmul uses {val}/{limit} = {val / limit:.0%} of the PE "
                f"{'rows' if dim == 'K' else 'columns'}.",
                {"dim": dim, "value": val, "limit": limit, "cuda_tile": where, "utilization": round(val / limit, 3)},
                f"CUDA tile {where}", column=mm.call.col)


# ---- MIG109 layout change ----------------------------------------------------------------------

@CHECKS.register("MIG109")
def _layout(c: _Ctx) -> Iterable[Finding]:
    stationary = {mm.stationary.name for mm in c.nk.matmuls if mm.stationary}
    loaded_from = {}
    for call in c.nk.calls:
        src = call.operand("src")
        dst = call.operand("dst")
        if src is not None and src.is_param:
            loaded_from[call.target or (dst.name if dst else None)] = src.name
    st_params = {loaded_from.get(s) for s in stationary} - {None}
    nparams = params_by_name(c.nk)
    for cp in cuda_value_inputs(c.ck):
        n = c.pairing.nki_for(cp.name)
        if not n or not cp.is_pointer or transposed_name(cp.name) or not transposed_name(n):
            continue
        if st_params and n not in st_params and not any(n == s for s in stationary):
            continue
        p = nparams[n]
        yield c.finding(
            "MIG109", p.line, cp.line,
            f"The CUDA kernel reads `{cp.name}` in its own layout ({cp.type}*, line {cp.line}); the port takes "
            f"`{n}`, the transposed layout the Tensor Engine wants for the stationary operand "
            f"({c.pairing.describe(cp.name)}). The caller must pass {cp.name}.T (a host-side transpose per call), "
            "or the kernel must transpose on chip.",
            {"cuda_param": cp.name, "nki_param": n, "paired_by": c.pairing.how[cp.name]},
            f"`{cp.name}` in CUDA layout", column=p.col)


# ---- MIG110 operand offsets ----------------------------------------------------------------------

@CHECKS.register("MIG110")
def _offsets(c: _Ctx) -> Iterable[Finding]:
    ev = evaluator(c.nk)
    oax = output_axes(c.nk, c.store, ev)
    cuda_line = c.ck.global_stores[0].line if c.ck.global_stores else c.ck.line
    seen = set()
    for mm in c.nk.matmuls:
        for p in check_matmul(c.nk, mm, ev, oax):
            key = (p["line"], p["evidence"]["kind"])
            if key in seen:
                continue
            seen.add(key)
            yield c.finding("MIG110", p["line"], cuda_line, p["message"],
                            {**p["evidence"], "claim": {"kind": "output-wrong", "what": p["evidence"]["kind"]}},
                            "the CUDA kernel's output indexing", fix=p.get("fix"), confidence="medium"
                            if p["evidence"]["kind"] == "offset-step" else "high")


# ---- MIG111 fp32 matmul operands inherited from the CUDA float buffers ----------------------------

def _operand_source(k: NkiKernel, name: str, before: int) -> tuple[str, int] | None:
    """(NKI param, line) when tile `name` holds a param's values in the param's own dtype: a legacy
    `nl.load(param[...])` with no dtype=, or a tile allocated with `dtype=param.dtype` and filled by a copy
    from the param. None when the tile is cast or its origin is not that simple."""
    loads = [c for c in k.calls if c.line <= before and c.api in ("nl.load", "nisa.dma_copy")
             and (c.target == name or ((d := c.operand("dst")) is not None and d.name == name))]
    if not loads:
        return None
    ld = max(loads, key=lambda c: c.line)
    src = ld.operand("src")
    if src is None or not src.is_param or getattr(ld, "_kw_dtype", None) or "dtype" in ld.kwargs:
        return None
    if ld.api == "nisa.dma_copy":
        alloc = allocation_of(k, name, before)
        call = next((c for c in k.calls if c.line == getattr(alloc, "line", -1) and c.target == name), None)
        if call is None or call.kwargs.get("dtype", "").replace(" ", "") != f"{src.name}.dtype":
            return None
    return src.name, ld.line


@CHECKS.register("MIG111")
def _fp32_operands(c: _Ctx) -> Iterable[Finding]:
    cuda_of = {n: cn for cn, n in c.pairing.pairs.items()}
    t = c.target
    rate = round(t.peak_bf16_flops / t.peak_fp32_flops)
    for mm in c.nk.matmuls:
        hits = []
        for op in (mm.stationary, mm.moving):
            if op is None or op.name is None or op.dtype is not None:
                continue  # a known dtype is NKI302's business
            src = (op.name, mm.call.line) if op.is_param else _operand_source(c.nk, op.name, mm.call.line)
            cp = c.ck.param(cuda_of.get(src[0], "")) if src else None
            if cp is None or not cp.is_pointer or CUDA_TO_NKI_DTYPE.get(canonical_dtype(cp.type) or "") != "float32":
                continue
            hits.append((op.name, src[0], cp))
        if not hits:
            continue
        names = ", ".join(f"`{o}` (from `{p}`)" for o, p, _ in hits)
        cp = hits[0][2]
        yield c.finding(
            "MIG111", mm.call.line, cp.line,
            f"`{mm.call.api}` multiplies {names} in float32, the dtype of the CUDA `{cp.type}*` input "
            f"`{cp.name}` (line {cp.line}): the Tensor Engine runs fp32 at {t.peak_fp32_flops / 1e12:.1f} TFLOPS "
            f"vs {t.peak_bf16_flops / 1e12:.1f} for bf16 on {t.name} ({rate}x slower); PSUM accumulates in fp32 "
            "either way.",
            {"operands": [o for o, _, _ in hits], "nki_params": [p for _, p, _ in hits],
             "cuda_params": [x.name for _, _, x in hits], "dtype": "float32",
             "claim": {"kind": "operand-dtype", "nki_params": [p for _, p, _ in hits], "dtype": "float32",
                       "matmul_line": mm.call.line},
             "fp32_tflops": round(t.peak_fp32_flops / 1e12, 1), "bf16_tflops": round(t.peak_bf16_flops / 1e12, 1)},
            f"fp32 input `{cp.name}`", column=mm.call.col, confidence="medium")


@CHECKS.register("MIG112")
def _formats(c: _Ctx) -> Iterable[Finding]:
    return check_formats(c.cf, c.nf, c.ck, c.nk, c.target)
