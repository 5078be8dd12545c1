"""Rules written for a whole family of documented defects, not one instance (checks in
rules/nki_self_compare.py, rules/nki_target_gates.py, rules/nki_partition_broadcast.py, rules/nki_tile_rank.py): a
verification that compares a value with itself, a generation-specific API in a kernel nothing pins to that
generation, an elementwise op that needs a partition broadcast, an on-chip tile without two dims."""

from ...findings import Severity
from ..registry import RuleSpec

E, W, I = Severity.ERROR, Severity.WARNING, Severity.INFO

RULES = [
    RuleSpec("NKI216", "self-comparison-in-verification", "output-mismatch", W,
             "A comparison or allclose/array_equal/assert_allclose call compares an expression with itself, so the "
             "check passes whatever the kernel computes.",
             fix="Compare the kernel's output with the reference result instead of with itself.",
             doc="""\
## What it finds
Anywhere in a checked file (kernel code, its `__main__` block, its tests): `a == a`, `a <= a`, `a >= a`, or a
two-argument comparison call (`np.allclose`, `np.isclose`, `np.array_equal`, `np.testing.assert_allclose`,
`assert_array_equal`, `torch.testing.assert_close`, `assertEqual`, ...) whose first two arguments are the same
expression. Only side-effect-free operands count (names, attributes, subscripts with constant or name indices):
`np.array_equal(kernel(x), kernel(x))` is a determinism test and is not reported. `x != x` is the NaN idiom and is
not reported either.

## Why it matters on Trainium
A kernel's correctness rests on its comparison with a reference; a comparison of the output with itself is true
for any output (zeros from a kernel that never ran, garbage from a wrong index), so the test stays green while
the kernel is wrong. The same review rule exists in general linters (pylint's comparison-with-itself, ruff
PLR0124); here it also covers the numpy/torch comparison calls that kernel tests use. nki-samples' average-pool
tutorial shipped `(out_nki == out_nki).all()` and later fixed it to compare with the NumPy result.

## Example
```python
out_np = np_average_pool_2D(in_tensor, POOL_SIZE)
match = (out_nki == out_nki).all()          # NKI216: always True
assert np.allclose(out_nki, out_nki)        # NKI216
```

## Fix
Compare with the reference: `np.allclose(out_nki, out_np)`. To test for NaN, use `np.isnan`.
"""),
    RuleSpec("NKI523", "generation-gated-api-without-target", "unsupported-construct", W,
             "An instruction or mode the API docs mark as NeuronCore-v3+/v4+ only, in a kernel whose target does "
             "not guarantee that generation.",
             fix="Pin the kernel's target to a generation that has it, or branch on nisa.get_nc_version().",
             doc="""\
## What it finds
Uses of the API the SDK's documentation marks as generation-specific:
- NeuronCore-v4 (trn3) and newer: `nisa.nc_matmul_mx`, `nisa.activate2`, `nisa.rand2`, `nisa.exponential`,
  `nisa.quantize_mx`, `nl.abs_max`, `nl.abs_min` ("Available only on NeuronCore-v4 and newer");
- NeuronCore-v3 (trn2) and newer: `nisa.dma_transpose`, `nisa.range_select`, `nisa.rand_set_state`,
  `nisa.rand_get_state`, `nisa.nonzero_with_count`, `nc_matmul(perf_mode=double_row...)` (FP8 double-row mode,
  "on NeuronCore-v3 and NeuronCore-v4"), `dge_mode=hwdge` ("only supported for NeuronCore-v3 or newer").

In legacy `neuronxcc.nki` code only the gates its own docs and examples state count (`range_select`, the
`double_row_gen3` perf mode, HWDGE): the legacy `dma_transpose`, for one, carries no generation note.

Severity follows what the file and the settings say about the target:
- the kernel pins an older target (`@nki.jit(platform_target='trn1')`, or a `NEURON_PLATFORM_TARGET_OVERRIDE`
  the file sets): error;
- nothing pins it and the dialect sets the target on the decorator (`neuronxcc.nki` and NKI 0.2, where
  `nki.jit` takes `platform_target=`): warning, the kernel builds only where the build host's default target is
  new enough;
- from NKI 0.3 (`platform_target` removed; the target comes from the environment), nothing pins it and the
  checked target (`--target`) is older: info (the checked target may be the default; a library's trn3-only
  kernels are checked at trn2 too);
- a checked target that has it (NKI 0.3+), a kernel that branches on `get_nc_version()`/`nc_version`, or a mode
  chosen by a conditional expression:
  no finding. A sub-kernel without a decorator takes its caller's target and gets no decorator warning.

## Why it matters on Trainium
The compiler builds a kernel for one NeuronCore generation; an instruction that generation lacks is a compile
error, or the wrong program. The SDK's own examples pin `platform_target='trn2'` on double-row matmul kernels and
`'trn3'` on MX kernels; nki-samples' double-row matmul reference kernel first shipped without it and was fixed
by adding `platform_target='trn2'`.

## Example
```python
@nki.jit                                           # no platform_target
def fp8_matmul(lhsT, rhs):
    ...
    res += nisa.nc_matmul(a, b, perf_mode='double_row_gen3')   # NKI523
```

## Fix
`@nki.jit(platform_target='trn2')` (legacy and NKI 0.2), `NEURON_PLATFORM_TARGET_OVERRIDE=trn2` (NKI 0.3+), or
`if nisa.get_nc_version() >= nisa.nc_version.gen3:` with a fallback path for older cores.
"""),
    RuleSpec("NKI112", "partition-broadcast-in-elementwise-op", "unsupported-construct", W,
             "An elementwise op combines a one-partition tile with a tile of more partitions; NKI does not broadcast "
             "across the partition dim there.",
             fix="Give both operands the same partition count (broadcast the row into every partition first), or "
                 "use nisa.tensor_scalar with a [P, 1] operand.",
             doc="""\
## What it finds
A binary elementwise op whose two tile operands have different partition counts, read from the kernel's code:
the first index of the `nl.load` access that made a tile (`x[k:k+1]` is one partition, `x[p0:p1]` is `p1 - p0`),
the first dim of an on-chip allocation, an integer index into a tile (`t[k]` keeps one partition). The ops:
- legacy `neuronxcc.nki`: Python operators on tiles (`+ - * / // % ** << >> & | ^`, and their `+=` forms);
- NKI 0.3+: the `nki.language` binary functions (`nl.add`, `nl.multiply`, `nl.maximum`, ...);
- every dialect: `nisa.tensor_tensor`'s two inputs.

Both counts literal and different: error. One side one partition and the other an expression (a chunk
`p_off:p_end`, `num_groups`): warning, the op needs a broadcast whenever that expression exceeds 1. A literal > 1
against an expression, or two different expressions, are not reported (they may be equal).

## Why it matters on Trainium
Each partition is its own lane: an instruction reads the same partitions of its inputs that it writes, so a value
in one partition cannot reach the others without a data movement. The legacy docs' known issues say "Partition
dimension broadcasting is not supported on operator overloads" (the `nl.*` functions did it, at a cost); NKI
0.3's release notes list "no broadcasting in binary ops" for `nki.language`; `tensor_tensor` requires equal
partition counts (`err_num_partition_mismatch`). trnfft's FFT butterfly multiplied a `(1, 1)` twiddle by
`(groups, 1)` columns and had to broadcast the twiddles on the host.

## Example
```python
tw = nl.load(twiddle[k:k+1])                  # one partition
col = nl.load(x2d[p_off:p_end, k:k+1])        # p_end - p_off partitions
prod = tw * col                               # NKI112 (warning)
```

## Fix
Load the value into every partition (`nl.load(twiddle_bcast[p_off:p_end, k:k+1])` from a host-broadcast array,
`.broadcast_to((P, 1))`, or a ones-vector matmul), or make it the `[P, 1]` scalar operand of
`nisa.tensor_scalar`.
"""),
    RuleSpec("NKI113", "on-chip-tile-below-two-dims", "unsupported-construct", W,
             "Legacy NKI: an SBUF/PSUM tile with one dim, allocated so or loaded from an HBM tensor the kernel shows "
             "to be 1-D.",
             fix="Keep on-chip tiles 2-D: (N, 1) instead of (N,); load [P, F] blocks of a 2-D view of 1-D data.",
             doc="""\
## What it finds
In legacy `neuronxcc.nki` kernels, two forms of an on-chip tile without a free dim, read from the kernel's own code:
- an SBUF/PSUM allocation (`nl.ndarray`, `nl.zeros`, `nl.ones`, `nl.full`, `nl.empty`; SBUF is the default
  buffer) whose shape has one dim: `nl.zeros((128,), dtype, buffer=nl.sbuf)`;
- `nl.load` of a one-index access into an HBM tensor the kernel shows to be 1-D (allocated with a one-dim shape
  in HBM, a `.reshape((n,))` view, or a parameter unpacked as `n, = x.shape` or asserted `len(x.shape) == 1` /
  `x.ndim == 1`): the loaded tile has no partition dim.

A parameter whose rank the kernel does not show is never assumed 1-D. NKI 0.3+ code is not checked (nki-library's
own tests allocate `(1,)` SBUF tensors there), nor the known issue's "index [N, 1] buffers with both indices"
(Neuron-team legacy kernels pass `bias=b[:n]` of an `(n, 1)` buffer).

## Why it matters on Trainium
SBUF and PSUM are laid out as 128 partitions by a free dim; an on-chip tile has a partition dim (dim 0) and a free
dim. The legacy known issues say "Tile on SBUF/PSUM must have at least 2 dimensions ... If using a 1D tile on
SBUF/PSUM, users may get an `Insufficient rank` error", with `nl.zeros((128, ), ...)` as the form that "won't
work" and `(128, 1)` as the one that does. Kernels ported from 1-D code (FFT stages, vectors of twiddles,
per-row scalars) hit this first; trnfft's first NKI butterfly loaded its even/odd halves as 1-D tiles and was
rewritten with a 2-D partition layout.

## Example
```python
(n,) = x.shape
acc = nl.zeros((128,), dtype=nl.float32, buffer=nl.sbuf)   # NKI113
half = nl.load(x[0:n // 2])                                # NKI113: a 1-D tile
```

## Fix
`nl.zeros((128, 1), ...)`; view the 1-D input as 2-D (`x.reshape((rows, cols))`, rows on the partition dim) and
load `[P, F]` blocks.
"""),
]
