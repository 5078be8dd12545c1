"""Numerical-accuracy rules: low-precision accumulators, exp overflow, variance cancellation,
activation valid ranges, fp8 variants."""

from __future__ import annotations

import re

from ...api.hardware import ACTIVATION_VALID_RANGE, FP8_MAX, LOW_PRECISION_FLOATS, Target
from ...findings import RelatedLocation, Severity
from ...parse.nki_model import NkiFile
from ..registry import RuleSpec
from .common import allocation_of, check, defined_outside, emit, fresh_in_loop_before, loop_label, reads_self

RULES = [  # this module's rules: the registry collects them, docs/rules/ is generated from them
    RuleSpec("NKI401", "low-precision-sbuf-accumulator", "low-precision-accumulation", Severity.WARNING,
             "A bf16/fp16/fp8 SBUF tile accumulates a sum across loop iterations.",
             fix="Accumulate in a float32 tile (or in PSUM) and cast once after the loop.",
             doc="""\
## What it finds
A bfloat16/float16/fp8 SBUF tile that is defined before a loop and accumulates a sum in it (`acc += x`, `nisa.tensor_tensor(dst=acc, data1=acc, ..., op=nl.add)`).
Also a bfloat16/float16 PSUM tile defined before a loop that is the accumulating matmul destination in it
(`nisa.nc_matmul(dst=acc, ...)` or `acc += nl.matmul(...)`): the Tensor Engine adds in fp32 but rounds the
sum to the tile's dtype on every write, so each K tile's partial sum is rounded.

## Why it matters on Trainium
Vector and Scalar engines compute in fp32 but round the result to the destination dtype on every write. A bf16 running sum keeps 8 significant bits: after a few hundred additions, small terms stop changing it at all. CUDA kernels typically accumulate in fp32 registers.

## Example
```python
acc = nl.zeros((nl.par_dim(128), 512), dtype=nl.bfloat16, buffer=nl.sbuf)
for k in nl.sequential_range(16):
    acc += nl.load(a[k * 128:(k + 1) * 128, 0:512])
```

## Fix
When the running sum adds matmul results (a K loop), accumulate in PSUM: allocate the accumulator with
`buffer=nl.psum, dtype=nl.float32`; the Tensor Engine adds into fp32 PSUM as it multiplies, which also
removes a Vector Engine add per K tile. Copy it to bf16 once after the loop. For other sums, accumulate
in a float32 SBUF tile and convert to bf16 once after the loop.
"""),
    RuleSpec("NKI402", "exp-without-max-subtraction", "overflow-risk", Severity.WARNING,
             "exp() of data with no preceding max reduction: large inputs overflow to inf.",
             fix="Subtract the row max first: exp(x - max(x)) (e.g. activation(exp, x, bias=-max)).",
             doc="""\
## What it finds
`nl.exp` or `nisa.activation(op=nl.exp)` with no max reduction (`nl.max`, `tensor_reduce(op=nl.max)`, `max8`) earlier in the kernel, no `bias=` and no subtraction in the argument. When the activation multiplies by a tensor `scale=`, the exponent's sign depends on data the code does not show (state-space models compute exp(delta * A) with A < 0): that case is a low-confidence info saying what to check. An exp whose operand was written one instruction earlier by a subtraction (`tensor_tensor(..., op=nl.subtract)`, `tensor_scalar(op0=nl.subtract, operand0=lse)`) or the add of a negated max is not reported.
When the argument is a running sum over a loop that the exp sits in or follows (`cum += x` or
`tensor_tensor(dst=cum, data1=cum, ...)`, a cumulative decay), the message names the loop: the exponent
grows with the trip count, and the fix keeps it bounded (a running max, or per-step factors).
When the operand is a cumulative sum that the kernel receives or computes (a tensor named like one, `g_cumsum`,
`prefix_sum`, or an `nl.cumsum` result), reached through copies, loads, transposes and multiplications by a
constant (`tensor_scalar(op0=nl.multiply, operand0=-1.0)`, `scale=-1.0`, a leading `-`), the finding names it
(`bias=None` shifts nothing): exp of the negated cumulative sum is a warning (for log-decay terms, <= 0, the
gated-attention form, it grows with the position: exp(-g_cumsum) overflows float32 after ~30 steps of -3), exp of
the cumulative sum itself is an info (bounded by 1 exactly when the terms are <= 0, which the code does not show).
Differences of it (`g_last - g_cumsum`, clamped `cum[i] - cum[j]`) are bounded and not reported.

In `review`, the simulator's value ranges back the claim: the message gains, per size that ran, the
largest argument reached and its margin to fp32 overflow (88.72) and to the output dtype's limit; an
argument that passed it confirms the finding and links it to the NUM104 it caused; for a running sum the
largest size's maximum is extrapolated linearly with the trip count to 2x the size, saying whether exp
would overflow there (docs/simulator.md "Value ranges").

## Why it matters on Trainium
exp overflows float32 above about 88.7. Softmax and attention kernels without the max subtraction produce inf and then NaN on realistic logits, while the CUDA reference (which subtracts the max) does not.

## Example
```python
e = nl.exp(x)   # no row max subtracted
```

## Fix
Subtract the row max first: `m = nl.max(x, axis=1)`, then `nl.exp(nl.subtract(x, m))`, or fold it into `nisa.activation(op=nl.exp, data=x, bias=-m)`.
""", emits=(Severity.INFO,)),
    RuleSpec("NKI403", "variance-cancellation", "catastrophic-cancellation", Severity.WARNING,
             "Variance computed as E[x^2] - E[x]^2, which cancels catastrophically when |mean| >> std (bf16 and fp32).",
             fix="Use nisa.bn_stats/bn_aggr, or subtract the mean first and average (x - mean)^2 in fp32.",
             doc="""\
## What it finds
A subtraction of the form E[x^2] - E[x]^2: a reduction of squared values (`tensor_reduce`/`nl.sum`/`nl.mean` of a square, or the `reduce_res=` of `activation(_reduce)(op=nl.square, reduce_op=nl.add)`) minus the square of a reduction, as an expression, `nl.subtract` or `tensor_tensor(op=nl.subtract)`. The reductions may write tensor views (`v.get_view()` as the destination, nki-library's TensorView) and may be completed by a matmul against a constant (`nc_matmul(dst=m, stationary=ones_over_h, moving=sums)`, the Tensor Engine's cross-partition average): the result keeps the sum's meaning, and a view reused for the squared mean takes the new one. Confidence is high for bf16/fp16/fp8 operands and medium for float32 or unknown dtypes.

## Why it matters on Trainium
When the mean is large compared with the spread, the two terms are nearly equal and the subtraction cancels almost all significant bits. The relative error of the difference is about eps * (1 + mean^2/var): in bf16 every bit is gone once |mean|/std reaches ~16, in float32 once it reaches ~4096 (layer-norm inputs with a large DC offset get there). The variance can then come out zero or negative, and rsqrt gives inf/NaN. CUDA layer norms use Welford or a centred second pass for this reason, so a port that switches to the one-pass form loses accuracy the original had.

## Example
```python
mean = nl.mean(x, axis=1)
ex2 = nl.mean(nl.square(x), axis=1)
var = ex2 - mean * mean
```

## Fix
Use `nisa.bn_stats`/`bn_aggr`, or subtract the mean first and average `(x - mean)^2` in float32.
"""),
    RuleSpec("NKI404", "activation-valid-range", "activation-approximation", Severity.WARNING,
             "A ScalarE activation with a documented valid input range (sin, arctan, log, sqrt, rsqrt, "
             "reciprocal) gets input that is not range-reduced or guarded.",
             fix="Range-reduce or clamp the input first, or use the nl.* form that range-reduces (nl.sin).",
             doc="""\
## What it finds
`nisa.activation` with a function whose ScalarE approximation has a documented valid input range: sin [-pi, pi], arctan [-pi/2, pi/2] (warning), and log, sqrt, rsqrt, reciprocal (info). A `sin` whose operand went through a modulo before the call (`(x + pi) % 2pi - pi` via an ISA `mod` op or a helper named like one) is range-reduced and not reported.

In `review`, the simulator counts the arguments each activation line actually received outside that
range: any at all confirm the finding with the count and the range reached (error for sin and arctan,
warning for the others); arguments all inside it are reported as measured, and the static claim stands.

## Why it matters on Trainium
ScalarE evaluates these functions with piece-wise polynomials. Outside the valid range the output is simply wrong: `activation(op=nl.sin)` on 9.0 returns about 27.65. The CUDA `sinf` range-reduces, so the port diverges only for large inputs.

## Example
```python
s = nisa.activation(op=nl.sin, data=x)   # no range reduction
```

## Fix
Range-reduce or clamp the input first, or use `nl.sin`, which adds range reduction.
""", emits=(Severity.INFO,)),
    RuleSpec("NKI405", "fp8-variant-unsupported", "fp8-range", Severity.ERROR,
             "float8_e4m3fn (OCP, max 448) is used on a target whose TensorE supports only float8_e4m3 (max 240).",
             fix="Use nl.float8_e4m3 with a scale that keeps values within 240, or target trn3.",
             doc="""\
## What it finds
`float8_e4m3fn` (OCP fp8, max 448) used for a tile or a load on a target whose Tensor Engine supports only Neuron's `float8_e4m3` (max 240): trn1 and trn2.

## Why it matters on Trainium
The two fp8 formats differ in range and special values. trn1/trn2 reject e4m3fn matmul operands, and values quantised for a 448 range overflow a 240 range.

## Example
```python
st = nl.ndarray((128, 128), dtype=nl.float8_e4m3fn, buffer=nl.sbuf)   # trn2
```

## Fix
Use `nl.float8_e4m3` with a scale that keeps values within 240, or target trn3.
"""),
]

