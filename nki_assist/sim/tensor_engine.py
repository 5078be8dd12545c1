"""Tensor Engine instructions: nc_matmul / nl.matmul (stationary.T @ moving into fp32 PSUM) and transposes.

Tile limits, operand placement and dtype rules are checked here (SIM105, SIM106, SIM107); PSUM
accumulation follows the legacy `+=` pattern and the new `accumulate=None/True/False` rules
(nki-facts §1.3, §2.4).
"""

from __future__ import annotations

import numpy as np

from ..findings import Severity
from . import mathops, provenance, unwritten
from .core import (
    FLOAT32,
    SimShapeError,
    Tensor,
    _fit,
    check_placement,
    ctx_site,
    emit,
    fvals,
    is_tensor,
    new_tile,
    read,
    tile_mask,
    write,
)
from .dtypes import DType
from .pe_array import pe_matmul
from .views import locate


# -- matmul / transpose ----------------------------------------------------------------------------
def matmul(stationary, moving, *, dst=None, accumulate=None, is_transpose=False, mask=None,
           label="nc_matmul", perf_mode=None) -> Tensor:
    """stationary[K, M].T @ moving[K, N] -> PSUM [M, N], fp32 accumulation (nki-facts §1.3)."""
    ctx, line, depth = ctx_site()
    return _matmul(ctx, line, depth, stationary, moving, dst=dst, accumulate=accumulate,
                   is_transpose=is_transpose, mask=mask, label=label, perf_mode=perf_mode)


def _double_row(perf_mode) -> bool:
    return perf_mode is not None and "double_row" in str(perf_mode)


def _matmul(ctx, line, depth, stationary, moving, *, dst, accumulate, is_transpose, mask, label,
            perf_mode=None) -> Tensor:
    tgt = ctx.target
    for role, t in (("stationary", stationary), ("moving", moving)):
        if not is_tensor(t):
            raise TypeError(f"{label}: {role} must be a tensor")
        if t.st.buffer == "psum" and ctx.legacy:
            # the legacy compiler copies a PSUM operand to SBUF first (AWS's flash attention backward feeds
            # nc_transpose results straight into nc_matmul): a hidden copy, not a failure
            ctx.report("SIM106", line, f"{label}: {role} {t.st.name or ''}{list(t.shape)} is in PSUM; the Tensor "
                       "Engine reads SBUF, so the legacy compiler inserts a PSUM->SBUF copy before this matmul "
                       "(copy it to SBUF yourself with nisa.tensor_copy to control that cost).",
                       op=label, operand=role, buffer="psum", allowed=["sbuf"], _severity=Severity.WARNING)
        elif t.st.buffer != "sbuf":
            check_placement(ctx, line, label, t, ("sbuf",), role)
    if dst is not None and dst.st.buffer != "psum":
        check_placement(ctx, line, label, dst, ("psum",), "dst")
    with unwritten.collect() as poison:
        s = fvals(stationary, None, line)
        mv = fvals(moving, None, line)
    K = s.shape[0] if s.ndim else 1
    double = _double_row(perf_mode) and s.ndim == 3 and mv.ndim == 3 and s.shape[1] == mv.shape[1] == 2
    if double:  # FP8 double row: [K, 2, M] x [K, 2, N], contraction over the partitions and the pair axis
        s, mv = s.reshape(2 * K, -1), mv.reshape(2 * K, -1)
    s2 = s.reshape(K, -1) if not double else s
    m2 = mv.reshape(mv.shape[0] if mv.ndim else 1, -1)
    if double:
        K = 2 * K
    M, N = s2.shape[1], m2.shape[1]
    dst_dt = dst.st.dt if dst is not None else FLOAT32
    nmax = tgt.moving_fmax_bf16_dst if dst_dt.name == "bfloat16" else tgt.moving_fmax
    problems = []
    kp = K // 2 if double else K  # partitions (double row contracts 2 rows per partition)
    if kp > tgt.contraction_max:
        problems.append(f"contraction K={kp} > {tgt.contraction_max}")
    if m2.shape[0] != K:
        raise SimShapeError(f"{label}: stationary has K={K} rows and moving has {m2.shape[0]}; the contraction "
                            "dimension must be the partition axis of both operands")
    if M > tgt.stationary_fmax:
        problems.append(f"stationary free size M={M} > {tgt.stationary_fmax}")
    if N > nmax:
        problems.append(f"moving free size N={N} > {nmax}")
    if problems:
        ctx.report("SIM105", line, f"{label} [{K}x{M}].T @ [{K}x{N}] exceeds the Tensor Engine tile limits on "
                   f"{tgt.name}: " + "; ".join(problems) + ".", k=K, m=M, n=N,
                   limits={"k": tgt.contraction_max, "m": tgt.stationary_fmax, "n": nmax})
    _matmul_dtypes(ctx, line, label, stationary, moving, dst_dt)
    # per pass of <= 128 partitions the exact dot rounded once to fp32, passes summed in fp32 (host-independent)
    res = pe_matmul(s2, m2, tgt.contraction_max * (2 if double else 1))
    if dst is None:
        out = new_tile((M, N), FLOAT32, "psum", line, res, quiet=True)  # limits reported as SIM105 above
        out.origin = ("matmul", (stationary.st, moving.st), res, None)
    else:
        out = dst
        res = _fit(res, dst.shape, label)
        m = tile_mask(mask, dst.shape) if mask is not None else None
        _psum_accumulate(ctx, line, dst, res, m, accumulate)
    if poison:
        unwritten.matmul(out, poison, stationary, moving, K)
    if ctx.sanitize:
        provenance.watch(ctx, line, "nc_matmul", out, None if dst is None else m, [stationary, moving])
    extra = {"k": K, "m": M, "n": N, "is_transpose": bool(is_transpose)}
    if double:
        extra["perf_mode"] = "double_row"
    ctx.instr("tensor", "nc_matmul", line, depth, out, [stationary, moving], extra=extra)
    return out


