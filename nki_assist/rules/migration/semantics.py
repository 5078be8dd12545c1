"""Migration checks of what the port computes (MIG101 bounds guards, MIG102 epilogue and scale factors,
MIG103 unused inputs, MIG106 reduction order, MIG110 offsets)."""

from __future__ import annotations

import math
import re
from typing import Iterable

from ...findings import Finding, Severity
from ...parse import consts
from ...parse.cuda_model import CudaKernel, canonical_dtype
from ...parse.cuda_vocab import SCALE_NAME
from ...parse.nki import proves_divisible
from ...parse.nki_model import NkiKernel
from ..nki.common import inside, tail_claim
from ..nki.tails import has_tail_block
from ..registry import RuleSpec
from .common import CHECKS, Ctx
from .index import check_matmul, evaluator, output_axes
from .pair import PRECISION_BITS, cuda_value_inputs, params_by_name

_CMP = re.compile(r"(<=?|>=?)")


RULES = [  # this module's rules: the registry collects them, docs/rules/ is generated from them
    RuleSpec(
        id="MIG101", name="cuda-bounds-guard-dropped", category="missing-boundary-mask",
        severity=Severity.WARNING, source="migration", languages=("port",),
        summary="The CUDA kernel guards ragged tails (`if (row < M)`), the port floors its trip count with "
                "no mask, min() clamp or divisibility assert.",
        fix="Loop over ceil(n / tile) tiles and clamp the last one (new NKI: min()-bounded slices; legacy: "
            "mask=), or assert the divisibility the port relies on.",
        doc="""\
## What it finds
CUDA kernels guard ragged tails per thread (`if (row < M && col < N)`), so they accept any size. A port that loops `M // 128` times with no mask, no min() clamp and no `assert M % 128 == 0` silently drops the tail.

## Why it matters on Trainium
Trainium has no threads to guard: a tile loop must cover the tail itself. The simulator and hardware give no error; the last `M % 128` rows are simply never written (garbage in a `shared_hbm` output).

## Example
```c
if (row < M && col < N) C[row * N + col] = acc;      // CUDA, line 70
```
```python
for m in nl.affine_range(M // 128):                  # port: tail dropped
```

## Fix
Loop over ceil(n / tile) tiles and clamp the last one (new NKI: min()-bounded slices; legacy: mask=), or assert the divisibility the port relies on.
""",
    ),
    RuleSpec(
        id="MIG102", name="cuda-epilogue-dropped", category="missing-epilogue",
        severity=Severity.ERROR, source="migration", languages=("port",),
        summary="Work the CUDA kernel applies to its output (bias, scale/alpha/beta, activation) has no "
                "counterpart in the port.",
        fix="Apply the missing operation before the output store (activation(op, data, bias=, scale=) fuses "
            "bias, scale and activation in one ScalarE instruction).",
        doc="""\
## What it finds
Bias, scale (alpha/beta) or activation work the CUDA kernel applies to the value it stores, with no counterpart in the port: the paired parameter is missing or never read, or no matching op (`nl.relu`, `op=nl.gelu`, ...) exists.

It also covers a scale applied to an intermediate rather than the stored value: the CUDA kernel multiplies
(or divides) values by a data-independent factor — a local computed from `rsqrtf`/`sqrtf` of a size
(`const float scale = rsqrtf((float)d)`), an inline `* rsqrtf((float)d)`, or a scalar named
scale/alpha/temperature — and the port never scales anything (no `scale=` argument, no multiply or
divide by a sqrt expression, a literal, or a scale-named value or parameter). The finding sits on the NKI
call that consumes the unscaled values (the exp of a softmax, else the first read of the matmul result,
else the output store) and relates the CUDA line that applies the factor.

## Why it matters on Trainium
The port runs and its shapes match, so nothing fails until the numbers are compared; a dropped bias or activation is a silent wrong answer. On Trainium the epilogue is nearly free: `nisa.activation(op, data, bias=, scale=)` fuses it into the PSUM eviction.

## Example
```c
C[row * N + col] = acc + bias[col];                  // CUDA
```
```python
nisa.tensor_copy(dst=res, src=acc)                   # port: bias never added
nisa.dma_copy(dst=out[...], src=res)
```

Attention scores the port forgets to scale by 1/sqrt(d):
```c
const float scale = rsqrtf((float)d);
sc[j] = dot * scale;                                 // CUDA
```
```python
nisa.nc_matmul(dst=scores, stationary=q_sb, moving=k_sb)
nisa.activation(dst=probs, op=nl.exp, data=scores, bias=neg_max)   # no scale=: softmax far too sharp
```

## Fix
Apply the missing operation before the output store (activation(op, data, bias=, scale=) fuses bias, scale and activation in one ScalarE instruction).
""",
    ),
    RuleSpec(
        id="MIG103", name="cuda-input-unused-in-port", category="unused-input",
        severity=Severity.WARNING, source="migration", languages=("port",),
        summary="An input the CUDA kernel reads has no counterpart in the port, or its counterpart is never read.",
        fix="Read the input where the CUDA kernel does, or document why the port does not need it.",
        doc="""\
## What it finds
A value input of the CUDA kernel (pointer or float scalar) that has no counterpart among the port's parameters, or whose counterpart the port never reads. Parameters are paired by name, then by role (A/lhsT, B/rhs, bias, C/out), then by position; the evidence says how.

## Why it matters on Trainium
An unused input means part of the CUDA computation (residual, scale, mask) is missing from the port; the kernel still compiles and runs.

## Example
```c
__global__ void k(const float* x, const float* residual, float* y, int n)
```
```python
def k(x, residual):   # residual never read
```

## Fix
Read the input where the CUDA kernel does, or document why the port does not need it.
""",
    ),
    RuleSpec(
        id="MIG106", name="reduction-order-differs", category="accumulation-order",
        severity=Severity.INFO, source="migration", languages=("port",),
        summary="The CUDA kernel reduces in a tree/atomic/split-K/tensor-core order, the port sequentially in "
                "PSUM: results differ by rounding, within the stated tolerance.",
        fix="Compare GPU and Trainium outputs with the stated relative tolerance, not bitwise.",
        doc="""\
## What it finds
The CUDA kernel reduces with warp-shuffle trees, float atomics (split-K) or tensor-core MMAs; the port accumulates sequentially (PSUM or a reduce instruction). The finding states the tolerance a fair comparison needs: relative differences up to ~2*sqrt(n)*u (u = 2^-24 for fp32 accumulation).

## Why it matters on Trainium
Floating-point addition is not associative. Expect last-bit differences between GPU and Trainium, and between GPU runs when atomics are involved; do not compare bitwise.

## Example
```c
for (int off = 16; off > 0; off >>= 1) s += __shfl_down_sync(~0u, s, off);
```
```python
nisa.tensor_reduce(dst=part, op=nl.add, data=tile, axis=1)
```

## Fix
Compare GPU and Trainium outputs with the stated relative tolerance, not bitwise.
""",
    ),
    RuleSpec(
        id="MIG110", name="matmul-operand-offset-mismatch", category="indexing-error",
        severity=Severity.ERROR, source="migration", languages=("port",),
        summary="A matmul operand tile is loaded at offsets that do not match the contraction or output tile "
                "(wrong loop variable, or offset step different from the tile extent).",
        fix="Index the stationary tile [k-tile, m-tile] and the moving tile [k-tile, n-tile] with the same "
            "contraction offset, and step each offset by its tile extent.",
        doc="""\
## What it finds
A matmul operand loaded from a kernel input at offsets that cannot be right: stationary and moving tiles with different contraction offsets, an output row/column tile index that selects neither operand (every tile gets the same product), or an offset step different from the tile extent (overlap or gaps).

## Why it matters on Trainium
Offsets are ordinary Python arithmetic in NKI: a wrong loop variable compiles, runs and produces plausible numbers. Ports from CUDA are prone to it because `A[row * K + k]` becomes a [K, M] lhsT slice with the axes swapped.

## Example
```python
for m in range(M // 128):
    for n in range(N // 512):
        a_tile = nl.load(lhsT[k * 128 + i_k, n * 128 + i_m])   # should be m * 128
```

## Fix
Index the stationary tile [k-tile, m-tile] and the moving tile [k-tile, n-tile] with the same contraction offset, and step each offset by its tile extent.
""",
    ),
]


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
def _bounds(c: Ctx) -> Iterable[Finding]:
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
def _epilogue(c: Ctx) -> Iterable[Finding]:
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


def _epilogue_fix(c: Ctx, kind: str, what: str) -> str:
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


def _port_scales(c: Ctx, param_counterparts: set[str]) -> bool:
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


def _score_consumer(c: Ctx) -> tuple[int, int | None, str]:
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
def _scale_factors(c: Ctx) -> Iterable[Finding]:
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
def _unused_inputs(c: Ctx) -> Iterable[Finding]:
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


_REDUCE_APIS = ("nisa.tensor_reduce", "nl.sum", "nisa.activation_reduce", "nl.mean", "nisa.bn_stats")


@CHECKS.register("MIG106")
def _order(c: Ctx) -> Iterable[Finding]:
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


@CHECKS.register("MIG110")
def _offsets(c: Ctx) -> Iterable[Finding]:
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