_MAX_APIS = {"nl.max", "nisa.max8", "nl.amax", "nl.reduce_max"}
_ACT_APIS = {"nisa.activation", "nisa.activation_reduce"}
_SIG_BITS = {"bfloat16": 8, "float16": 11, "float8_e4m3": 4, "float8_e4m3fn": 4, "float8_e5m2": 3}  # incl. the implicit bit


@check("NKI401")
def low_precision_acc(nf: NkiFile, t: Target):
    for k in nf.kernels:
        for w in k.assignments:
            if not w.loops:
                continue
            a = allocation_of(k, w.name, w.line)
            if a is None or a.dtype not in LOW_PRECISION_FLOATS:
                continue
            # a matmul whose destination is a bf16 PSUM tile accumulates there however it is written
            # (`nisa.nc_matmul(dst=acc, ...)` reads nothing): each accumulate rounds to the tile's dtype
            psum_mm = a.buffer == "psum" and w.value_kind == "matmul" and (w.op in ("+=", "call"))
            if not psum_mm and (not reads_self(w) or not (w.op in ("+=", "-=") or w.value_kind in ("add", "sub"))
                                or a.buffer not in ("sbuf", "unknown")):
                continue
            for lp in reversed(w.loops):
                if lp.id in w.index_dep_loops or not defined_outside(k, w.name, lp) or fresh_in_loop_before(k, w, lp):
                    continue
                if psum_mm:
                    yield _at_alloc(nf.path, a, emit("NKI401", nf, w.line, w.col, w.end_line, w.end_col,
                               f"`{w.name}` ({a.dtype}, PSUM, line {a.line}) is the accumulating matmul destination "
                               f"across {loop_label(lp)}: the Tensor Engine adds in fp32 but rounds the sum to "
                               f"{a.dtype} on every write, so each K tile's partial sum is rounded"
                               + (f" to {_SIG_BITS[a.dtype]} significant bits" if a.dtype in _SIG_BITS else "") + ".",
                               {"tensor": w.name, "dtype": a.dtype, "loop_line": lp.line, "trip_count": lp.trip_count,
                                "allocation_line": a.line, "matmul": True, "buffer": "psum"},
                               fix=f"Allocate `{w.name}` as an nl.float32 PSUM tile (one 2 KiB bank holds 512 fp32 "
                                   f"columns) and cast to {a.dtype} once when evicting it after the loop."))
                    break
                matmul = w.value_kind == "matmul"
                yield _at_alloc(nf.path, a, emit("NKI401", nf, w.line, w.col, w.end_line, w.end_col,
                           f"`{w.name}` ({a.dtype}, SBUF, line {a.line}) accumulates "
                           + ("matmul results " if matmul else "")
                           + f"across {loop_label(lp)}: every add rounds the running sum to {a.dtype}"
                           + (f" ({_SIG_BITS[a.dtype]} significant bits)" if a.dtype in _SIG_BITS else "") + ".",
                           {"tensor": w.name, "dtype": a.dtype, "loop_line": lp.line, "trip_count": lp.trip_count,
                            "allocation_line": a.line, "matmul": matmul},
                           fix=(f"Accumulate across the K loop in PSUM: allocate `{w.name}` with buffer=nl.psum and "
                                f"dtype=nl.float32 (the Tensor Engine adds into fp32 PSUM as it multiplies, with "
                                f"no Vector Engine add per K tile), then copy it to {a.dtype} once after the loop."
                                if matmul else
                                f"Allocate `{w.name}` as nl.float32 and cast to {a.dtype} once after the loop.")))
                break


