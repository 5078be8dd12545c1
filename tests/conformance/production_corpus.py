"""Conformance on production kernels nobody here wrote: AWS's nki-library and the NKIBench set, read in place.

The kernels are read from the frozen snapshots in `<repo>/../shared/corpora` (or `NKI_CORPORA`); nothing is
copied. nki-library kernels are imported as part of their package (`nkilib.core...`), so relative imports
and sibling modules work; arguments use the same call markers a port spec produces (keywords, enum members,
config objects, caller outputs). What lives here is ours: the sizes and the NumPy references, written from
each kernel's docstring (never from the repository's own torch references).

Each (kernel, size) ends in one verdict:
  match           the run reports no error and the outputs match our reference
  tool-limit      the simulator stopped at a construct it does not model (an info naming the construct)
  wrong           no error reported, but outputs differ from the reference (ours to fix)
  false finding   an error-level finding (or a crash) on a correct public kernel (ours to fix)
  not applicable  the kernel does not take this size (its documentation says so)

    python tests/conformance/production_corpus.py            # markdown table, one row per run
    python tests/conformance/production_corpus.py --summary  # one row per kernel (docs/simulator.md)
    python tests/conformance/production_corpus.py cumsum     # only cases whose name contains "cumsum"
    python tests/conformance/production_corpus.py --nkibench --memory-mb=8192  # another memory limit
"""

from __future__ import annotations

import os
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import ml_dtypes
import numpy as np
from corpora import compare_outputs

from nki_assist.contracts.callargs import Keyword, Named, Output, for_reference

BF16 = ml_dtypes.bfloat16
NKILIB = "nki-library@d2ad3a5/src/nkilib_src/nkilib"
NKIBENCH = "AccelOpt@47e29a7/NKIBench"


def corpora_root() -> Path | None:
    env = os.environ.get("NKI_CORPORA")
    root = Path(env) if env else Path(__file__).resolve().parents[2].parent / "shared" / "corpora"
    return root if (root / NKILIB).is_dir() else None


@dataclass
class Size:
    name: str
    make: Callable[[np.random.Generator], list] | None  # -> call list (positional values + markers)
    not_applicable: str | None = None
    ragged: bool = False


@dataclass
class Case:
    name: str
    path: str  # below the corpora root
    kernel: str
    sizes: list[Size]
    reference: Callable[..., Any] | None  # (*args, **kwargs) as for_reference gives them -> outputs
    rtol: float = 2e-2
    atol: float = 2e-2
    target: str = "trn2"
    compare: Callable[[list, Any, list], list] | None = None  # (outputs, reference, args) -> pairs
    grid: tuple[int, ...] | None = None  # LNC2 kernels run as two programs sharing HBM
    memory_mb: int = 4096
    timeout_s: float = 600.0

    @property
    def corpus(self) -> str:
        return "NKIBench" if self.path.startswith(NKIBENCH) else "nki-library"


def na(why: str) -> Size:
    return Size("ragged", None, not_applicable=why)


def _n(rng, *shape, dtype=np.float32, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, shape).astype(dtype)


def _f(a):
    return np.asarray(a, np.float64)


