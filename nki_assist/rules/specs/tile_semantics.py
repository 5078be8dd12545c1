"""What new-NKI (0.3+) tiles and traced Python are, read from the kernel's code (checks in
rules/nki_tile_values.py, rules/nki_traced_python.py, rules/nki_int_shift.py). Written 2026-12-05 for the
defect families of the public-history held-out set 2 (tests/history/pairs_held2.toml)."""

from ...findings import Severity
from ..registry import RuleSpec

E, W, I = Severity.ERROR, Severity.WARNING, Severity.INFO

_VERSION = """
The target NKI version is read as for the API-surface rules (`nki-version` in `[tool.nki-assist]`, `--nki-version`, the project's `nki` pin, the installed `nki`, else the newest version the API table covers); new-dialect (`import nki`) files at NKI 0.3 or newer only."""

RULES = [
    RuleSpec("NKI524", "numpy-astype-on-nki-tile", "unsupported-construct", W,
             "A NumPy-style `.astype(dtype)` call on a new-NKI tile; NkiTensor has no astype method.",
             fix="Cast with nl.copy(x, dtype=...) or the computing call's dtype=.",
             doc="""\
## What it finds
`t.astype(dtype)` in a new-dialect kernel or helper where `t` is a tile: a name every assignment of which in the function is an allocation or the tile an `nl` function returns (as NKI515 reads it), a slice of one, or an `nl` call's result (`nl.greater(a, b).astype(...)`).
""" + _VERSION + """

Severity: `error` where the target version's stub lists `NkiTensor`'s methods (0.5 and 0.6 list `slice`, `reshape`, `view`, `ap`, ... and no `astype`), `warning` for versions whose stub does not list them.

## Why it matters on Trainium
A NumPy array or a torch tensor converts with `.astype`; an NKI tile is a view of on-chip storage, and a dtype conversion is an instruction that writes a destination. The call fails when the kernel is traced. trnsparse's screened SpMM multiplied by `mask.astype(a.dtype)` and was fixed by passing the boolean mask to `nl.multiply` as it is.

## Example
```python
mask = nl.greater(bound, threshold)
a_masked = nl.multiply(a_tile, mask.astype(a.dtype))   # NKI524
```

## Fix
`nl.copy(mask, dtype=a.dtype)`, the computing call's `dtype=`, or (for a mask) pass the boolean tile directly.
"""),
    RuleSpec("NKI525", "reduction-leaves-no-free-dim", "unsupported-construct", W,
             "An nl reduction removes every free dim of an on-chip tile (no keepdims=True): the result is 1-D.",
             fix="Pass keepdims=True, so the result is a [P, 1] tile.",
             doc="""\
## What it finds
`nl.max`, `nl.min`, `nl.sum`, `nl.mean`, `nl.prod`, `nl.all`, `nl.any` or `nl.var` over free axes (a literal `axis`, not 0) that are all the free dims of a tile whose rank the kernel shows, without `keepdims=True`: `nl.max(score, axis=1)` on a 2-D tile. The rank is read from the kernel's own code: an on-chip allocation's literal shape, an `nl.load` of an all-slices access, `nl.load_transpose2d` (2-D), an elementwise `nl` function (its first tile operand's rank), a `.reshape((...))` view; a tile whose rank it does not show is not reported. Reductions over the partition axis are NKI210's.
""" + _VERSION + """

Severity: `warning`, medium confidence. The language guide (0.5+) and `NkiTensor.__getitem__` say SBUF and PSUM tensors are always at least 2-D; the NKI 0.3 stubs do not say it, and trnsparse's NKI 0.3 fix states it ("SBUF tensors must have >= 2 dimensions. nl.max/nl.sum with axis=1 produce 1D (128,)").

## Why it matters on Trainium
An on-chip tile is a partition dim (the lanes) by free dims (each lane's elements). Reducing every free dim without `keepdims` asks for a tile with lanes and no elements; `keepdims=True` keeps the reduced dims with size 1, the `[P, 1]` column the row statistics of a softmax or a norm live in.

## Example
```python
t_max = nl.max(score, axis=1)                        # NKI525: (128,)
t_max = nl.max(score, axis=1, keepdims=True)         # (128, 1)
```

## Fix
Pass `keepdims=True`; store the `[P, 1]` result into a `[P, 1]` HBM slice, and drop the extra dim on the host if the caller wants a vector.
"""),
    RuleSpec("NKI526", "untraceable-python-in-nki-kernel", "unsupported-construct", W,
             "A comprehension, or a subscript among a tuple assignment's targets, in a jit kernel or a helper it "
             "calls; the NKI 0.3+ compiler rejects both.",
             fix="Write the elements out, or unpack into plain names.",
             doc="""\
## What it finds
In a new-dialect `@nki.jit` kernel, or an undecorated function of the same file that a kernel calls (directly or through other helpers):
- a list, set or dict comprehension or a generator expression (`[f(x[i]) for i in range(4)]`, `any(d > 0 for d in dims)`);
- a tuple assignment with a subscript among its targets (`xs[0], xs[1] = mix(xs[0], xs[1])`). A single subscript target (`buf[i] = t`) is not reported.
""" + _VERSION + """

Severity: `warning`, medium confidence. Not in the API stubs or the language guide: the basis is a public fix that quotes the compiler on hardware builds (trnrand, NKI 0.3: "unsupported expression" for list comprehensions, "expecting pattern" for subscript tuple targets, both accepted by the CPU simulator), and AWS's NKI 0.3 library, which uses neither construct in traced code.

## Why it matters on Trainium
The NKI compiler specializes the kernel's whole call tree: it evaluates the Python it supports at compile time and lowers the rest to instructions. A construct it does not support stops the build, and the simulator does not catch it, so the kernel fails only on the device.

## Example
```python
def _xor_bytes(a, b):                       # called from a @nki.jit kernel
    return [nl.bitwise_xor(a[i], b[i]) for i in range(4)]     # NKI526

xs[0], xs[1] = _mix(xs[0], xs[1])           # NKI526
```

## Fix
Write the elements out (`[nl.bitwise_xor(a[0], b[0]), ...]`) or build the list with a `for` loop and `.append`; unpack into plain names (`x0, x1 = _mix(x0, x1)`).
"""),
    RuleSpec("NKI527", "shift-wider-than-nki-integer", "overflow-risk", W,
             "A bit shift by 32 or more on an NKI tile; NKI integers are at most 32 bits, so no bit survives.",
             fix="Split the operands into 16-bit halves so each partial product fits in 32 bits.",
             doc="""\
## What it finds
`nl.right_shift(x, n)` / `nl.left_shift(x, n)`, or `nisa.tensor_scalar` with `op0`/`op1` one of them, whose shift amount is a literal of 32 or more.

Severity: `error` in new-dialect files where the target version's API table lists no 64-bit integer dtype (every release so far), else `warning`.

## Why it matters on Trainium
NKI's integer dtypes are `int8/16/32` and `uint8/16/32` (each release's `nki.language` stub; there is no 64-bit integer), and the shift works on each element in its own dtype, like `numpy.right_shift`. Shifting a 32-bit element by 32 keeps none of its bits (or, where the count wraps, all of them), so the CUDA/NumPy idiom `hi = (x * c) >> 32`, the high word of a 64-bit product, yields nothing useful: trnrand's Philox kernel computed every output wrong this way.

## Example
```python
prod = nl.multiply(c0, M0)
hi = nl.bitwise_and(nl.right_shift(prod, 32), MASK)    # NKI527
```

## Fix
Compute the high word from 16-bit (or byte) halves whose partial products fit in 32 bits, and recombine them with shifts below 32.
"""),
]