def _at_alloc(path: str, a, f):
    """The accumulator's allocation is where the fix goes: a related location of the finding."""
    if a.line == f.line:
        return f
    return f.model_copy(update={"related": [*f.related, RelatedLocation(file=path, line=a.line,
                                                                        message="allocated here (the dtype to change)")]})


def _is_exp(c) -> bool:
    return c.api in ("nl.exp",) or (c.api in _ACT_APIS and c.op in ("nl.exp", "np.exp"))


def _is_max(c) -> bool:
    if c.api in _MAX_APIS:
        return True
    return c.api == "nisa.tensor_reduce" and (c.op or "").endswith(("max", "maximum"))


# a tensor whose name says it holds a cumulative sum (`g_cumsum`, `prefix_sum`, `cum_decay`)
_CUM_NAME = re.compile(r"cum_?sum|cumulative|prefix_?sum|(?:^|_)cum(?:_|$)", re.IGNORECASE)
# instructions that move values without changing them (the range of the result is the source's)
_MOVES = {"nl.load", "nl.copy", "nisa.dma_copy", "nisa.tensor_copy", "nl.transpose", "nisa.nc_transpose",
          "nisa.dma_transpose"}


def _real_bias(c) -> bool:
    """A `bias=` that shifts the exponent (`bias=None` or 0 shifts nothing)."""
    b = c.kwargs.get("bias")
    return b is not None and b.strip() not in ("None", "0", "0.0")


