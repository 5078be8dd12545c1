"""Call-form rules (checks in rules/nki_api_forms.py): forms public kernels got wrong and their maintainers
later fixed, in both dialects."""

from ...findings import Severity
from ..registry import RuleSpec

E, W, I = Severity.ERROR, Severity.WARNING, Severity.INFO

RULES = [
    RuleSpec("NKI517", "psum-non-additive-accumulation", "unsupported-construct", W,
             "A matmul result is accumulated with -= (or another operator than +=); PSUM accumulates by addition.",
             fix="Negate one operand and accumulate with +=.",
             doc="""\
## What it finds
An augmented assignment other than `+=` whose right-hand side is a matmul (`nisa.nc_matmul`, `nl.matmul`), such as `psum[...] -= nisa.nc_matmul(a_t, b)`, in either dialect.

Severity: `warning`. The legacy docs name `psum += matmul(...)` inside `affine_range` as the accumulation pattern and AWS's maintainers call it the only reliable one (aws-neuron-sdk issue 1051); that `-=` fails is documented by a public fix (trnfft: "psum -= nc_matmul not supported in affine_range"), not by the API reference.

## Why it matters on Trainium
The Tensor Engine writes matmul results into PSUM and can only add them to what is there. A subtraction is not an accumulation: the compiler rejects it inside `affine_range`, or computes it as a separate Vector Engine pass over the whole PSUM tile per iteration. In new NKI, `nisa.nc_matmul` returns nothing, so the statement uses `None` as well (NKI513).

## Example
```python
for k in nl.affine_range(K // 128):
    psum_re[...] += nisa.nc_matmul(a_re_t, b_re)
    psum_re[...] -= nisa.nc_matmul(a_im_t, b_im)     # NKI517
```

## Fix
Negate one operand once (`neg_b_im = nl.negative(b_im)`) and accumulate with `+=`; for other operators, accumulate with `+=` and apply the operation to the finished result.
"""),
    RuleSpec("NKI518", "unknown-numpy-attribute-in-kernel", "unsupported-construct", W,
             "A kernel uses a NumPy attribute the installed NumPy does not have (np.mul).",
             fix="Use the NumPy name (np.multiply).",
             doc="""\
## What it finds
Inside a kernel or a helper it calls: `np.X` (any alias of an imported `numpy`) where the installed NumPy has no `X`. Legacy NKI takes NumPy functions as ALU operators (`op0=np.multiply`, `reduce_op=np.max`) and NumPy dtypes, so kernels read NumPy attributes on paths tests may never take. Names NumPy removed in 2.0 (`np.float_`, `np.product`) are not reported: the kernel's environment may pin NumPy 1.x. The message suggests the NumPy name (`np.mul` -> `np.multiply`).

Severity: `warning`. The fact is the installed NumPy's (the version is in the message); a separate rule from NKI510 because its source is NumPy, not the NKI API table, and a project may want to ignore one and not the other.

## Why it matters on Trainium
The kernel is traced by Python: `np.mul` raises `AttributeError` when the tracer reaches the line, typically in a branch (`if use_causal_mask: ... else: ...`) that only some configurations take. nki-samples shipped `op0=np.mul` in an attention kernel until a later commit fixed it.

## Example
```python
res = nisa.tensor_scalar(data=t, op0=np.mul, operand0=1.0)   # NKI518: np.multiply
```

## Fix
Use the attribute NumPy has (`np.multiply`), or the NKI operator (`nl.multiply`).
"""),
    RuleSpec("NKI519", "transpose-load-from-local-hbm", "unsupported-construct", W,
             "nl.load_transpose2d reads an HBM buffer the kernel allocates; reported to work only on kernel arguments.",
             fix="Transpose on chip (nisa.nc_transpose) or pass the data in as a kernel argument.",
             doc="""\
## What it finds
`nl.load_transpose2d(buf[...])` where `buf` is not a kernel parameter but an HBM tensor the kernel allocates (`nl.ndarray(..., buffer=nl.shared_hbm | nl.hbm | nl.private_hbm)`), in either dialect.

Severity: `warning`, low confidence. The API reference only says the source is an HBM tensor; the restriction to the kernel's own HBM arguments comes from a public fix (trnfft: a kernel-local `shared_hbm` scratch read by `load_transpose2d` "fails NEFF compilation in NKI 0.3.0"). The public corpora (nki-samples, trnfft) only transpose-load kernel arguments.

## Why it matters on Trainium
A DMA transpose reads HBM with a transposing access pattern; a scratch tensor the kernel allocates in HBM is placed by the compiler, and the transpose load of it failed to compile on hardware. The failure shows only at NEFF compilation, not in a simulator run.

## Example
```python
scratch = nl.ndarray((n, 8), dtype=x.dtype, buffer=nl.shared_hbm)
...
t = nl.load_transpose2d(scratch[0:128, 0:8])    # NKI519
```

## Fix
Keep the data on chip and transpose it with `nisa.nc_transpose` (Tensor Engine, into PSUM), or compute the intermediate outside the kernel and pass it in as an argument.
"""),
]
