"""Matmuls: `nl.matmul` / `nisa.nc_matmul` operands and their contraction/free sizes.

A collector: functions of the walker (`ex`, parse/nki_extract.py) that record one kind of fact.
"""

from __future__ import annotations

from ..nki_model import Call, Matmul
from .common import _Ctx, _int, _make_alloc


def matmul(ex, call: Call, api: str, kw, ctx: _Ctx) -> None:
    if api == "nl.matmul":
        x, y = call.operand("x"), call.operand("y")
        tx = ex.folder.fold(kw["transpose_x"], ctx.env) is True if "transpose_x" in kw else False
        xs = x.shape if x else None
        ys = y.shape if y else None
        K = M = N = None
        if xs and len(xs) == 2:
            K, M = (xs[0], xs[1]) if tx else (xs[1], xs[0])
        if ys and len(ys) == 2:
            N = ys[1]
            K = K if K is not None else ys[0]
        mm = Matmul(call, x, y, call.operand("dst"), _int(K), _int(M), _int(N), bool(tx))
    else:
        st, mv = call.operand("stationary"), call.operand("moving")
        K = st.shape[0] if st and st.shape else (mv.shape[0] if mv and mv.shape else None)
        M = st.free_elems if st else None
        N = mv.free_elems if mv else None
        pm = kw.get("perf_mode")
        if pm is not None and "double_row" in ex.text(pm):  # [K, 2, M] x [K, 2, N]: 2 rows per partition
            M = M // 2 if isinstance(M, int) else M
            N = N // 2 if isinstance(N, int) else N
        mm = Matmul(call, st, mv, call.operand("dst"), _int(K), _int(M), _int(N))
    ctx.kernel.matmuls.append(mm)
    if not call.dst_style and call.target and mm.M is not None and mm.N is not None:
        a = _make_alloc(call.target, call.line, call.col, call.end_line, call.end_col, api,
                        (mm.M, mm.N), "float32", "psum", 0, ctx, implicit=True)
        ctx.kernel.allocations.append(a)