def _source(w):
    """The operand a move / scalar op reads: (text, base name)."""
    o = w.operand("src", "data", "x", "in_", "input")
    if o is not None:
        return o.text, o.name
    for key in ("src", "data", "x"):
        if key in w.kwargs:
            return w.kwargs[key], _head(w.kwargs[key]).split(".", 1)[0]
    args = w.args[1:] if w.dst_style else w.args
    return (args[0], _head(args[0]).split(".", 1)[0]) if args else ("", None)


def _writer(k, name: str, line: int):
    """The last call before `line` that writes `name` (its destination or the name its result is bound to)."""
    best = None
    for w in k.calls:
        if w.line >= line:
            continue
        dst = w.operand("dst")
        if (w.target == name or (dst is not None and dst.name == name)) and (best is None or w.line >= best.line):
            best = w
    return best


def _sign_of_scaling(w) -> int | None:
    """+1/-1 when `w` multiplies its source by a constant of that sign and does nothing else; None otherwise."""
    if w.api == "nl.negative":
        return -1
    if w.api in ("nisa.tensor_scalar", "nl.multiply") and (w.op or "").endswith("multiply") \
            and "op1" not in w.kwargs:
        num = _number(w.kwargs.get("operand0", w.args[-1] if w.api == "nl.multiply" and w.args else ""))
        return None if num is None or num == 0 else (1 if num > 0 else -1)
    if w.api == "nisa.activation" and (w.op or "") in ("nl.copy", "nl.identity") and not _real_bias(w):
        num = _number(w.kwargs.get("scale", "1.0"))
        return None if num is None or num == 0 else (1 if num > 0 else -1)
    return None


