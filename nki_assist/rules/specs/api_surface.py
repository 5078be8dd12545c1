"""API-surface rules (checks in rules/nki_api_surface.py): calls and names checked against the versioned
NKI API table at the target NKI version (`nki-version`, docs/api-table.md)."""

from ...findings import Severity
from ..registry import RuleSpec

E, W, I = Severity.ERROR, Severity.WARNING, Severity.INFO

_VERSION = """
The facts come from the versioned NKI API table (docs/api-table.md), generated from the SDK's API stubs and release notes, read at the target NKI version (`nki-version` in `[tool.nki-assist]`, `--nki-version`, the project's `nki` pin, the installed `nki`, else the newest version the table covers)."""

RULES = [
    RuleSpec("NKI510", "unknown-nki-attribute", "deprecated-api", W,
             "A kernel uses an nl/nisa/nki.collectives name the target NKI version (or the legacy dialect) does not have.",
             fix="Use the name the target version documents (the message suggests the closest one).",
             doc="""\
## What it finds
In a new-dialect (`import nki`) kernel: `nl.X`, `nisa.X`, `nl.tile_size.X` or `nki.collectives.X` where the target NKI version has no `X`. Three cases: a name no NKI release documents (`nl.negate`; the closest documented name is suggested), a name added in a later release than the target (`nl.fori_loop` at 0.3), and a name the docs stopped listing before the target (an info).
""" + _VERSION + """

Severity: `error` only when the table is certain: the release notes list the name as new in a later version and the module's stubs are complete at the target. A name no release documents is a `warning` (the stubs omit a few real members), an `info` where a module's stubs are known to be partial (`nl` at 0.2, where the activation functions were on another page).

In a legacy-dialect file (`import neuronxcc.nki.language as nl`, not version-checked otherwise): a name that neither the legacy dialect's names (the project's catalogue, nki_assist/api/catalogue.py) nor any release documents, always a `warning` (that list is curated, not generated). trnfft shipped `nl.negate` in legacy kernels under `if HAS_NKI:` until a later commit renamed it `nl.negative`.

## Why it matters on Trainium
The NKI compiler resolves `nl`/`nisa` names when it traces the kernel: an unknown name is an `AttributeError` at compile time, often on a branch the tests never take (a dtype-dependent cast, a tail path).

## Example
```python
y = nl.negate(x)          # no nl.negate in any NKI release: nl.negative
```

## Fix
Use the documented name (`nl.negative`), or raise `nki-version` together with the toolchain when the API is newer. `check --fix --unsafe-fixes` renames to the suggested name (a name the target version has and does not deprecate).
"""),
    RuleSpec("NKI511", "unknown-nki-keyword", "deprecated-api", W,
             "A call passes a keyword the target NKI version's signature does not take, or one it removed.",
             fix="Drop or rename the keyword (the message lists the signature at the target version).",
             doc="""\
## What it finds
A call of a documented `nl`/`nisa`/`nki.collectives` function with a keyword argument its signature at the target NKI version does not take (`nisa.tensor_copy(..., dtype=...)`: ISA calls take the dtype from `dst` since 0.2), one the release notes list as removed (`nisa.dma_copy(unique_indices=)` at 0.3) or deprecated (`nki.jit(mode=)`, a warning), `dst=` on a value-returning `nl` function, and more positional arguments than the signature has. `mask=`, `dst_rmw_op=` and `platform_target=` are NKI501's.
""" + _VERSION + """

Severity: `error` when the release notes name this function's keyword as removed at or before the target (`nisa.dma_copy(dst_rmw_op=, unique_indices=)` at 0.3, `nisa.nc_matmul(psumAccumulateFlag=)` at 0.2). A keyword that is merely absent from the documented signature, or removed by a migration-wide note (`dtype=` on ISA calls), is a `warning`: AWS's own tutorials and 0.3 library kernels still pass `dtype=` to some ISA calls.

## Why it matters on Trainium
Since NKI 0.2 (SDK 2.28) the compiler validates keyword names against the signature and raises `unexpected keyword argument`; before that fix, a misspelled keyword was silently ignored, so code that "worked" on 2.27 fails on upgrade.

## Example
```python
nisa.tensor_copy(dst=t, src=s, dtype=nl.bfloat16)   # no dtype= on ISA calls since 0.2
```

## Fix
Drop the keyword (allocate `dst` with the dtype you want), or use the parameter the message names. `check --fix --unsafe-fixes` drops a keyword argument that sits on one line.
"""),
    RuleSpec("NKI512", "missing-required-nki-argument", "deprecated-api", E,
             "A call omits a required argument of the target NKI version's signature (often dst=).",
             fix="Pass the missing argument; for ISA calls, allocate the result and pass it as dst=.",
             doc="""\
## What it finds
A call of a documented `nl`/`nisa`/`nki.collectives` function that does not pass every required parameter of its signature at the target NKI version. The common case is a legacy-style ISA call, `t = nisa.tensor_copy(src)`, missing the `dst` the new dialect requires. Calls with `*args`/`**kwargs` are skipped.
""" + _VERSION + """

Severity: `error` when the target version's stub documents the signature, else `warning`.

## Why it matters on Trainium
The call raises `TypeError: missing required argument` when the kernel is traced.

## Example
```python
t = nisa.tensor_copy(src=s)      # new NKI: nisa.tensor_copy(dst=t, src=s)
```

## Fix
Pass the missing arguments. For ISA calls: `t = nl.ndarray(shape, dtype, buffer=nl.sbuf)` then `nisa.tensor_copy(dst=t, src=s)`.
"""),
    RuleSpec("NKI513", "nki-return-convention-misuse", "deprecated-api", E,
             "The result of a dst=-writing ISA call is used as a value, or a value-returning nl call's result is dropped.",
             fix="ISA calls: pass dst= and use that tile. nl calls: bind the returned tile.",
             doc="""\
## What it finds
Two sides of the new-dialect return convention. A call whose signature at the target NKI version takes `dst` (every `nisa.*` compute instruction, `nl.store`) returns nothing, so binding, passing or returning its result uses `None` (an `error` when the version's stub documents the signature). And an `nl` math function that returns a new tile (`nl.exp(x)`), called as a bare statement, computes a tile that is thrown away (a `warning`).

In a legacy-dialect file (`neuronxcc.nki`) the convention is the other way round: compute calls return their tile. A legacy returns-style call (`nisa.nc_matmul`, `nisa.tensor_copy`, `nl.load`, ...; the project's catalogue, nki_assist/api/catalogue.py) called as a bare statement throws its result away, usually the new dialect's dst-first form (`nisa.nc_matmul(psum, a, b)`) written against the old API (a `warning`; trnfft shipped that form in legacy kernels).
""" + _VERSION + """

## Why it matters on Trainium
`y = nisa.activation(dst=t, op=nl.exp, data=x)` binds `y = None`; the next use of `y` fails at trace time or, worse, a later `nl.store(out, value=y)` stores nothing useful. A discarded `nl.exp(x)` usually means the author expected it to work in place.

## Example
```python
y = nisa.tensor_tensor(dst=t, data1=a, data2=b, op=nl.add)   # y is None; use t
nl.exp(x)                                                    # result discarded
```

## Fix
Use the `dst` tile after an ISA call; bind the tile an `nl` function returns.
"""),
    RuleSpec("NKI514", "nested-def-in-nki-kernel", "unsupported-construct", W,
             "A function is defined inside a @nki.jit kernel body, or inside a helper the kernel calls (NKI 0.3+ "
             "does not compile it).",
             fix="Move the function to module level and call it from the kernel.",
             doc="""\
## What it finds
A `def` nested inside a `@nki.jit` kernel, or inside an undecorated function of the same file that a kernel calls (directly or through other helpers), when the target NKI version is 0.3 or newer. Bodies passed to `nl.fori_loop` / `nl.while_loop` (0.6) are nested by design and are not reported.
""" + _VERSION + """

Severity: `warning`. The rejection is documented by public projects' NKI 0.3 migrations (trnfft moved its helpers to module level; trnrand's hardware build of a helper its kernels call failed with "NKI does not support inner function definitions"), not by the API stubs, so the table cannot make it certain.

## Why it matters on Trainium
The NKI 0.3 compiler traces the kernel's own body and module-level functions; a closure defined in the body fails to compile, and kernel caching assumes kernels are pure functions of their arguments (closures over state are undefined behaviour, RN 0.3.0).

## Example
```python
@nki.jit
def kernel(a):
    def scale(t):        # NKI514
        ...
```

## Fix
Define the helper at module level and pass it what it needs as arguments.
"""),
    RuleSpec("NKI515", "python-arithmetic-on-nki-tile", "unsupported-construct", W,
             "Python arithmetic (+ - * / ...) on a new-NKI tile; tiles have no operators, use an ISA call.",
             fix="Compute it with nisa.tensor_tensor / nisa.tensor_scalar into a dst tile.",
             doc="""\
## What it finds
In a new-dialect kernel: a Python arithmetic operator (`+`, `-`, `*`, `/`, `//`, `%`, `**`, `@`, or the augmented `+=`...), or a unary minus (`-t`), with an operand that is a tile: a name every assignment of which in the kernel is an allocation (`nl.ndarray`, `nl.zeros`, ...) or the tile an `nl` function returns, or a slice of one. Shape and index arithmetic (`t.shape[0] * 2`, `i * 128`) is not reported. In legacy `neuronxcc.nki` kernels, whose tiles overload the binary operators, only the unary minus is reported (a warning: neuronxcc 2.24 raised a TypeError on `-s_tile` in trnsolver's Jacobi kernel, fixed with `nl.negative`, the form trnfft uses).
""" + _VERSION + """

Severity: `error` where the target version's stub lists `NkiTensor`'s special methods (0.6: `__getitem__`/`__setitem__`, no arithmetic, no `__neg__`), `warning` for versions whose stub does not list them.

## Why it matters on Trainium
Legacy NKI overloaded operators on tiles and lowered them to engine instructions. New NKI tiles (`NkiTensor`) are views of storage: every computation is an instruction with a destination. `a * b` on two tiles fails when the kernel is traced (trnfft's NKI 0.3 migration replaced these with ISA calls).

## Example
```python
c = a_tile * b_tile          # NKI515
d = nl.multiply(x, -s_tile)  # NKI515: unary minus (trnsolver's Jacobi rotation, fixed with nl.negative)
```

## Fix
`nisa.tensor_tensor(dst=c, data1=a_tile, data2=b_tile, op=nl.multiply)`, or `nisa.tensor_scalar` when one operand is a scalar; `nl.negative(t)` for `-t`.
"""),
    RuleSpec("NKI516", "min-bound-in-affine-range", "unsupported-construct", W,
             "A slice bound inside nl.affine_range is clamped with min()/max() of the loop index; not a constant size.",
             fix="Use a constant tile size (assert divisibility or handle the tail separately).",
             doc="""\
## What it finds
Inside a `for i in nl.affine_range(...)` loop, a slice bound that calls `min()` or `max()` on an expression of the loop index (directly or through a name computed from it in the loop), such as `x[i * 128:min((i + 1) * 128, N)]`. In a legacy-dialect (`neuronxcc.nki`) kernel also a bound that reads a name the loop assigns from such a clamp (`end = min(off + 128, N)`, then `x[off:end]`); the finding sits on the clamp. New NKI unrolls `affine_range` (an alias of `range`), so a clamp kept in a name is a plain integer there and is not reported: AWS's NKI 0.3 library sizes its tails that way.
""" + _VERSION + """

Severity: `warning`. The limit is documented by public fixes (trnfft, on legacy `neuronxcc.nki` kernels: "affine_range can't evaluate min() symbolically"), not by the API stubs; the legacy dialect's own answer to a tail is `mask=`.

## Why it matters on Trainium
The compiler needs every access's size at compile time. A clamp on the symbolic loop index cannot be evaluated, so the kernel fails to compile, typically only for the sizes that take a tail.

## Example
```python
for i in nl.affine_range(n_tiles):
    t = nl.load(x[i * 128:min((i + 1) * 128, N)])   # NKI516
```

## Fix
Use a constant tile size and assert that it divides the extent, or process the tail in a separate, statically sized step.
"""),
]
