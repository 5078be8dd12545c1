"""Kernel calling convention and hardware-generation rules (checks in rules/nki_kernel_io.py and
rules/nki_generation.py): outputs taken as parameters, generation checks that exclude newer NeuronCores,
Tensor Engine transposes whose dtypes differ."""

from ...findings import Severity
from ..registry import RuleSpec

E, W, I = Severity.ERROR, Severity.WARNING, Severity.INFO

RULES = [
    RuleSpec("NKI520", "kernel-writes-output-parameter", "deprecated-api", W,
             "An entry kernel stores its result into a parameter instead of allocating the output and returning it.",
             fix="Drop the parameter, allocate the output with nl.ndarray(shape, dtype, buffer=nl.shared_hbm) "
                 "inside the kernel, store into it and return it.",
             doc="""\
## What it finds
An entry kernel (`@nki.jit`, `@nki.baremetal`, `@nki.benchmark`, `@nki.profile`, or a function wrapped with one of them, `nki.baremetal()(fn)`) that writes into one of its own parameters (`nl.store(out[...], ...)`, `nisa.dma_copy(dst=out, ...)`, through a view such as `out.reshape(...)`) and does not return it: the pre-2.21 pass-by-reference convention, where the caller allocated the output and passed it in. Parameters annotated `nt.mutable_tensor` and returned are in-place updates and are not reported; a `nt.mutable_tensor` parameter written and not returned is. Sub-kernels and helpers called from another kernel (nki-library's `output` parameters) are not entry kernels and are skipped, and so are kernels launched only through `torch_neuronx.nki_jit` / `jax_neuronx.nki_call`, whose convention was pass-by-reference.

The legacy framework launchers are looked for in every file checked together (a directory check: the project model records which functions each module hands to one): `nki_jit()(kernel)`, `nki_jit(kernel)`, `nki_jit(func=kernel)`, `torch_neuronx.nki_jit()(mod.kernel)`, `nki_call(partial(kernel, ...), ...)`, with `nki_jit` imported from `torch_neuronx` or `torch_neuronx.xla_impl.ops` (at module level or inside the function that launches), or a bare `nki_jit` / `nki_call` bound nowhere in the module. A module's own `nki_jit = nki.trace`, or `from nki import jit as nki_jit`, is not that launcher.

Severity, by what the compiler of the version does:
- legacy dialect (`neuronxcc.nki`) with `@nki.jit`: `error`. `nki.jit` arrived in SDK 2.21 together with the "new calling convention in NKI kernels, where kernel output tensors are explicitly returned from the kernel instead of pass-by-reference" (NKI release notes, 2.21); from then on top-level kernel parameters are immutable and storing into one fails with `err_cannot_update_immutable_parameter`. A written `nt.mutable_tensor` parameter that is not returned fails with `err_mutable_parameter_not_returned`: also an `error`.
- an output parameter that defaults to `None` (`def k(q, k, v, output=None)`), any dialect or launcher, when no file checked with it hands the kernel to a pass-by-reference launcher (next item): `warning`. The default says the kernel expects a caller to pass the output in, which only a pass-by-reference launcher does, and that launcher is usually in another module (optimum-neuron launches its `@nki.jit` flash-attention kernel through `torch_neuronx.nki_jit()(kernel)` from a sibling module, in production). Launched through `nki.jit` itself, the store still fails.
- a kernel that one of those pass-by-reference launchers is given, in its own file or another one checked with it (optimum-neuron's `attention_base.py`: `_flash_fwd_large_d_call = nki_jit()(flash_fwd_large_d)`, with the `@nki.jit` kernel in `flash_attention_nki.py`): `info`, naming the launcher's `path:line` (evidence `launched_by_reference`, and a related location). Through that launcher the caller's output tensor receives the write, so the code works where it is used; the finding records that a launch through the kernel's own decorator would fail the same store, and that the framework launchers are gone from current SDKs (`torch_neuronx.nki_jit` is unsupported from SDK 2.24, whose notice says to call `@nki.jit` functions directly), so migrating means returning the output. A decorated kernel that some function of the project also calls directly keeps the severity below, and the message names both. Checked alone, the kernel's file shows no launcher and gets the severity below.
- legacy dialect with `nki.baremetal` / `benchmark` / `profile` / `simulate_kernel`: `warning`. These decorators existed in SDK 2.20, whose convention was pass-by-reference; the table's legacy version (0.1) spans SDK 2.20-2.27, so the tool cannot tell which one the code was written for.
- new dialect (`import nki`, NKI 0.2+): `warning`. Every new-dialect release returns outputs (kernel outputs allocated `nl.shared_hbm`, NKI 0.3 breaking changes); a write into an input is not an output the framework sees (a torchxla-mode kernel's result stays invisible to XLA), but no release note states a compile error.

## Why it matters on Trainium
The framework maps a kernel's returned tensors to its outputs. A kernel that writes into an argument either fails to compile (immutable parameter) or computes a result nobody receives: the caller's tensor keeps its old contents.

## Example
```python
@nki.jit
def add(a, b, out):                     # out: caller-allocated
    nl.store(out, value=nl.load(a) + nl.load(b))
```

## Fix
```python
@nki.jit
def add(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.load(a) + nl.load(b))
    return out
```
and update the callers (`out = add(a, b)`).
"""),
    RuleSpec("NKI521", "nc-version-equality", "hardware-generation", W,
             "A hardware-generation branch compares get_nc_version() with == / != a generation that is not the newest, "
             "so newer NeuronCores take the older generation's path.",
             fix="Compare with >= (or <) so later generations take the path of the generation named.",
             doc="""\
## What it finds
`nisa.get_nc_version() == nisa.nc_version.gen3` (or `!=`, or the integer `3`) where the generation compared with is neither the oldest nor the newest the target NKI version's API table lists (`nisa.nc_version.gen2` ... `gen4`). `== gen2` (the oldest) means "gen2 and older"; `== <newest>` has no later generation to exclude yet, so neither is reported.

## Why it matters on Trainium
A branch written when trn2 (NeuronCore-v3, `gen3`) was the newest core usually means "gen3 and later": the PE-array transpose that must keep the input dtype, DMA transpose. With `==`, trn3 (NeuronCore-v4, `gen4`) silently takes the trn1 path: fp32 PSUM transposes that the newer core rejects, or a slower fallback. nki-samples fixed its flash-attention and fused RMSNorm-QKV kernels this way.

## Example
```python
if nisa.get_nc_version() == nisa.nc_version.gen3:   # gen4 takes the gen2 path
    t = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.psum)
```

## Fix
`if nisa.get_nc_version() >= nisa.nc_version.gen3:`. If the branch really is specific to one generation, say so in a comment and suppress the finding.
"""),
    RuleSpec("NKI522", "transpose-dtype-mismatch", "unsupported-construct", W,
             "nisa.nc_transpose writes into a dst whose dtype differs from the transposed tile's (bf16 into an fp32 PSUM tile).",
             fix="Allocate the PSUM dst with the input's dtype, or cast the input (tensor_copy into an fp32 tile) first.",
             doc="""\
## What it finds
A new-dialect `nisa.nc_transpose(dst, data)` where `dst` and `data` are allocated with different dtypes: the common case is a `bfloat16` input tile (allocated with `dtype=q.dtype` from a bf16 kernel input) transposed into a `float32` PSUM tile, the way trn1 (NeuronCore-v2) transposes produced fp32.

Severity: `error` when both dtypes are literal and differ: every NKI release's `nc_transpose` documentation says "The output `dst` tile must have the same data type as that of `data`" (SDK 2.27-2.32 stubs), and the compiler rejects it on trn2. A `warning` when one side is a kernel input's dtype (`k.dtype`): it matches only when the caller passes that dtype, and when the target is trn1, where the legacy PE array wrote fp32. Legacy-dialect (value-returning) transposes are not checked.

## Why it matters on Trainium
From NeuronCore-v3 on, the Tensor Engine transpose (a matmul against an identity, `is_transpose`) is bit-accurate and keeps the input dtype; it does not convert. A kernel that ran on trn1 with fp32 PSUM transposes fails to compile on trn2.

## Example
```python
k_raw = nl.ndarray((128, 128), dtype=k.dtype, buffer=nl.sbuf)      # bf16 input
k_t = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.psum)
nisa.nc_transpose(k_t, k_raw)                                        # dtypes differ
```

## Fix
Allocate `k_t` with `dtype=k_raw.dtype` (and cast after the copy out of PSUM if fp32 is needed), or upcast first: `nisa.tensor_copy(k32, k_raw)` into an fp32 SBUF tile, then transpose `k32`.
"""),
]