def _cumulative_exponent(k, c):
    """When exp's operand is a cumulative sum reached through moves and constant scalings only:
    (the cumulative tensor's name, the sign it enters exp with, the lines of the chain); else None."""
    text = _data_text(c).strip()
    sign, chain = 1, []
    scale = _number(c.kwargs.get("scale", "1.0"))
    if scale is None or scale == 0:
        return None
    sign = 1 if scale > 0 else -1
    if text.startswith("-"):
        sign, text = -sign, text[1:].strip()
    name = _head(text).split(".", 1)[0]
    at = c.line
    for _ in range(8):
        if not name:
            return None
        if _CUM_NAME.search(name):
            return name, sign, chain
        w = _writer(k, name, at)
        if w is None:
            return None
        if w.api == "nl.cumsum":
            return name, sign, chain + [w.line]
        if w.api not in _MOVES:
            s = _sign_of_scaling(w)
            if s is None:
                return None
            sign *= s
        chain.append(w.line)
        text, name = _source(w)
        at = w.line
    return None


@check("NKI402")
def exp_overflow(nf: NkiFile, t: Target):
    for k in nf.kernels:
        max_lines = [c.line for c in k.calls if _is_max(c)]
        for c in k.calls:
            if not _is_exp(c):
                continue
            operand = c.operand("data", "x")
            looped = operand is not None and _running_sum(k, operand.name, c.line) is not None
            # a running sum over a loop is reported below, naming the loop
            cum = None if _real_bias(c) or looped else _cumulative_exponent(k, c)
            if cum is not None:
                msg, ev, sev, conf, fix = _cumulative_exp(c, *cum)
                f = emit("NKI402", nf, c.line, c.col, c.end_line, c.end_col, msg, ev, severity=sev, fix=fix,
                         confidence=conf)
                yield f.model_copy(update={"related": [
                    RelatedLocation(file=f.file or "", line=ln, message="the exponent is computed from here")
                    for ln in sorted(cum[2])]})
                continue
            if any(ln <= c.line for ln in max_lines) or "bias" in c.kwargs:
                continue
            arg = _data_text(c)
            if "-" in arg or "subtract" in arg:
                continue
            if _shifted_before(k, c, _data_text(c)):
                continue  # the instruction that wrote the operand subtracted a max / log-sum-exp
            scale = c.kwargs.get("scale")
            if scale is not None and _number(scale) is None:
                # exp(data * scale) with a tensor scale: the sign of the exponent is the data's, not the code's to
                # show (state-space models discretise with exp(delta * A), A < 0): say what to check, accuse nothing
                yield emit("NKI402", nf, c.line, c.col, c.end_line, c.end_col,
                           f"`{c.api}` exponentiates `{arg}` scaled by `{scale}` with no max reduction before it in "
                           f"`{k.name}`: safe when `{arg}` * `{scale}` stays below 88.7 (e.g. a negative scale, as in "
                           "exp(delta * A) with A < 0); otherwise exp overflows float32 to inf.",
                           {"api": c.api, "operand": arg, "scale": scale, "overflow_threshold_fp32": 88.72},
                           severity=Severity.INFO, fix=_exp_fix(k, c, arg), confidence="low")
                continue
            data = c.operand("data", "x")
            run = _running_sum(k, data.name if data is not None else None, c.line)
            if run is not None:  # the argument grows with the loop: overflow is a matter of trip count
                yield emit("NKI402", nf, c.line, c.col, c.end_line, c.end_col,
                           f"`{c.api}` exponentiates `{arg}`, a running sum over {loop_label(run)}: its range "
                           "grows with the trip count, so exp overflows float32 once the sum passes 88.7 "
                           "(bfloat16 too), giving inf and then NaN.",
                           {"api": c.api, "operand": arg, "overflow_threshold_fp32": 88.72, "cumulative": True,
                            "loop_line": run.line, "trip_count": run.trip_count, "trip_expr": run.trip_expr},
                           fix=f"Keep the exponent bounded across {loop_label(run)}: subtract a running max (rescale "
                               "the earlier terms when it grows, as online softmax does), or carry the product "
                               "exp(a)·exp(b) of per-step factors instead of exp of the sum.",
                           confidence="high")
                continue
            yield emit("NKI402", nf, c.line, c.col, c.end_line, c.end_col,
                       f"`{c.api}` exponentiates `{arg}` with no max reduction before it in `{k.name}`: "
                       "exp overflows float32 above 88.7 (bfloat16 too), giving inf and then NaN.",
                       {"api": c.api, "operand": arg, "overflow_threshold_fp32": 88.72},
                       fix=_exp_fix(k, c, arg), confidence="medium")