def _matmul_dtypes(ctx, line, label, a: Tensor, b: Tensor, dst_dt: DType) -> None:
    tgt = ctx.target
    if dst_dt.name not in tgt.matmul_dst_dtypes:
        ctx.report("SIM107", line, f"{label} writes a {dst_dt.name} PSUM tile; on {tgt.name} the matmul dst must be "
                   f"{' or '.join(tgt.matmul_dst_dtypes)} (nc_matmul dst dtype must be float32 on gen2/gen3).",
                   dst_dtype=dst_dt.name, allowed=list(tgt.matmul_dst_dtypes))
    da, db = a.st.dt.name, b.st.dt.name
    fp32ish = ("float32", "tfloat32", "float32r")
    if (da in fp32ish) != (db in fp32ish):
        ctx.report("SIM107", line, f"{label} mixes {da} and {db} operands; fp32/tf32 operands must pair with "
                   "fp32/tf32.", dtypes=[da, db])
    if "float8_e4m3fn" in (da, db) and not tgt.supports_fp8_e4m3fn:
        ctx.report("SIM107", line, f"{label}: float8_e4m3fn operands are accepted by the Tensor Engine only on "
                   f"trn3 (use float8_e4m3 on {tgt.name}).", dtypes=[da, db])


def _psum_accumulate(ctx, line, dst: Tensor, res: np.ndarray, m, accumulate) -> None:
    st = dst.st
    low = st.dt.low_precision
    if accumulate is False:
        write(dst, ctx.round(res, st.dt), m, line, exempt_affine=True)
        return
    h, key, inner, ok = locate(dst)  # h: st, or the block of a block-dimension tile that holds dst
    w = h.written[key] if (ok and dst.fancy is None and not h.all_written) else None
    if accumulate is True:
        if w is not None and not h.all_written:
            bad = ~w if m is None else (~w & m)
            if bad.any():
                ctx.report("SIM111", line, f"nc_matmul(accumulate=True) onto PSUM {st.name or ''}{list(st.shape)} "
                           "that no matmul has written: accumulating onto uninitialized PSUM is undefined.",
                           tensor=st.name, uninitialized_elements=int(bad.sum()))
        has = True
    else:
        if h.all_written:
            has = True
        else:
            has = None if w is None else (True if w.all() else (False if not w.any() else None))
        if has is None and w is not None:
            old = mathops.f32(h.data[key])
            res = np.where(w, old + res, res)
            write(dst, ctx.round(res, st.dt), m, line, exempt_affine=True)
            return
        if has is None:
            has = False
    if has and not low:
        write(dst, res, m, line, accumulate=True, exempt_affine=True)
    elif has:
        old = read(dst, m, line, exempt_affine=True)
        write(dst, ctx.round(mathops.f32(old) + res, st.dt), m, line, exempt_affine=True)
    else:
        write(dst, ctx.round(res, st.dt), m, line, exempt_affine=True)


def transpose(data, *, dst=None, engine="tensor", dtype=None, label="nc_transpose", buffer=None) -> Tensor:
    ctx, line, depth = ctx_site()
    tgt = ctx.target
    with unwritten.collect() as poison:
        v = read(data, None, line)
    P = v.shape[0] if v.ndim else 1
    v2 = v.reshape(P, -1)
    F = v2.shape[1]
    if engine == "vector":
        if P > 32 or F > 32:
            ctx.report("SIM105", line, f"{label} on the Vector Engine handles at most 32x32; got [{P}, {F}].",
                       shape=[P, F], limit=32)
    else:
        if data.st.buffer != "sbuf":
            check_placement(ctx, line, label, data, ("sbuf",), "input")
        if dst is not None and dst.st.buffer != "psum":
            check_placement(ctx, line, label, dst, ("psum",), "dst")
        if P > tgt.contraction_max or F > tgt.stationary_fmax:
            ctx.report("SIM105", line, f"{label} on the Tensor Engine handles at most [128, 128]; got [{P}, {F}].",
                       shape=[P, F], limit=[tgt.contraction_max, tgt.stationary_fmax])
        if dst is not None and dst.st.dt is not data.st.dt:
            ctx.report("SIM107", line, f"{label}: Tensor Engine transpose dst dtype {dst.st.dt.name} differs from "
                       f"the input dtype {data.st.dt.name}.", dtypes=[data.st.dt.name, dst.st.dt.name])
    r = np.array(v2.T, copy=True)
    buf = buffer or ("psum" if engine == "tensor" else "sbuf")
    extra = {"k": P, "m": F, "n": P, "is_transpose": True} if engine == "tensor" else {}
    out = emit(ctx, "nc_transpose", engine, line, depth, r, dst=dst, dtype=dtype or data.st.dt, srcs=[data],
               buffer=buf, src_storages=(data.st,), extra=extra)
    if poison:
        unwritten.transpose(out, poison, tuple(data.shape))
    return out
