"""Conformance corpus: AWS's public NKI samples (aws-neuron/nki-samples) run in the built-in simulator.

The kernels are never copied into this repository: each run extracts the kernel's directory from a local
snapshot of the public repository (the `nki-samples@<commit>` folders in ../shared/corpora, or a bare git
directory, `NKI_SAMPLES_REPO`, default the mirror path below) at the commit the case names, into a temporary directory, and runs it there. What lives here is
ours: input shapes, NumPy references written from each kernel's documented semantics (or the repository's
own test goldens), and a few lines of entry code where a kernel needs an argument object built from its own
module (a config dataclass).

Each (kernel, size) ends in one verdict:
  match            the simulation reports no error and the outputs match the reference
  false finding    the simulation reports an error on a correct public kernel (ours to fix)
  mismatch         no error reported but the outputs differ from the reference (ours to fix)
  unsupported      the simulator stopped at a construct it does not model, said so with an info SIM117
  not applicable   the kernel does not accept this size (its own asserts or docstring say so)

    python tests/conformance/nki_samples_corpus.py            # markdown table on stdout, one row per run
    python tests/conformance/nki_samples_corpus.py --summary  # one row per kernel (docs/simulator.md)
    python tests/conformance/nki_samples_corpus.py softmax    # only cases whose name contains "softmax"
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import ml_dtypes
import numpy as np
from corpora import compare_outputs

DEFAULT_REPO = "/work/.mirror/aws-neuron+nki-samples/repo"
LEGACY = "7af4e4d"  # last commit with the legacy tutorials and the reference kernels
HEAD = "6905a68"  # new-API tutorials (mxfp matmul); the rest is unchanged from LEGACY
BF16 = ml_dtypes.bfloat16
TUT = "src/nki_samples/tutorials"
REF = "src/nki_samples/reference"


def repo_path() -> str | None:
    """Where to read kernels from, or None when neither is on this machine: `NKI_SAMPLES_REPO` (a bare git
    directory), else the folder holding the `nki-samples@<commit>` snapshots (../shared/corpora, as CI has
    it), else the mirror path above."""
    from corpora import corpora_dir

    shared = corpora_dir()
    if "NKI_SAMPLES_REPO" not in os.environ and shared is not None and \
            all((shared / f"nki-samples@{c}").is_dir() for c in (LEGACY, HEAD)):
        return str(shared)
    path = os.environ.get("NKI_SAMPLES_REPO", DEFAULT_REPO)
    if not path or not os.path.isdir(path):
        return None
    probe = subprocess.run(["git", "-C", path, "cat-file", "-e", f"{LEGACY}^{{commit}}"], capture_output=True)
    return path if probe.returncode == 0 else None


# -- cases -----------------------------------------------------------------------------------------
@dataclass
class Size:
    name: str
    make: Callable[[np.random.Generator], tuple[list, dict]] | None  # -> (args, kwargs)
    grid: tuple[int, ...] | None = None
    ragged: bool = False
    not_applicable: str | None = None  # why the kernel does not take this size


@dataclass
class Case:
    name: str
    commit: str
    path: str  # kernel file inside the snapshot
    kernel: str
    sizes: list[Size]
    reference: Callable[..., Any]  # (*args, **kwargs) -> array or tuple of arrays
    rtol: float = 2e-2
    atol: float = 2e-2
    target: str = "trn2"
    entry: str | None = None  # our entry code (file text) when the kernel needs objects from its module
    extract: str | None = None  # directory to extract (default: the kernel's own directory)
    compare: Callable[[list, Any, tuple], list] | None = None  # (outputs, reference, args) -> pairs to compare
    note: str = ""


def _f32(rng, *shape, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, shape).astype(np.float32)


def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


# references, from each kernel's docstring / the samples' own tests
def ref_add(a, b, *rest):
    return a.astype(np.float32) + b.astype(np.float32)


def ref_transpose2d(x, shape2d):
    p = x.shape[0]
    a, b = shape2d
    return np.transpose(x.reshape(p, a, b), (0, 2, 1)).reshape(p, a * b)


def ref_avgpool(x, pool):
    c, h, w = x.shape
    ho, wo = h // pool, w // pool
    return x[:, :ho * pool, :wo * pool].reshape(c, ho, pool, wo, pool).mean(axis=(2, 4))


def ref_rmsnorm(a, g):
    return a / np.sqrt(np.mean(a * a, axis=1, keepdims=True)) * g


def ref_softmax(a):
    return _softmax(a.astype(np.float32), axis=1)


def ref_layernorm(x, eps, g, b):
    m = x.mean(1, keepdims=True)
    v = x.var(1, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * g + b


def ref_matmul(lhsT, rhs, *rest):
    return lhsT.astype(np.float32).T @ rhs.astype(np.float32)


def ref_rotary(q, k, cos, sin):
    def rot(x):
        h = x.shape[-1] // 2
        return np.concatenate([-x[..., h:], x[..., :h]], axis=-1)

    c, s = cos[:, None], sin[:, None]
    return np.stack([q * c + rot(q) * s, k * c + rot(k) * s])


def ref_mamba(delta, u, A, B, C):
    dA = np.exp(delta[:, :, None, :] * A[None, :, :, None])
    dBu = delta[:, :, None, :] * B[:, None, :, :] * u[:, :, None, :]
    state = np.zeros(dA.shape[:-1], np.float64)
    out = np.zeros(dA.shape, np.float64)
    for t in range(dA.shape[-1]):
        state = dA[..., t] * state + dBu[..., t]
        out[..., t] = state
    return (C[:, None, :, :] * out).sum(axis=2)


def ref_attn_tutorial(q, k, v):  # q, k, v: [d_head, seqlen] (attention_fwd_performance/test_attention.py)
    return _softmax(q.T @ k, axis=1) @ v.T


def ref_sd_tutorial(q, k, v, *rest):  # [seq, d]
    return _softmax((q * 0.125) @ k.T, axis=-1) @ v


def ref_sd_reference(q, k, v, *rest):  # q [bs, d, seq], k/v [bs, seq, d] -> [bs, seq, d]
    return np.matmul(_softmax(np.matmul((q * 0.125).transpose(0, 2, 1), k.transpose(0, 2, 1)), -1), v)


def ref_allocated_sd(q, k, v):  # q/k [bs, d, seq], v [bs, seq, d] -> [bs, d, seq]
    return np.matmul(_softmax(np.matmul((q * 0.125).transpose(0, 2, 1), k), -1), v).transpose(0, 2, 1)


def ref_rmsnorm_qkv(hidden, weights, *rest):
    h = hidden.astype(np.float32)
    rms = np.sqrt(np.mean(h * h, axis=-1, keepdims=True))
    return (h / (rms + 1e-6)) @ weights.astype(np.float32)


def ref_flash_fwd(q, k, v, *rest, **kw):  # q/k [b, h, d, s], v [b, h, s, d] -> o [b, h, s, d], causal
    d = q.shape[2]
    s = np.matmul((q * (1.0 / d ** 0.5)).transpose(0, 1, 3, 2), k)
    Q, K = s.shape[-2:]
    s = np.where(np.arange(K)[None, :] > np.arange(Q)[:, None], -9984.0, s)
    return np.matmul(_softmax(s, -1), v)


def ref_flash_fwd_lse(q, k, v, *rest, **kw):
    """Training mode: (o, lse) with lse[b, h, p, t] = logsumexp of score row t * 128 + p (the samples' test)."""
    d = q.shape[2]
    s = np.matmul((q * (1.0 / d ** 0.5)).transpose(0, 1, 3, 2), k)
    Q, K = s.shape[-2:]
    s = np.where(np.arange(K)[None, :] > np.arange(Q)[:, None], -9984.0, s)
    mx = s.max(-1, keepdims=True)
    lse = (mx + np.log(np.exp(s - mx).sum(-1, keepdims=True)))[..., 0]
    b, h = q.shape[:2]
    return np.matmul(_softmax(s, -1), v), lse.reshape(b, h, Q // 128, 128).transpose(0, 1, 3, 2)


def ref_flash_bwd(q, k, v, o, dy, lse, seed, **kw):  # all [b, h, d, s]; causal; returns dq, dk, dv
    d = q.shape[2]
    scale = 1.0 / d ** 0.5
    qt, kt, vt, dyt = (x.astype(np.float64).transpose(0, 1, 3, 2) for x in (q, k, v, dy))  # [b, h, s, d]
    s = np.matmul(qt, kt.transpose(0, 1, 3, 2)) * scale
    S = s.shape[-1]
    s = np.where(np.arange(S)[None, :] > np.arange(S)[:, None], -np.inf, s)
    p = _softmax(s, -1)
    dv = np.matmul(p.transpose(0, 1, 3, 2), dyt)
    dp = np.matmul(dyt, vt.transpose(0, 1, 3, 2))
    ds = p * (dp - (dp * p).sum(-1, keepdims=True))
    dq = np.matmul(ds, kt) * scale
    dk = np.matmul(ds.transpose(0, 1, 3, 2), qt) * scale
    return tuple(x.transpose(0, 1, 3, 2) for x in (dq, dk, dv))


def _flash_inputs(rng, b, h, d, s):
    q = _f32(rng, b, h, d, s)
    k = _f32(rng, b, h, d, s)
    v = _f32(rng, b, h, s, d)
    return q, k, v


def _flash_bwd_inputs(rng, b, h, d, s):
    q, k = _f32(rng, b, h, d, s), _f32(rng, b, h, d, s)
    v, dy = _f32(rng, b, h, d, s), _f32(rng, b, h, d, s)
    sc = np.matmul((q * (1.0 / d ** 0.5)).transpose(0, 1, 3, 2), k)
    sc = np.where(np.arange(s)[None, :] > np.arange(s)[:, None], -9984.0, sc)
    mx = sc.max(-1, keepdims=True)
    lse = (mx + np.log(np.exp(sc - mx).sum(-1, keepdims=True)))[..., 0]  # [b, h, s]
    o = np.matmul(_softmax(sc, -1), v.transpose(0, 1, 3, 2)).transpose(0, 1, 3, 2)  # [b, h, d, s]
    lse_t = lse.reshape(b, h, s // 128, 128).transpose(0, 1, 3, 2).astype(np.float32)
    return [q, k, v, o.astype(np.float32), dy, lse_t, None], {"use_causal_mask": True, "mixed_precision": True}


def ref_adaptive_pool(x, out_size):
    N, C, H, W = x.shape
    OH, OW = (out_size, out_size) if isinstance(out_size, int) else out_size
    out = np.zeros((N, C, OH, OW), np.float64)
    for oh in range(OH):
        h0, h1 = (oh * H) // OH, ((oh + 1) * H + OH - 1) // OH
        for ow in range(OW):
            w0, w1 = (ow * W) // OW, ((ow + 1) * W + OW - 1) // OW
            out[:, :, oh, ow] = x[:, :, h0:h1, w0:w1].mean(axis=(2, 3))
    return out


def ref_resize_nearest(x, out_shape):
    b, h, w, c = x.shape
    _, oh, ow, _ = out_shape
    hi = np.floor(np.arange(oh) * (h / oh)).astype(int)
    wi = np.floor(np.arange(ow) * (w / ow)).astype(int)
    return x[:, hi][:, :, wi]


def ref_select_scatter(operand, source):
    N, C, H, W = operand.shape
    pad = np.pad(operand, ((0, 0), (0, 0), (1, 1), (1, 1)))
    out = np.zeros((N, C, H + 2, W + 2), np.float64)
    sh, sw = source.shape[2:]
    for h in range(sh):
        for w in range(sw):
            win = pad[:, :, 2 * h:2 * h + 3, 2 * w:2 * w + 3].reshape(N, C, 9)
            idx = win.argmax(-1)
            n, c = np.meshgrid(np.arange(N), np.arange(C), indexing="ij")
            out[n, c, 2 * h + idx // 3, 2 * w + idx % 3] += source[:, :, h, w]
    return out[:, :, 1:-1, 1:-1]


def ref_add_n(a, b, n):
    return a.astype(np.float32) + b.astype(np.float32)


def _cmp_first_n(outputs, ref, args):
    """add_kernel_nx8x128x512 writes only the first n_elements (its documented contract)."""
    n = args[2]
    return [(np.asarray(outputs[0], np.float64).reshape(-1)[:n], np.asarray(ref, np.float64).reshape(-1)[:n])]


def _double_row_inputs(rng, M, K, N, tiles):
    """quantized_double_row_matmul's inputs as its docstring defines them: lhs [M, K] bf16; rhs quantized per
    column to fp8_e4m3 (scale = column max / 240), with each pair of 128-row tile rows placed side by side per
    512-column tile ([K, N] -> [K // 2, 2N]); the scale broadcast to [128, N]."""
    lhs = rng.uniform(0, 1, (M, K)).astype(BF16)
    rhs = rng.uniform(0, 1, (K, N))
    scale = np.abs(rhs).max(axis=0, keepdims=True) / 240.0
    q = rhs / scale
    pairs = q.reshape(K // 256, 2, 128, N // 512, 512)  # [tile-row pair, which row, 128, column tile, 512]
    packed = pairs.transpose(0, 2, 3, 1, 4).reshape(K // 2, 2 * N)
    return ([lhs, packed.astype(ml_dtypes.float8_e4m3), np.broadcast_to(scale, (128, N)).astype(BF16), *tiles], {})


def ref_double_row(lhs, packed, scale, *tiles):
    K2, N2 = packed.shape
    q = packed.astype(np.float64).reshape(K2 // 128, 128, N2 // 1024, 2, 512).transpose(0, 3, 1, 2, 4)
    rhs = q.reshape(K2 * 2, N2 // 2) * scale[:1].astype(np.float64)
    return lhs.astype(np.float64) @ rhs


def ref_mx_matmul(st, mv, *rest):
    return st.astype(np.float32).T @ mv.astype(np.float32)


MX_ENTRY = '''
import nki
import nki.language as nl
from mx_kernels import (kernel_copy_strided_quantize_matmul_mx, kernel_offline_quantized_mx_matmul,
                        kernel_on_device_quantize_matmul_mx)


@nki.jit
def conformance_entry(st, mv):
    return kernel_copy_strided_quantize_matmul_mx(st, mv, nl.float8_e5m2_x4, True)


@nki.jit
def offline_entry(st, st_scale, mv, mv_scale):
    return kernel_offline_quantized_mx_matmul(st, st_scale, mv, mv_scale, nl.float8_e5m2_x4)


@nki.jit
def on_device_entry(st, st_scale, mv):
    return kernel_on_device_quantize_matmul_mx(st, st_scale, mv, nl.float8_e5m2_x4, nl.float8_e5m2_x4)
'''

FLASH_FWD_ENTRY = '''
from neuronxcc import nki
from attention import flash_fwd, FlashConfig


@nki.jit
def conformance_entry(q, k, v):
    return flash_fwd(q, k, v, None, use_causal_mask=True, mixed_precision=True,
                     config=FlashConfig(seq_tile_size=2048, training=False))
'''

RMSNORM_QUANT_ENTRY = '''
from neuronxcc import nki
from nki_samples.reference.rmsnorm_quant.rmsnorm_quant import rmsnorm_quant_kernel, RmsNormQuantKernelArgs


@nki.jit
def conformance_entry(hidden, ln_w):
    return rmsnorm_quant_kernel(hidden, ln_w, RmsNormQuantKernelArgs(lower_bound=0.0))
'''


def ref_rmsnorm_quant(hidden, ln_w):
    """Per row: RMS-normalise (eps 1e-6) times ln_w, then fp8_e4m3 quantisation scaled to +-240 with the fp32
    dequantising scale appended as 4 bytes; compared after dequantising (rmsnorm_quant.py docstring)."""
    h = hidden.astype(np.float32).reshape(-1, hidden.shape[-1])
    n = h / np.sqrt(np.mean(h * h, axis=-1, keepdims=True) + 1e-6) * ln_w.astype(np.float32)
    return n


def _cmp_rmsnorm_quant(outputs, ref, args):
    out = np.asarray(outputs[0])
    d = args[0].shape[-1]
    raw = out.reshape(-1, out.shape[-1])
    q = raw[:, :d].astype(np.float32)
    scale = np.ascontiguousarray(raw[:, d:d + 4]).view(np.uint8).copy().view(np.float32)
    return [(q * scale, ref)]


def _sizes_rows(aligned, ragged, make):
    return [Size("aligned", lambda r, n=aligned: make(r, n)), Size("ragged", lambda r, n=ragged: make(r, n), ragged=True)]


def cases() -> list[Case]:
    na = lambda why: Size("ragged", None, ragged=True, not_applicable=why)  # noqa: E731
    out: list[Case] = []
    # -- legacy tutorials (7af4e4d) --------------------------------------------------------------
    add_grid = lambda r: ([_f32(r, 256, 1024), _f32(r, 256, 1024)], {})  # noqa: E731
    for name, path in (("tensor_addition", f"{TUT}/tensor_addition/tensor_addition_nki_kernels.py"),
                       ("spmd_tensor_addition", f"{TUT}/tensor_addition/spmd_tensor_addition_nki_kernels.py")):
        out.append(Case(name, LEGACY, path, "nki_tensor_add_kernel_",
                        [Size("aligned", add_grid, grid=(2, 2)),
                         na("docstring: sizes must tile uniformly to [128, 512]")], ref_add))
    out.append(Case("transpose2d", LEGACY, f"{TUT}/transpose2d/transpose2d_nki_kernels.py",
                    "tensor_transpose2D_kernel_",
                    [Size("aligned", lambda r: ([_f32(r, 128, 8 * 16), (8, 16)], {})),
                     Size("ragged", lambda r: ([_f32(r, 5, 3 * 4), (3, 4)], {}), ragged=True)],
                    ref_transpose2d, rtol=0, atol=0))
    out.append(Case("average_pool2d", LEGACY, f"{TUT}/average_pool2d/average_pool2d_nki_kernels.py",
                    "tensor_avgpool_kernel",
                    [Size("aligned", lambda r: ([_f32(r, 128, 64, 64), 2], {})),
                     Size("ragged", lambda r: ([_f32(r, 100, 31, 29), 3], {}), ragged=True)],
                    ref_avgpool, rtol=1e-5, atol=1e-5))
    out.append(Case("rmsnorm", LEGACY, f"{TUT}/rmsnorm/rmsnorm_nki_kernels.py", "nki_rmsnorm_kernel",
                    _sizes_rows(256, 300, lambda r, n: ([_f32(r, n, 512), _f32(r, 512)], {})), ref_rmsnorm,
                    rtol=1e-4, atol=1e-4))
    out.append(Case("softmax", LEGACY, f"{TUT}/softmax/softmax_nki_kernels.py", "nki_softmax_kernel",
                    _sizes_rows(256, 250, lambda r, n: ([_f32(r, n, 512)], {})), ref_softmax, rtol=1e-4,
                    atol=1e-6))
    for v in ("v1", "v2"):
        out.append(Case(f"layernorm_{v}", LEGACY, f"{TUT}/layernorm/layernorm_nki_kernel.py",
                        f"nki_layernorm_kernel_{v}",
                        [Size("aligned", lambda r: ([_f32(r, 256, 512), 1e-5, _f32(r, 512), _f32(r, 512)], {})),
                         Size("ragged", lambda r: ([_f32(r, 300, 1000), 1e-5, _f32(r, 1000), _f32(r, 1000)], {}),
                              ragged=True)],
                        ref_layernorm, rtol=1e-3, atol=1e-3))
    out.append(Case("rotary", LEGACY, f"{TUT}/rotary/rotary_nki_kernels.py", "nki_apply_rotary_embedding",
                    [Size("aligned", lambda r: ([_f32(r, 2, 2, 256, 64), _f32(r, 2, 2, 256, 64),
                                                 _f32(r, 2, 256, 64), _f32(r, 2, 256, 64)], {}), grid=(2, 2)),
                     Size("ragged", lambda r: ([_f32(r, 1, 2, 200, 64), _f32(r, 1, 2, 200, 64),
                                                _f32(r, 1, 200, 64), _f32(r, 1, 200, 64)], {}), grid=(1, 2),
                          ragged=True)],
                    ref_rotary, rtol=1e-5, atol=1e-5))
    mamba = lambda r: ([_f32(r, 1, 256, 512, lo=0.0, hi=0.1), _f32(r, 1, 256, 512), _f32(r, 256, 16, lo=-1, hi=0),  # noqa: E731
                        _f32(r, 1, 16, 512), _f32(r, 1, 16, 512)], {})
    for v in ("v1", "v2", "v3"):
        out.append(Case(f"mamba_{v}", LEGACY, f"{TUT}/fused_mamba/mamba_nki_kernels.py", f"mamba_{v}",
                        [Size("aligned", mamba), na("asserts channels % 128 == 0 (v3 also seq_len % 512)")],
                        ref_mamba, rtol=2e-2, atol=2e-2))
    out.append(Case("sd_attention", LEGACY, f"{TUT}/sd_attention/sd_attention_nki_kernels.py",
                    "fused_self_attn_for_SD_small_head_size",
                    [Size("aligned", lambda r: ([_f32(r, 1024, 64, lo=0, hi=1), _f32(r, 1024, 64, lo=0, hi=1),
                                                 _f32(r, 1024, 64, lo=0, hi=1)], {})),
                     na("tiles seq by 128 and 512 with no tail handling")],
                    ref_sd_tutorial))
    for v in ("v1", "v2"):
        out.append(Case(f"attn_fwd_{v}", LEGACY, f"{TUT}/attention_fwd_performance/attention_kernels.py",
                        f"attn_fwd_{v}",
                        [Size("aligned", lambda r: ([_f32(r, 128, 128), _f32(r, 128, 128), _f32(r, 128, 128)], {})),
                         na("asserts seqlen == 128")], ref_attn_tutorial))
    for v in ("v3", "v4", "v5", "v6", "v7", "v8", "v8a", "v9", "v10", "v11"):
        out.append(Case(f"attn_fwd_{v}", LEGACY, f"{TUT}/attention_fwd_performance/attention_kernels.py",
                        f"attn_fwd_{v}",
                        [Size("aligned", lambda r: ([_f32(r, 128, 1024), _f32(r, 128, 1024), _f32(r, 128, 1024)], {})),
                         na("tiles seqlen by 512 with no tail handling")], ref_attn_tutorial))
    # -- new-API matmul tutorials (identical at 7af4e4d and HEAD) --------------------------------
    mm = f"{TUT}/matrix_multiplication/matrix_multiplication_nki_kernels.py"
    out.append(Case("matmul_basic", HEAD, mm, "nki_matmul_basic_",
                    [Size("aligned", lambda r: ([_f32(r, 128, 64), _f32(r, 128, 512)], {})),
                     na("asserts K=128, M=64, N=512")], ref_matmul, rtol=1e-4, atol=1e-4))
    for name, kern, (K, M, N) in (("matmul_tiled", "nki_matmul_tiled_", (1024, 512, 1024)),
                                  ("matmul_hoist_load", "nki_matmul_hoist_load_", (1024, 512, 1024)),
                                  ("matmul_block_free_dimension", "nki_matmul_block_free_dimension_", (1024, 512, 1024)),
                                  ("matmul_fully_optimized", "nki_matmul_fully_optimized_", (1024, 2048, 1024))):
        out.append(Case(name, HEAD, mm, kern,
                        [Size("aligned", lambda r, K=K, M=M, N=N: ([_f32(r, K, M), _f32(r, K, N)], {})),
                         na("asserts M, N, K multiples of the tile/block sizes")],
                        ref_matmul, rtol=1e-3, atol=1e-3))
    out.append(Case("mx_copy_strided_quantize_matmul", HEAD, f"{TUT}/mxfp-matmul/mx_kernels.py", "conformance_entry",
                    [Size("aligned", lambda r: ([_f32(r, 512, 128).astype(BF16), _f32(r, 512, 512).astype(BF16)], {})),
                     na("fixed tile shapes")], ref_mx_matmul, rtol=5e-2, atol=5e-1, target="trn3", entry=MX_ENTRY))
    # x4-packed data ([K, 4M] fp8 bytes) and e8m0 scales; these stop at the MX API (SIM117), never compared
    mx_packed = lambda r, n: r.integers(0, 255, (128, 4 * n)).astype(np.uint8)  # noqa: E731
    out.append(Case("mx_offline_quantized_matmul", HEAD, f"{TUT}/mxfp-matmul/mx_kernels.py", "offline_entry",
                    [Size("aligned", lambda r: ([mx_packed(r, 128), np.full((16, 128), 127, np.uint8),
                                                 mx_packed(r, 512), np.full((16, 512), 127, np.uint8)], {})),
                     na("fixed tile shapes")], None, target="trn3", entry=MX_ENTRY))
    out.append(Case("mx_on_device_quantize_matmul", HEAD, f"{TUT}/mxfp-matmul/mx_kernels.py", "on_device_entry",
                    [Size("aligned", lambda r: ([mx_packed(r, 128), np.full((16, 128), 127, np.uint8),
                                                 _f32(r, 128, 2048).astype(BF16)], {})),
                     na("fixed tile shapes")], None, target="trn3", entry=MX_ENTRY))
    out.append(Case("spmd_multiple_nc_tensor_addition", LEGACY,
                    f"{TUT}/tensor_addition/spmd_multiple_nc_tensor_addition_nki_kernels.py", "-",
                    [Size("aligned", None, not_applicable="no kernel of its own: launches spmd_tensor_addition's "
                          "kernel on a grid with nl.nc(2) (covered above)")], None))
    # -- reference kernels (7af4e4d) --------------------------------------------------------------
    out.append(Case("reference_add_nx8x128x512", LEGACY, f"{REF}/tutorial.py", "add_kernel_nx8x128x512",
                    [Size("aligned", lambda r: ([_f32(r, 2, 8, 128, 512), _f32(r, 2, 8, 128, 512), 2 * 8 * 128 * 512],
                                                {}), grid=(2,)),
                     Size("ragged", lambda r: ([_f32(r, 2, 8, 128, 512), _f32(r, 2, 8, 128, 512), 2 * 8 * 128 * 512 - 777],
                                               {}), grid=(2,), ragged=True)],
                    ref_add_n, rtol=1e-6, atol=1e-6, compare=_cmp_first_n))
    out.append(Case("reference_sd_attention", LEGACY, f"{REF}/attention.py", "fused_self_attn_for_SD_small_head_size",
                    [Size("aligned", lambda r: ([_f32(r, 1, 128, 1024, lo=0, hi=1), _f32(r, 1, 1024, 128, lo=0, hi=1),
                                                 _f32(r, 1, 1024, 128, lo=0, hi=1)], {}), grid=(1,)),
                     na("tiles seq by 128 and 512 with no tail handling")], ref_sd_reference))
    out.append(Case("reference_flash_fwd", LEGACY, f"{REF}/attention.py", "conformance_entry",
                    [Size("aligned", lambda r: (list(_flash_inputs(r, 1, 1, 128, 2048)), {}), grid=(1, 1)),
                     na("asserts seqlen_k % seq_tile_size == 0")], ref_flash_fwd, entry=FLASH_FWD_ENTRY))
    out.append(Case("reference_flash_fwd_training", LEGACY, f"{REF}/attention.py", "flash_fwd",
                    [Size("aligned", lambda r: (list(_flash_inputs(r, 1, 1, 128, 2048)) + [None], {}), grid=(1, 1)),
                     na("asserts seqlen_k % seq_tile_size == 0")], ref_flash_fwd_lse))
    out.append(Case("reference_flash_bwd", LEGACY, f"{REF}/attention.py", "flash_attn_bwd",
                    [Size("aligned", lambda r: _flash_bwd_inputs(r, 1, 1, 128, 512), grid=(1, 1)),
                     na("tiles seq by 128/512 with no tail handling")], ref_flash_bwd, rtol=5e-2, atol=5e-2))
    out.append(Case("reference_allocated_sd_attention", LEGACY, f"{REF}/allocated_attention.py",
                    "allocated_fused_self_attn_for_SD_small_head_size",
                    [Size("aligned", lambda r: ([_f32(r, 1, 128, 4096, lo=0, hi=1), _f32(r, 1, 128, 4096, lo=0, hi=1),
                                                 _f32(r, 1, 4096, 128, lo=0, hi=1)], {}), grid=(1,)),
                     na("fixed tiling of seq")], ref_allocated_sd))
    out.append(Case("reference_allocated_rmsnorm_qkv", LEGACY, f"{REF}/allocated_fused_linear.py",
                    "allocated_fused_rms_norm_qkv",
                    [Size("aligned", lambda r: ([_f32(r, 1, 128, 512, lo=0, hi=1).astype(np.float16),
                                                 _f32(r, 512, 512, lo=0, hi=1).astype(np.float16)], {})),
                     Size("ragged", lambda r: ([_f32(r, 1, 384, 512, lo=0, hi=1).astype(BF16),
                                                _f32(r, 512, 384, lo=0, hi=1).astype(BF16)], {}), ragged=True)],
                    ref_rmsnorm_qkv, rtol=2e-2, atol=1e-1,
                    note="ragged = head_dim 384 < 512 (masked) and an odd tile count; seqlen must be a multiple "
                         "of 128 (its masks cover whole 128-row tiles; its tests use 128/512/1024)"))
    out.append(Case("reference_rmsnorm_quant", LEGACY, f"{REF}/rmsnorm_quant/rmsnorm_quant.py", "conformance_entry",
                    [Size("aligned", lambda r: ([_f32(r, 1, 128, 512).astype(BF16), _f32(r, 512).astype(BF16)], {})),
                     Size("ragged", lambda r: ([_f32(r, 1, 200, 512).astype(BF16), _f32(r, 512).astype(BF16)], {}),
                          ragged=True)],
                    ref_rmsnorm_quant, rtol=8e-2, atol=8e-2, entry=RMSNORM_QUANT_ENTRY, extract="src",
                    compare=_cmp_rmsnorm_quant))
    out.append(Case("reference_double_row_matmul", LEGACY, f"{REF}/double_row_matmul.py", "quantized_double_row_matmul",
                    [Size("aligned", lambda r: _double_row_inputs(r, 256, 2048, 1024, (2, 2, 8))),
                     na("asserts M, N, K multiples of the block sizes")],
                    ref_double_row, rtol=3e-2, atol=1.0))
    out.append(Case("reference_adaptive_avg_pool2d", LEGACY, f"{REF}/vision.py", "adaptive_avg_pool2d_kernel",
                    [Size("aligned", lambda r: ([_f32(r, 2, 128, 28, 28), 7], {})),
                     Size("ragged", lambda r: ([_f32(r, 1, 100, 13, 13), 6], {}), ragged=True)],
                    ref_adaptive_pool, rtol=1e-5, atol=1e-5))
    out.append(Case("reference_resize_nearest", LEGACY, f"{REF}/vision.py", "resize_nearest_fixed_dma_kernel",
                    [Size("aligned", lambda r: ([_f32(r, 1, 30, 20, 1280), (1, 60, 40, 1280)], {}), grid=(1,)),
                     Size("ragged", lambda r: ([_f32(r, 1, 30, 20, 1280), (1, 59, 38, 1280)], {}), grid=(1,),
                          ragged=True)],
                    ref_resize_nearest, rtol=0, atol=0))
    out.append(Case("reference_select_and_scatter", LEGACY, f"{REF}/vision.py", "select_and_scatter_kernel",
                    [Size("aligned", lambda r: ([_f32(r, 2, 64, 16, 16, lo=0, hi=1), _f32(r, 2, 64, 8, 8, lo=0, hi=1)],
                                                {})),
                     na("asserts C == 64, N even and the window/stride geometry")],
                    ref_select_scatter, rtol=1e-5, atol=1e-5))
    return out


# -- running ---------------------------------------------------------------------------------------
@dataclass
class Outcome:
    case: str
    size: str
    verdict: str
    detail: str = ""
    findings: list[str] = field(default_factory=list)  # simulation findings, RULE:severity:line
    static: list[str] = field(default_factory=list)  # `check` findings on the kernel file (warnings and errors)
    perf: list[str] = field(default_factory=list)  # cost-model findings, RULE:severity:est_speedup
    max_abs_err: float | None = None
    seconds: float = 0.0
    status: str = ""


def extract(repo: str, case: Case, dest: Path) -> Path:
    """Write the kernel's directory (or `case.extract`) at its commit into dest; the kernel file's path."""
    folder = case.extract or str(Path(case.path).parent)
    snap = Path(repo) / f"nki-samples@{case.commit}"
    if snap.is_dir():  # a snapshot folder (../shared/corpora): copy the kernel's directory
        shutil.copytree(snap / folder, dest / folder, dirs_exist_ok=True)
    else:
        data = subprocess.run(["git", "-C", repo, "archive", "--format=tar", case.commit, folder],
                              check=True, capture_output=True).stdout
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            tar.extractall(dest, filter="data")
    kernel_dir = dest / Path(case.path).parent
    if case.entry is None:
        return dest / case.path
    entry = kernel_dir / "conformance_entry.py"
    entry.write_text(case.entry)
    if case.extract:  # package-relative imports: make the extracted tree importable from the entry
        entry.write_text(f"import sys\nsys.path.insert(0, {str(dest / case.extract)!r})\n" + case.entry)
    return entry


def _pairs(case: Case, outputs: list, ref, args) -> list:
    if case.compare is not None:
        return case.compare(outputs, ref, args)
    refs = list(ref) if isinstance(ref, tuple) else [ref]
    return list(zip(outputs, refs))


def _static(kfile: Path, case: Case, tmp: Path) -> list:
    """`nki-assist check` findings (warnings and errors) on the sample's own kernel file."""
    from nki_assist.check import CheckOptions, check_file

    target = Path(tmp) / case.path
    return [f for f in check_file(str(target), CheckOptions(target=case.target)).findings
            if f.severity.value in ("error", "warning")]


def _perf(res, case: Case) -> list:
    """Cost-model findings on the simulated trace (what `review` would add)."""
    from nki_assist.api.hardware import get_target
    from nki_assist.perf import estimate, perf_findings

    if res.status != "ok" or not res.trace:
        return []
    tgt = get_target(case.target)
    est = estimate(res, tgt)
    found = perf_findings(est, res, tgt)
    cap = est.roofline.get("max_speedup")
    for f in found:  # the cost model's own promise: never past the kernel's roofline
        assert cap is None or f.est_speedup <= max(1.0, cap) + 0.01, (case.name, f.rule, f.est_speedup, cap)
    return found


def run_case(repo: str, case: Case, size: Size, *, timeout_s: float = 300.0, seed: int = 0) -> Outcome:
    from nki_assist.toolchain.builtin import BuiltinBackend

    if size.not_applicable:
        return Outcome(case.name, size.name, "not applicable", size.not_applicable)
    rng = np.random.default_rng(seed)
    args, kwargs = size.make(rng)
    with tempfile.TemporaryDirectory(prefix="nki-samples-") as tmp:
        kfile = extract(repo, case, Path(tmp))
        t0 = time.perf_counter()
        res = BuiltinBackend().run(str(kfile), case.kernel, args, kwargs or None, target=case.target,
                                   grid=size.grid, timeout_s=timeout_s, memory_mb=4096)
        secs = time.perf_counter() - t0
        static = _static(kfile, case, Path(tmp))
    perf = _perf(res, case)
    found = [f"{f.rule}:{f.severity.value}:{f.line}" for f in res.findings]
    errors = [f for f in res.findings if f.severity.value == "error"]
    errors += [f for f in static if f.severity.value == "error"]
    o = Outcome(case.name, size.name, "", findings=found, seconds=secs, status=res.status,
                static=[f"{f.rule}:{f.severity.value}:{f.line}" for f in static],
                perf=[f"{f.rule}:{f.severity.value}:{f.est_speedup}x" for f in perf])
    if res.status == "unsupported" and not errors:
        tool = [f for f in res.findings if f.rule == "SIM117"]
        o.verdict = "unsupported"
        o.detail = "; ".join(str(f.evidence.get("api") or f.message) for f in tool) or (res.error or "")
        return o
    if errors:
        o.verdict = "false finding"
        o.detail = "; ".join(f"{f.rule} line {f.line}: {f.message[:140]}" for f in errors[:3])
        return o
    if res.status != "ok" or not res.outputs:
        o.verdict = "false finding"
        o.detail = f"status {res.status}: {res.error}"
        return o
    if case.reference is None:
        o.verdict = "mismatch"
        o.detail = "ran to the end but this corpus entry has no reference (expected a SIM117 stop)"
        return o
    ref = case.reference(*args, **kwargs)
    ok, o.max_abs_err, why = compare_outputs(_pairs(case, list(res.outputs), ref, args), case.rtol, case.atol)
    if why:
        o.detail = why
    o.verdict = "match" if ok else "mismatch"
    return o


def run_all(repo: str, select: list[str] | None = None) -> list[Outcome]:
    out = []
    for case in cases():
        if select and not any(s in case.name for s in select):
            continue
        for size in case.sizes:
            out.append(run_case(repo, case, size))
    return out


def _rules(items: list[str]) -> str:
    """RULE:severity:x entries folded to `RULE severity xN` for the table."""
    counts: dict[str, int] = {}
    for it in items:
        rule, sev, _rest = (it.split(":") + ["", ""])[:3]
        key = f"{rule} {sev}"
        counts[key] = counts.get(key, 0) + 1
    return ", ".join(f"{k} x{n}" if n > 1 else k for k, n in counts.items()) or "-"


def markdown(outcomes: list[Outcome]) -> str:
    commit = {c.name: c.commit for c in cases()}
    rows = ["| kernel | commit | size | verdict | max abs err | simulation (non-error) | static check | "
            "cost model | detail |",
            "|---|---|---|---|---|---|---|---|---|"]
    for o in outcomes:
        non_err = [f for f in o.findings if ":error:" not in f]
        err = "" if o.max_abs_err is None else f"{o.max_abs_err:.1e}"
        perf = ", ".join(p.split(":")[0] + " " + p.split(":")[2] for p in o.perf) or "-"
        rows.append(f"| {o.case} | {commit.get(o.case, '')} | {o.size} | {o.verdict} | {err} | "
                    f"{_rules(non_err)} | {_rules(o.static)} | {perf} | {o.detail.replace('|', '/')} |")
    return "\n".join(rows)


def summary(outcomes: list[Outcome]) -> str:
    """One row per kernel: the verdict at each size and what else the review would say (docs/simulator.md)."""
    commit = {c.name: c.commit for c in cases()}
    by_case: dict[str, dict[str, Outcome]] = {}
    for o in outcomes:
        by_case.setdefault(o.case, {})[o.size] = o
    rows = ["| kernel | commit | aligned | ragged | simulation warnings / info | cost model |", "|---|---|---|---|---|---|"]

    def cell(o: Outcome | None) -> str:
        if o is None:
            return "-"
        if o.verdict == "unsupported":
            return f"unsupported: {o.detail}"
        if o.verdict == "not applicable":
            return f"n/a ({o.detail})"
        return o.verdict + (f" ({o.max_abs_err:.0e})" if o.max_abs_err else "")

    for name, sizes in by_case.items():
        ran = [o for o in sizes.values() if o.verdict not in ("not applicable",)]
        sim = sorted({f.split(":")[0] + " " + f.split(":")[1] for o in ran for f in o.findings
                      if ":error:" not in f and not f.startswith("SIM117")})
        perf = sorted({p.split(":")[0] for o in ran for p in o.perf})
        rows.append(f"| {name} | {commit.get(name, '')} | {cell(sizes.get('aligned'))} | {cell(sizes.get('ragged'))} | "
                    f"{', '.join(sim) or '-'} | {', '.join(perf) or '-'} |")
    counts: dict[str, int] = {}
    for o in outcomes:
        counts[o.verdict] = counts.get(o.verdict, 0) + 1
    rows.append("")
    rows.append("Runs: " + ", ".join(f"{v} {counts[v]}" for v in sorted(counts)) + ".")
    return "\n".join(rows)


def main(argv: list[str]) -> int:
    repo = repo_path()
    if repo is None:
        print(f"no nki-samples snapshot (set NKI_SAMPLES_REPO; default {DEFAULT_REPO})", file=sys.stderr)
        return 2
    short = "--summary" in argv
    argv = [a for a in argv if a != "--summary"]
    outcomes = run_all(repo, argv or None)
    print(summary(outcomes) if short else markdown(outcomes))
    bad = [o for o in outcomes if o.verdict in ("false finding", "mismatch")]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