def _cumulative_exp(c, name: str, sign: int, chain: list[int]):
    """exp of a cumulative sum: its magnitude grows with the sequence; negated, it grows for log-decays (<= 0),
    the usual gated form, so exp(-cumsum) is the overflowing direction (a warning); exp(cumsum) is bounded
    by 1 exactly when the terms are <= 0, which the code does not show (an info)."""
    arg = _data_text(c)
    via = f" (through line{'s' if len(chain) > 1 else ''} {', '.join(map(str, sorted(chain)))})" if chain else ""
    ev = {"api": c.api, "operand": arg, "cumulative": True, "cumulative_tensor": name, "negated": sign < 0,
          "chain_lines": sorted(chain), "overflow_threshold_fp32": 88.72}
    fix = ("Exponentiate differences of the cumulative sum that stay <= 0 instead of products of exp(+cumsum) and "
           "exp(-cumsum): exp(cum[i] - cum[j]) for j <= i (clamped at 0 above the diagonal), exp(cum_last - cum).")
    if sign < 0:
        msg = (f"`{c.api}` exponentiates `{arg}`, the negated cumulative sum `{name}`{via}: a cumulative "
               "sum's magnitude grows with the sequence position, and for log-decay terms (<= 0, the gated "
               "form) its negation grows positive, so exp overflows float32 once it passes 88.7 (about 30 "
               "steps of a -3 log-decay), giving inf and then NaN.")
        return msg, ev, Severity.WARNING, "medium", fix
    msg = (f"`{c.api}` exponentiates `{arg}`, the cumulative sum `{name}`{via}: bounded by 1 while every term "
           "is <= 0 (log-decays); positive terms make it grow with the sequence position until exp overflows "
           "float32 at 88.7.")
    return msg, ev, Severity.INFO, "low", fix