# -- references (from each kernel's docstring) --------------------------------------------------------
def ref_rmsnorm_tkg(x, gamma, out, eps=1e-6, **kw):
    """[B, S, H] -> [128, BxS, H//128]: out[p, t, j] = norm(x)[t, p*(H//128) + j] (docstring layout)."""
    x = _f(x)
    b, s, h = x.shape
    y = x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * _f(gamma).reshape(h)
    return y.reshape(b * s, 128, h // 128).transpose(1, 0, 2)


def ref_layernorm_tkg(x, gamma, out, beta=None, eps=1e-6, **kw):
    x = _f(x)
    b, s, h = x.shape
    m = x.mean(-1, keepdims=True)
    v = x.var(-1, keepdims=True)
    y = (x - m) / np.sqrt(v + eps) * _f(gamma).reshape(h)
    if beta is not None:
        y = y + _f(beta).reshape(h)
    return y.reshape(b * s, 128, h // 128).transpose(1, 0, 2)


def ref_cumsum(x, axis=-1):
    return np.cumsum(_f(x), axis=-1)


def ref_cascaded_max(x):
    x = _f(x)
    return x.max(-1, keepdims=True), x.argmax(-1)[..., None].astype(np.float64)


def _rotate_half(x):
    h = x.shape[-1] // 2
    return np.concatenate([-x[..., h:], x[..., :h]], axis=-1)


def ref_rope_hf(q, k, q_out, k_out, cos=None, sin=None, rope_cache=None, backward=False):
    """HF RoPE: x*cos + rotate_half(x)*sin on [B, heads, S, D], cos/sin [S, D] or [B, S, D]."""
    cos, sin = _f(cos), _f(sin)
    if cos.ndim == 3:
        cos, sin = cos[:, None], sin[:, None]
    if backward:
        sin = -sin
    def rot(x):
        x = _f(x)
        return x * cos + _rotate_half(x) * sin
    return rot(q), rot(k)


def ref_rope(x, cos, sin, lnc_shard=False, contiguous_layout=True, relayout_in_sbuf=False):
    """x [d, B, H, S], cos/sin [d/2, B, S]; contiguous: halves (x1, x2) -> (x1 c - x2 s, x2 c + x1 s)."""
    x = _f(x)
    d = x.shape[0]
    c, s = _f(cos)[:, :, None, :], _f(sin)[:, :, None, :]
    if contiguous_layout:
        x1, x2 = x[: d // 2], x[d // 2:]
        return np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], axis=0)
    x1, x2 = x[0::2], x[1::2]
    out = np.empty_like(x)
    out[0::2], out[1::2] = x1 * c - x2 * s, x2 * c + x1 * s
    return out


def ref_dynamic_add(a, b, n):
    out = _f(a) + _f(b)
    rows = int(np.asarray(n).reshape(-1)[0]) * 128
    return out[:rows]


def _cmp_dynamic_add(outputs, ref, args):
    rows = ref.shape[0]
    return [(np.asarray(outputs[0])[:rows], ref)]


def ref_find_nonzero(x, *rest, **kw):
    """[T, C] -> indices [C, T] (T-indices of nonzeros per column, then -1), counts [C]."""
    x = np.asarray(x)
    t, c = x.shape
    idx = np.full((c, t), -1.0)
    cnt = np.zeros(c)
    for j in range(c):
        nz = np.nonzero(x[:, j])[0]
        idx[j, : nz.size] = nz
        cnt[j] = nz.size
    return idx, cnt


def ref_indexed_flatten(x, f_len, output_len, row_offsets, row_offsets_start=None, padding_val=-1):
    x = np.asarray(x)
    e, t = x.shape
    out = np.full((output_len // f_len, f_len), float(padding_val))
    blocks = x.reshape(e, t // f_len, f_len)
    offs = np.asarray(row_offsets).reshape(-1)
    for i in range(e):
        for p in range(t // f_len):
            if 0 <= offs[i] + p < output_len // f_len:
                out[offs[i] + p] = blocks[i, p]
    return out.reshape(output_len)


def _lse(x):
    m = x.max(-1, keepdims=True)
    return (m + np.log(np.exp(x - m).sum(-1, keepdims=True)))[:, 0]


def ref_ce_forward(logits, targets, *rest, **kw):
    x = _f(logits)
    lse = _lse(x)
    t = np.asarray(targets).astype(int)
    return lse - x[np.arange(x.shape[0]), t], lse


def ref_ce_backward(logits, targets, lse, reduction="mean", *rest, **kw):
    x = _f(logits)
    p = np.exp(x - _f(lse)[:, None])
    p[np.arange(x.shape[0]), np.asarray(targets).astype(int)] -= 1.0
    return p / x.shape[0] if reduction == "mean" else p


def ref_depthwise_conv1d(img, filt, *rest, stride=(1, 1), **kw):
    img, filt = _f(img), _f(filt)
    n, c, _, w = img.shape
    s = filt.shape[-1]
    q = (w - s) // stride[1] + 1
    out = np.zeros((n, c, 1, q))
    for k in range(s):
        out[:, :, 0, :] += img[:, :, 0, k: k + (q - 1) * stride[1] + 1: stride[1]] * filt[None, :, 0, 0, k:k + 1]
    return out


def ref_topk(x, k, *rest, **kw):
    x = _f(x)
    order = np.argsort(-x, axis=-1, kind="stable")[..., :k]
    return np.take_along_axis(x, order, -1), order.astype(np.float64)


def ref_out_proj_tkg(attn, weight, bias=None, **kw):
    """attention [D, B, N, S], weight [N*D, H] -> [B*S, H] = attention @ weight (+ bias)."""
    a = _f(attn)
    d, b, n, s = a.shape
    x = a.transpose(1, 3, 2, 0).reshape(b * s, n * d)
    return x @ _f(weight) + (0 if bias is None else _f(bias))


def ref_out_proj_cte(attn, weight, bias=None, **kw):
    """attention [B, N, D, S], weight [N*D, H] -> [B, S, H]."""
    a = _f(attn)
    b, n, d, s = a.shape
    x = a.transpose(0, 3, 1, 2).reshape(b, s, n * d)
    return x @ _f(weight) + (0 if bias is None else _f(bias))


def ref_qkv_tkg(hidden, qkv_w, norm_w=None, eps=1e-6, **kw):
    """RMSNorm(hidden) * norm_w @ qkv_w, [B, S, H] -> [B, S, I] (BSD layout)."""
    x = _f(hidden)
    y = x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * _f(norm_w).reshape(-1)
    return y @ _f(qkv_w)


def ref_qkv_cte(x, w, *rest, **kw):
    return _f(x) @ _f(w)


def ref_attention_cte(q, k, v, scale=1.0, causal_mask=True, **kw):
    """q [b, sq, d] (tp_q), k [b, d, skv], v [b, skv, d] -> softmax(scale * q @ k, causal) @ v, [b, sq, d]."""
    s = scale * (_f(q) @ _f(k))
    if causal_mask:
        sq, skv = s.shape[1:]
        s = np.where(np.arange(skv)[None, :] <= np.arange(sq)[:, None] + (skv - sq), s, -np.inf)
    return _softmax(s, axis=-1) @ _f(v)


def ref_rmsnorm_quant(hidden, ln_w, kargs, *rest):
    x = _f(hidden)
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + kargs.get("eps", 1e-6)) * _f(ln_w).reshape(-1)


def _cmp_row_quant(outputs, ref, args):
    """Row quant output [B, S, H+4] fp8: H quantized values, then the fp32 dequant scale as 4 fp8 bytes."""
    out = np.asarray(outputs[0])
    h = ref.shape[-1]
    scale = np.ascontiguousarray(out[..., h:]).view(np.float32)
    got = out[..., :h].astype(np.float64) * scale.astype(np.float64)
    return [(got / np.abs(ref).max(-1, keepdims=True), ref / np.abs(ref).max(-1, keepdims=True))]


def ref_router_topk(x, w, w_bias, logits_out, aff_out, idx_out, act_fn, k, *rest, **kw):
    """x [H, T] (layout 0), w [H, E] -> logits [T, E]; top-k indices of softmax(logits). With the default
    router_pre_norm=True and norm_topk_prob=False (the "ACT1, topK" pipeline) the affinities are the full
    softmax (only the ACT2 / norm pipelines scatter the top-k values)."""
    logits = _f(x).T @ _f(w) + (0 if w_bias is None else _f(w_bias).reshape(1, -1))
    prob = _softmax(logits, axis=-1)
    idx = np.argsort(-prob, axis=-1, kind="stable")[:, :k]
    return logits, idx.astype(np.float64), prob


def _cmp_router(outputs, ref, args):
    logits, idx, aff = ref
    got = [np.asarray(o) for o in outputs]  # the caller's buffers, in argument order: logits, affinities, index
    return [(got[0], logits), (got[1], aff), (np.sort(got[2], axis=-1), np.sort(idx, axis=-1))]


# NKIBench: inputs are generated at the benchmark's logical shapes, reshaped (C order) to the shapes the
# compiler-emitted kernel takes; outputs are reshaped back. References from each benchmark's stated math.
def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


NKIBENCH_REFS: dict[str, Callable[..., Any]] = {
    "silu": lambda x: x / (1 + np.exp(-x)),
    "adamw": lambda th, g, m, v: (th - 1e-5 * th) - 0.01 * (0.9 * m + 0.1 * g)
    / (np.sqrt((0.999 * v + 0.001 * g * g) * 1000) + 1e-8),
    "rmsnorm_matmul": lambda x, w: (x / np.sqrt((x * x).mean(1, keepdims=True))) @ w,
    "matmul": lambda a, b: a @ b,
    "transpose_matmul": lambda a, b: a.T @ b,
    "bmm": lambda a, b: a @ b,
    "bmm_softmax": lambda a, b: _softmax(a @ b, axis=2),
    "swiglu": lambda x, up, down, gate: ((x @ gate) / (1 + np.exp(-(x @ gate))) * (x @ up)) @ down,
    "lora": lambda x, w, a, b: x @ w + (x @ a) @ b,
}


@dataclass
class Bench:
    name: str  # NKIBench test name (reference key)
    file: str  # kernel file in NKIBench/kernels
    logical: list[tuple]  # benchmark input shapes (as the benchmark generates them)
    kernel_shapes: list[tuple]  # the shapes the kernel takes (C-order reshapes)
    positive: tuple[int, ...] = ()  # inputs drawn as |normal| (adamw's second moment)
    rtol: float = 1e-3
    atol: float = 1e-3


BENCHES = [
    Bench("silu", "silu_M4096_N7168_0.py", [(4096, 7168)], [(128, 32, 7168)]),
    Bench("adamw", "adamw_M10944_N2048_0.py", [(10944, 2048)] * 4, [(10944, 2048)] * 4, positive=(3,)),
    Bench("rmsnorm_matmul", "rmsnorm_matmul_M4096_N2048_K1024_0.py", [(4096, 1024), (1024, 2048)],
          [(32, 128, 1024), (8, 128, 2048)], atol=1e-2),
    Bench("transpose_matmul", "transpose_matmul_M4096_K2048_N10944_0.py", [(2048, 4096), (2048, 10944)],
          [(128, 16, 4096), (128, 16, 10944)], atol=5e-2),
    Bench("bmm", "bmm_B16_M4096_K64_N4096_0.py", [(16, 4096, 64), (16, 64, 4096)],
          [(16, 4096, 64), (16, 64, 4096)], atol=1e-2),
    Bench("bmm_softmax", "bmm_softmax_B16_K64_M4096_N4096_0.py", [(16, 4096, 64), (16, 64, 4096)],
          [(16, 4096, 64), (16, 64, 4096)], atol=1e-4),
    Bench("swiglu", "swiglu_M4096_N3072_K1024_0.py", [(4096, 1024), (1024, 3072), (3072, 1024), (1024, 3072)],
          [(8, 4, 128, 8, 128), (8, 128, 3072), (24, 128, 1024), (8, 128, 3072)], rtol=2e-2, atol=5.0),
    Bench("matmul", "matmul_M4096_N12288_K5120_0.py", [(4096, 5120), (5120, 12288)],
          [(32, 128, 40, 128), (40, 128, 12288)], atol=0.5),
    Bench("lora", "lora_M4096_N12288_K5120_R128_0.py", [(4096, 5120), (5120, 12288), (5120, 128), (128, 12288)],
          [(8, 4, 128, 40, 128), (40, 128, 12288), (40, 128, 128), (128, 12288)], atol=1.0),
]


def _bench_case(b: Bench) -> Case:
    def make(rng):
        logical = [rng.standard_normal(shape).astype(np.float32) for shape in b.logical]
        for i in b.positive:
            logical[i] = np.abs(logical[i])
        return [x.reshape(shape) for x, shape in zip(logical, b.kernel_shapes)]

    def reference(*args):
        logical = [_f(a).reshape(shape) for a, shape in zip(args, b.logical)]
        return NKIBENCH_REFS[b.name](*logical)

    def compare(outputs, ref, args):
        return [(np.asarray(outputs[0]).reshape(ref.shape), ref)]

    return Case(f"nkibench_{b.name}", f"{NKIBENCH}/kernels/{b.file}", "kernel",
                [Size("benchmark", make), na("fixed benchmark shapes")], reference, rtol=b.rtol, atol=b.atol,
                compare=compare, timeout_s=1800)  # matmul and lora: 500-550 s on a loaded 2-core machine


# -- cases ----------------------------------------------------------------------------------------------
def _bsh(b, s, h, dtype=np.float32):
    def make(rng):
        x = _n(rng, b, s, h, dtype=dtype)
        g = _n(rng, 1, h, dtype=dtype, lo=0.5, hi=1.5)
        return [x, g, Output(np.zeros((128, b * s, h // 128), dtype))]
    return make


def cases() -> list[Case]:
    L = NKILIB
    out: list[Case] = []
    out.append(Case("rmsnorm_tkg", f"{L}/core/subkernels/rmsnorm_tkg.py", "rmsnorm_tkg",
                    [Size("aligned", _bsh(2, 4, 512)), Size("ragged", _bsh(1, 5, 384), ragged=True)],
                    ref_rmsnorm_tkg, rtol=1e-3, atol=1e-3))

    def ln(b, s, h):
        base = _bsh(b, s, h)

        def make(rng):
            x, g, o = base(rng)
            return [x, g, o, Keyword("beta", _n(rng, 1, h)), Keyword("eps", 1e-5)]
        return make
    out.append(Case("layernorm_tkg", f"{L}/core/subkernels/layernorm_tkg.py", "layernorm_tkg",
                    [Size("aligned", ln(2, 4, 512)), Size("ragged", ln(1, 3, 384), ragged=True)],
                    ref_layernorm_tkg, rtol=1e-3, atol=1e-3))
    out.append(Case("cumsum", f"{L}/core/cumsum/cumsum.py", "cumsum",
                    [Size("aligned", lambda r: [_n(r, 256, 1024)]),
                     Size("ragged", lambda r: [_n(r, 2, 5, 300)], ragged=True)],
                    ref_cumsum, rtol=1e-3, atol=1e-3))
    out.append(Case("cascaded_max", f"{L}/core/max/cascaded_max.py", "cascaded_max",
                    [Size("aligned", lambda r: [_n(r, 1, 1, 4096)]),
                     Size("ragged", lambda r: [_n(r, 1, 1, 3000)], ragged=True)],
                    ref_cascaded_max, rtol=0, atol=0))

    def hf(b, hq, hk, s, d):
        def make(rng):
            q, k = _n(rng, b, hq, s, d), _n(rng, b, hk, s, d)
            ang = rng.uniform(0, 6.28, (s, d // 2))
            cos = np.concatenate([np.cos(ang)] * 2, -1).astype(np.float32)
            sin = np.concatenate([np.sin(ang)] * 2, -1).astype(np.float32)
            return [q, k, Output(np.zeros_like(q)), Output(np.zeros_like(k)), Keyword("cos", cos),
                    Keyword("sin", sin)]
        return make
    out.append(Case("rope_hf", f"{L}/core/embeddings/rope_hf.py", "rope_hf",
                    [Size("aligned", hf(1, 4, 2, 256, 64)), na("seq_len must be divisible by 128 * shards")],
                    ref_rope_hf, rtol=1e-4, atol=1e-4))

    def rope(d, b, h, s, contiguous=True):
        def make(rng):
            ang = rng.uniform(0, 6.28, (d // 2, b, s))
            return [_n(rng, d, b, h, s), np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32),
                    Keyword("contiguous_layout", contiguous)]
        return make
    out.append(Case("rope", f"{L}/core/embeddings/rope.py", "RoPE",
                    [Size("aligned", rope(128, 1, 2, 256)), Size("ragged", rope(64, 2, 3, 100), ragged=True),
                     Size("interleaved", rope(64, 1, 2, 128, False))],
                    ref_rope, rtol=1e-4, atol=1e-4))

    def dyn(m, h, tiles):
        def make(rng):
            return [_n(rng, m, h, dtype=BF16), _n(rng, m, h, dtype=BF16), np.array([[tiles]], np.int32)]
        return make
    out.append(Case("dynamic_elementwise_add", f"{L}/experimental/dynamic_shapes/dynamic_elementwise_add.py",
                    "dynamic_elementwise_add", [Size("aligned", dyn(512, 1024, 3)),
                                                na("M % 128 == 0 and H % 512 == 0 (docstring)")],
                    ref_dynamic_add, compare=_cmp_dynamic_add))

    def nonzero(t, c):
        def make(rng):
            x = rng.uniform(-1, 1, (t, c)).astype(np.float32)
            x[rng.uniform(size=(t, c)) < 0.7] = 0
            return [x]
        return make
    out.append(Case("find_nonzero_indices", f"{L}/core/subkernels/find_nonzero_indices.py", "find_nonzero_indices",
                    [Size("aligned", nonzero(256, 16)), na("chunk_size (default T) must be a multiple of 128")],
                    ref_find_nonzero, rtol=0, atol=0, grid=(2,)))

    def flatten(e, t, f_len, out_len, offs):
        def make(rng):
            return [rng.integers(0, 1000, (e, t)).astype(np.int32), f_len, out_len, np.array(offs, np.int32)]
        return make
    out.append(Case("indexed_flatten", f"{L}/core/subkernels/indexed_flatten.py", "indexed_flatten",
                    [Size("aligned", flatten(4, 128, 8, 1024, [0, 16, 40, 120])),
                     na("T // f_len must be a multiple of 16 and output_len of 128")],
                    ref_indexed_flatten, rtol=0, atol=0, grid=(2,)))

    def ce(n, v, chunk, backward=False):
        def make(rng):
            logits = _n(rng, n, v, lo=-4, hi=4)
            targets = rng.integers(0, v, n).astype(np.int32)
            kw = [Keyword("positions_per_batch", 16), Keyword("chunk_size", chunk),
                  Keyword("dtype", Named("dtype", "float32"))]
            if backward:
                lse = _lse(_f(logits)).astype(np.float32)
                return [logits, targets, lse, *kw, Keyword("inplace", False)]
            return [logits, targets, *kw]
        return make
    out.append(Case("cross_entropy_forward", f"{L}/experimental/loss/cross_entropy.py", "cross_entropy_forward",
                    [Size("aligned", ce(64, 2048, 1024)), Size("ragged", ce(40, 1000, 512), ragged=True)],
                    ref_ce_forward, rtol=1e-3, atol=1e-3, grid=(2,)))
    out.append(Case("cross_entropy_backward", f"{L}/experimental/loss/cross_entropy.py", "cross_entropy_backward",
                    [Size("aligned", ce(64, 2048, 1024, True)), Size("ragged", ce(40, 1000, 512, True), ragged=True)],
                    ref_ce_backward, rtol=1e-3, atol=1e-5, grid=(2,)))

    def dw(n, c, w, s):
        def make(rng):
            return [_n(rng, n, c, 1, w), _n(rng, c, 1, 1, s), Keyword("feature_group_count", c)]
        return make
    out.append(Case("depthwise_conv1d", f"{L}/experimental/conv/depthwise_conv1d.py",
                    "depthwise_conv1d_implicit_gemm",
                    [Size("aligned", dw(1, 4, 256, 3)), Size("ragged", dw(2, 6, 77, 5), ragged=True)],
                    ref_depthwise_conv1d, rtol=1e-4, atol=1e-4, grid=(2,)))

    def topk(b, s, v, k):
        def make(rng):
            return [rng.permutation(b * s * v).reshape(b, s, v).astype(np.float32) / (b * s * v), k]
        return make
    out.append(Case("topk", f"{L}/core/topk/rotational_topk.py", "topk[1]",
                    [Size("aligned", topk(1, 4, 2048, 8)), Size("ragged", topk(2, 3, 1000, 5), ragged=True)],
                    ref_topk, rtol=0, atol=0))

    def proj_tkg(d, b, n, s, h, bias=True):
        def make(rng):
            args = [_n(rng, d, b, n, s), _n(rng, n * d, h, lo=-0.1, hi=0.1)]
            return args + ([Keyword("bias", _n(rng, 1, h))] if bias else [])
        return make
    out.append(Case("output_projection_tkg", f"{L}/core/output_projection/output_projection_tkg.py",
                    "output_projection_tkg",
                    [Size("aligned", proj_tkg(128, 2, 4, 1, 1024)), Size("ragged", proj_tkg(64, 1, 3, 5, 640, False),
                                                                          ragged=True)],
                    ref_out_proj_tkg, rtol=1e-3, atol=1e-3))

    def proj_cte(b, n, d, s, h):
        def make(rng):
            return [_n(rng, b, n, d, s), _n(rng, n * d, h, lo=-0.1, hi=0.1), Keyword("bias", _n(rng, 1, h))]
        return make
    out.append(Case("output_projection_cte", f"{L}/core/output_projection/output_projection_cte/output_projection_cte.py",
                    "output_projection_cte",
                    [Size("aligned", proj_cte(1, 2, 128, 512, 1024)), Size("ragged", proj_cte(2, 3, 64, 200, 520),
                                                                            ragged=True)],
                    ref_out_proj_cte, rtol=1e-3, atol=1e-3))

    def qkv(b, s, h, i):
        def make(rng):
            return [_n(rng, b, s, h), _n(rng, h, i, lo=-0.1, hi=0.1),
                    Keyword("norm_w", _n(rng, 1, h, lo=0.5, hi=1.5)),
                    Keyword("norm_type", Named("enum", "NormType.RMS_NORM")),
                    Keyword("output_layout", Named("enum", "QKVOutputLayout.BSD"))]
        return make
    out.append(Case("qkv_tkg", f"{L}/core/qkv/qkv_tkg.py", "qkv_tkg",
                    [Size("aligned", qkv(2, 1, 1024, 768)), Size("ragged", qkv(1, 3, 640, 320), ragged=True)],
                    ref_qkv_tkg, rtol=1e-3, atol=1e-3))

    def qkvc(b, s, h, i):
        def make(rng):
            return [_n(rng, b, s, h, dtype=BF16), _n(rng, h, i, dtype=BF16, lo=-0.1, hi=0.1)]
        return make
    # bf16 in, bf16 out (the DMA-transpose input load is a 2-byte path): bf16 output rounding
    out.append(Case("qkv_cte", f"{L}/core/qkv/qkv_cte.py", "qkv_cte",
                    [Size("aligned", qkvc(1, 512, 1024, 384)), Size("ragged", qkvc(2, 200, 640, 192), ragged=True)],
                    ref_qkv_cte, rtol=2e-2, atol=2e-2))

    def attn(b, sq, skv, d):
        def make(rng):
            return [_n(rng, b, sq, d), _n(rng, b, d, skv), _n(rng, b, skv, d), Keyword("scale", d ** -0.5)]
        return make
    out.append(Case("attention_cte", f"{L}/core/attention/attention_cte.py", "attention_cte",
                    [Size("aligned", attn(1, 512, 512, 128)), Size("ragged", attn(2, 300, 300, 64), ragged=True)],
                    ref_attention_cte, rtol=1e-2, atol=5e-3))  # softmax through bf16 transposes

    def rq(b, s, h):
        def make(rng):
            kargs = Named("call", "RmsNormQuantKernelArgs",
                          {"norm_type": Named("enum", "NormType.RMS_NORM"),
                           "quantization_type": Named("enum", "QuantizationType.ROW"), "eps": 1e-6})
            return [_n(rng, b, s, h, dtype=BF16), _n(rng, 1, h, dtype=BF16, lo=0.5, hi=1.5), kargs]  # bf16 compute
        return make
    out.append(Case("rmsnorm_quant", f"{L}/core/rmsnorm/rmsnorm_quant.py", "rmsnorm_quant_kernel",
                    [Size("aligned", rq(2, 64, 512)), Size("ragged", rq(1, 77, 320), ragged=True)],
                    ref_rmsnorm_quant, rtol=0.07, atol=0.02, compare=_cmp_row_quant))

    def router(t, h, e, k):
        def make(rng):
            return [_n(rng, h, t), _n(rng, h, e, lo=-0.2, hi=0.2), None, Output(np.zeros((t, e), np.float32)),
                    Output(np.zeros((t, e), np.float32)), Output(np.zeros((t, k), np.uint32)),
                    Named("enum", "RouterActFnType.SOFTMAX"), k, 0, 0]
        return make
    out.append(Case("router_topk", f"{L}/core/router_topk/router_topk.py", "router_topk",
                    [Size("aligned", router(128, 512, 64, 4)), Size("ragged", router(50, 256, 40, 2), ragged=True)],
                    ref_router_topk, rtol=1e-3, atol=1e-4, compare=_cmp_router))
    out += [_bench_case(b) for b in BENCHES]
    return out


# -- running --------------------------------------------------------------------------------------------
@dataclass
class Outcome:
    case: str
    size: str
    verdict: str
    detail: str = ""
    findings: list[str] = field(default_factory=list)
    max_abs_err: float | None = None
    seconds: float = 0.0
    peak_rss_mb: float | None = None  # the simulator child's peak resident memory (VmHWM)


class PeakRSS:
    """Peak resident memory (VmHWM) of this process's descendants while the block runs: the simulator's
    child process, read from /proc every 0.2 s (Linux only; None elsewhere)."""

    def __init__(self):
        self.kb = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def __enter__(self):
        if os.path.isdir("/proc/self"):
            self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    @property
    def mb(self) -> float | None:
        return self.kb / 1024 if self.kb else None

    @staticmethod
    def _stat(pid) -> tuple[int, str] | None:
        """(parent pid, start time) of a process, or None when it is gone."""
        try:
            with open(f"/proc/{pid}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            return int(fields[1]), fields[19]
        except (OSError, ValueError, IndexError):
            return None

    def _poll(self) -> None:
        me = os.getpid()
        while True:
            procs = {int(d): st for d in os.listdir("/proc") if d.isdigit() and (st := self._stat(d))}
            for pid, (_, started) in procs.items():
                p, hops = pid, 0
                while p in procs and p != me and hops < 16:
                    p, hops = procs[p][0], hops + 1
                if p != me or pid == me:
                    continue
                try:
                    with open(f"/proc/{pid}/status") as fh:
                        hwm = next((ln for ln in fh if ln.startswith("VmHWM:")), None)
                except OSError:
                    continue
                again = self._stat(pid)  # the same process still (a pid can be reused between the reads)
                if hwm and again is not None and again[1] == started:
                    self.kb = max(self.kb, int(hwm.split()[1]))
            if self._stop.wait(0.2):
                return


def _pairs(case: Case, outputs: list, ref, args) -> list:
    if case.compare is not None:
        return case.compare(outputs, ref, args)
    refs = list(ref) if isinstance(ref, (tuple, list)) else [ref]
    return list(zip(outputs, refs))


def run_case(root: Path, case: Case, size: Size, seed: int = 0) -> Outcome:
    from nki_assist.toolchain.builtin import BuiltinBackend

    if size.not_applicable:
        return Outcome(case.name, size.name, "not applicable", size.not_applicable)
    args = size.make(np.random.default_rng(seed))
    t0 = time.perf_counter()
    with PeakRSS() as rss:
        res = BuiltinBackend().run(str(root / case.path), case.kernel, args, target=case.target, grid=case.grid,
                                   timeout_s=case.timeout_s, memory_mb=case.memory_mb)
    o = Outcome(case.name, size.name, "", seconds=time.perf_counter() - t0, peak_rss_mb=rss.mb,
                findings=[f"{f.rule}:{f.severity.value}:{f.line}" for f in res.findings])
    errors = [f for f in res.findings if f.severity.value == "error"]
    if res.status == "unsupported" and not errors:
        tool = [f for f in res.findings if f.rule == "SIM117"]
        o.verdict = "tool-limit"
        o.detail = "; ".join(str(f.evidence.get("api") or f.message) for f in tool) or (res.error or "")
        return o
    if errors or res.status != "ok":
        o.verdict = "false finding"
        o.detail = "; ".join(f"{f.rule} line {f.line}: {f.message[:160]}" for f in errors[:3]) or \
            f"status {res.status}: {res.error}"
        return o
    if case.reference is None:
        o.verdict = "wrong"
        o.detail = "ran to the end but this corpus entry has no reference"
        return o
    pos, kw = for_reference(args)
    ref = case.reference(*pos, **kw)
    ok, o.max_abs_err, why = compare_outputs(_pairs(case, list(res.outputs), ref, args), case.rtol, case.atol)
    if why:
        o.detail = why
    o.verdict = "match" if ok else "wrong"
    return o


def run_all(root: Path, select: list[str] | None = None) -> list[Outcome]:
    return [run_case(root, c, s) for c in cases() if not select or any(x in c.name for x in select)
            for s in c.sizes]


def markdown(outcomes: list[Outcome]) -> str:
    rows = ["| kernel | size | verdict | max abs err | findings | seconds | peak RSS MB | detail |",
            "|---|---|---|---|---|---|---|---|"]
    for o in outcomes:
        err = "" if o.max_abs_err is None else f"{o.max_abs_err:.1e}"
        rss = "" if o.peak_rss_mb is None else f"{o.peak_rss_mb:.0f}"
        rows.append(f"| {o.case} | {o.size} | {o.verdict} | {err} | {', '.join(o.findings) or '-'} | "
                    f"{o.seconds:.1f} | {rss} | {o.detail.replace('|', '/')} |")
    return "\n".join(rows)


def summary(outcomes: list[Outcome]) -> str:
    corpus = {c.name: c.corpus for c in cases()}
    by_case: dict[str, dict[str, Outcome]] = {}
    for o in outcomes:
        by_case.setdefault(o.case, {})[o.size] = o
    rows = ["| corpus | kernel | sizes | verdict | notes |", "|---|---|---|---|---|"]
    for name, sizes in by_case.items():
        ran = [o for o in sizes.values() if o.verdict != "not applicable"]
        cells = ", ".join(f"{o.size}: {o.verdict}" + (f" ({o.max_abs_err:.0e})" if o.max_abs_err else "")
                          for o in sizes.values())
        worst = kernel_verdict(ran)
        notes = "; ".join(sorted({o.detail for o in ran if o.detail}))
        rows.append(f"| {corpus.get(name, '')} | {name} | {cells} | {worst} | {notes.replace('|', '/')} |")
    counts: dict[str, int] = {}
    for sizes in by_case.values():
        v = kernel_verdict([o for o in sizes.values() if o.verdict != "not applicable"])
        counts[v] = counts.get(v, 0) + 1
    rows += ["", "Kernels: " + ", ".join(f"{v} {counts[v]}" for v in sorted(counts)) + "."]
    return "\n".join(rows)


def kernel_verdict(ran: list[Outcome]) -> str:
    """A kernel's verdict: the worst of its runs (false finding > wrong > tool-limit > match)."""
    order = ["false finding", "wrong", "tool-limit", "match"]
    return min((o.verdict for o in ran), key=order.index, default="not applicable")


def main(argv: list[str]) -> int:
    root = corpora_root()
    if root is None:
        print("no corpora snapshot (set NKI_CORPORA; default <repo>/../shared/corpora)", file=sys.stderr)
        return 2
    short = "--summary" in argv
    only = "nki-library" if "--library" in argv else "NKIBench" if "--nkibench" in argv else None
    memory = [int(a.split("=", 1)[1]) for a in argv if a.startswith("--memory-mb=")]  # default: each case's
    argv = [a for a in argv if a not in ("--summary", "--library", "--nkibench") and not a.startswith("--memory-mb=")]
    chosen = [c for c in cases() if (not argv or any(x in c.name for x in argv)) and (only is None or c.corpus == only)]
    for c in chosen:
        c.memory_mb = memory[0] if memory else c.memory_mb
    outcomes = []
    for c in chosen:
        for s in c.sizes:
            o = run_case(root, c, s)
            outcomes.append(o)
            if o.verdict != "not applicable":  # progress: benchmark-size runs take minutes each
                print(f"{o.case} {o.size}: {o.verdict} {o.seconds:.0f} s, peak RSS {o.peak_rss_mb or 0:.0f} MB",
                      file=sys.stderr, flush=True)
    print(summary(outcomes) if short else markdown(outcomes))
    return 1 if any(o.verdict in ("false finding", "wrong") for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