def _running_sum(k, name: str | None, line: int):
    """The loop over which `name` accumulates (`name += x` or an add whose destination is also an input),
    when the exp at `line` is inside it or after it; None otherwise."""
    if not name:
        return None
    for w in k.assignments:
        if w.name != name or not w.loops or not reads_self(w):
            continue
        if not (w.op in ("+=", "-=") or w.value_kind in ("add", "sub")):
            continue
        for lp in reversed(w.loops):
            if defined_outside(k, name, lp) and lp.line <= line:
                return lp
    return None


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _exp_fix(k, c, arg: str) -> str:
    """The max-subtraction fix for this exp: a log of the sum after it makes it a log-sum-exp."""
    logs = [x for x in k.calls if x.line >= c.line and (x.api.endswith(".log") or (x.op or "").endswith(".log"))]
    if logs:
        return (f"Take the row max m = max(`{arg}`) first, exponentiate `{arg}` - m (bias=-m on the ScalarE "
                f"activation) and add m back after the log at line {logs[0].line}: m + log(sum(exp(x - m))). "
                "Two passes over the row (max, then exp-sum), or one pass with an online running max that rescales "
                "the partial sum when the max grows (for column tiles).")
    return (f"Subtract the row max before `{c.api}`: exp(`{arg}` - max) (bias=-max on the ScalarE activation); "
            "if the result is normalised (softmax), the max cancels in the division.")


@check("NKI403")
def variance(nf: NkiFile, t: Target):
    for k in nf.kernels:
        for s in k.subtractions:
            if {s.left_tag, s.right_tag} != {"mean_sq", "sq_mean"} or s.left_tag != "mean_sq":
                continue
            known = [d for d in s.dtypes if d]
            low = [d for d in known if d in LOW_PRECISION_FLOATS]
            dt = low[0] if low else (known[0] if known else None)
            # relative error of the difference ~ eps * (1 + mean^2/var): every bit is gone once
            # |mean|/std reaches 1/sqrt(eps) (2^12 in float32, 2^4 in bfloat16)
            bits = _MANTISSA_BITS.get(dt or "")
            ratio = f"; in {dt} every significant bit cancels once |mean|/std reaches ~{2 ** (bits // 2):g}" if bits else ""
            yield emit("NKI403", nf, s.line, s.col, s.end_line, s.end_col,
                       f"`{s.text}` computes variance as E[x^2] - E[x]^2"
                       + (f" in {dt}" if dt else "") +
                       ": when the mean is large relative to the spread the two terms cancel and the result can "
                       f"come out negative or zero{ratio}.",
                       {"expression": s.text, "dtype": dt,
                        "mean_to_std_ratio_all_bits_lost": 2 ** (bits // 2) if bits else None},
                       confidence="high" if low else "medium")


# significand bits (with the implicit bit) of the float dtypes NKI403 names
_MANTISSA_BITS = {"float32": 24, "float32r": 24, "bfloat16": 8, "float16": 11, "float8_e4m3": 4,
                  "float8_e4m3fn": 4, "float8_e5m2": 3}


def _data_text(c) -> str:
    """The source text of the value an activation / exp reads (`data=`, the third positional argument of
    `nisa.activation(dst, op, data)`, the argument of `nl.exp(x)`)."""
    data = c.operand("data", "x")
    if data is not None:
        return data.text
    if "data" in c.kwargs:
        return c.kwargs["data"]
    if c.api == "nisa.activation":
        return c.args[2] if len(c.args) > 2 else ""
    return c.args[-1] if c.args else ""


def _dst_text(c) -> str:
    dst = c.operand("dst")
    if dst is not None:
        return dst.text
    return c.kwargs.get("dst") or (c.args[0] if c.args and c.api.startswith("nisa.") else "")


def _head(text: str) -> str:
    """`bufs.qk[0:128, i]` -> `bufs.qk`; `view.get_view()` -> `view.get_view`."""
    return _HEAD.match(text.strip()).group(0) if _HEAD.match(text.strip()) else ""


_HEAD = re.compile(r"[A-Za-z_][\w.]*")


def _writer_before(k, c, text: str):
    """The last instruction before `c` that writes the value `text` names."""
    head = _head(text)
    best = None
    for w in k.calls:
        if w.line >= c.line or w is c or not head:
            continue
        if _head(_dst_text(w)) == head and (best is None or w.line >= best.line):
            best = w
    return best


_SHIFT = ("subtract", "max", "lse", "logsumexp")


def _shifted_before(k, c, text: str) -> bool:
    """exp's operand was written by a subtraction (or the add of a negated max) one instruction earlier."""
    w = _writer_before(k, c, text)
    if w is None:
        return False
    texts = [w.op or "", *w.args, *w.kwargs.values()]
    return any(s in t.lower() for t in texts for s in _SHIFT)


def _range_reduced(k, c, text: str) -> bool:
    """sin's operand went through a modulo (an ISA op, or a helper named like one) before the call."""
    name = _head(text).split(".", 1)[0]
    if not name:
        return False
    for w in k.calls:
        if w.line < c.line and name in w.names and any(
                m in " ".join([w.op or "", *w.kwargs.values(), *w.args]).lower() for m in ("mod", "remainder")):
            return True
    return any(line < c.line and name in names and ("mod" in fn.lower() or "remainder" in fn.lower())
               for fn, line, names in k.local_calls)


@check("NKI404")
def activation_range(nf: NkiFile, t: Target):
    for k in nf.kernels:
        for c in k.calls:
            if c.api not in _ACT_APIS or not c.op:
                continue
            fn = c.op.rsplit(".", 1)[-1]
            if fn not in ACTIVATION_VALID_RANGE:
                continue
            if fn == "sin" and _range_reduced(k, c, _data_text(c)):
                continue  # reduced to one period before the call (`(x + pi) % 2pi - pi`)
            lo, hi = ACTIVATION_VALID_RANGE[fn]
            narrow = fn in ("sin", "arctan")
            rng = f"[{lo:.4g}, {hi:.4g}]" if fn != "reciprocal" else f"+/-[{lo:.3g}, {hi:.3g}]"
            yield emit("NKI404", nf, c.line, c.col, c.end_line, c.end_col,
                       f"`{c.api}(op={c.op})` is a ScalarE polynomial approximation valid only on {rng}"
                       + ("; activation does no range reduction (sin(9.0) returns ~27.65)" if fn == "sin" else "")
                       + "; outside that range the output is invalid.",
                       {"function": fn, "valid_min": lo, "valid_max": hi},
                       severity=Severity.WARNING if narrow else Severity.INFO,
                       confidence="medium")


@check("NKI405")
def fp8_variant(nf: NkiFile, t: Target):
    if t.supports_fp8_e4m3fn:
        return
    for k in nf.kernels:
        seen = set()
        for a in k.allocations:
            if a.dtype == "float8_e4m3fn":
                seen.add(a.line)
                yield emit("NKI405", nf, a.line, a.col, a.end_line, a.end_col,
                           f"`{a.name}` is float8_e4m3fn (OCP, max {FP8_MAX['float8_e4m3fn']:g}); {t.name}'s Tensor "
                           f"Engine takes only float8_e4m3 (max {FP8_MAX['float8_e4m3']:g}).",
                           {"dtype": "float8_e4m3fn", "target": t.name, "max_e4m3": FP8_MAX["float8_e4m3"],
                            "max_e4m3fn": FP8_MAX["float8_e4m3fn"]})
        for c in k.calls:
            if getattr(c, "_kw_dtype", None) == "float8_e4m3fn" and c.line not in seen:
                yield emit("NKI405", nf, c.line, c.col, c.end_line, c.end_col,
                           f"`{c.api}` casts to float8_e4m3fn (OCP, max {FP8_MAX['float8_e4m3fn']:g}); {t.name}'s "
                           f"Tensor Engine takes only float8_e4m3 (max {FP8_MAX['float8_e4m3']:g}).",
                           {"dtype": "float8_e4m3fn", "target": t.name})
