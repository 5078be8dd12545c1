"""NKI527: a bit shift by 32 or more on an NKI tile.

Every integer dtype NKI documents is at most 32 bits wide (`int8/16/32`, `uint8/16/32` in each release's
`nki.language` stub; there is no 64-bit integer), and `nl.right_shift` / `nl.left_shift` shift each element
of its own dtype (like `numpy.right_shift`). A shift by >= 32 bits keeps none of the element's bits (or, where
the shift count wraps, all of them): `right_shift(x * c, 32)` never yields the high word of a 64-bit
product, which is what the idiom (Philox's mul-hi, fixed-point multiply) expects. trnrand's Philox kernel
produced 100% wrong outputs this way."""

from __future__ import annotations

import ast

from ...api import table
from ...api.hardware import Target
from ...api.version import target_version
from ...findings import Severity
from ...parse.nki_model import NkiFile
from ..registry import RuleSpec
from .api_usage import dotted, usage
from .common import check, emit

RULES = [  # this module's rules: the registry collects them, docs/rules/ is generated from them
    RuleSpec("NKI527", "shift-wider-than-nki-integer", "overflow-risk", Severity.WARNING,
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
""", policy="failure", emits=(Severity.ERROR,)),
]

_SHIFTS = frozenset({"nl.right_shift", "nl.left_shift"})
_WIDE = ("nl.int64", "nl.uint64")


def _amount(node: ast.AST | None) -> int | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    return None


def _shift_of(c, aliases) -> tuple[str, int] | None:
    """(api, amount) for `nl.right_shift(x, 32)` or `nisa.tensor_scalar(..., op0=nl.right_shift, operand0=32)`."""
    call = c.node
    if c.ref.name in _SHIFTS:
        y = next((k.value for k in call.keywords if k.arg == "y"), call.args[1] if len(call.args) > 1 else None)
        n = _amount(y)
        return (c.ref.name, n) if n is not None else None
    if c.ref.name == "nisa.tensor_scalar":
        kw = {k.arg: k.value for k in call.keywords}
        for i in ("0", "1"):
            op = dotted(kw["op" + i], aliases) if "op" + i in kw else None
            n = _amount(kw.get("operand" + i))
            if op in _SHIFTS and n is not None:
                return op, n
    return None


@check("NKI527", per_file=True)
def wide_shift(nf: NkiFile, t: Target):
    if not any("shift" in x for x in nf.lines) or (u := usage(nf)) is None or not u.aliases:
        return
    v = target_version(t)
    # certain where the table is this version's and lists no 64-bit integer dtype
    certain = not u.legacy and all(table.lookup(w, v) is None for w in _WIDE)
    for c in u.calls:
        hit = _shift_of(c, u.aliases)
        if hit is None or hit[1] < 32:
            continue
        api, n = hit
        yield emit("NKI527", nf, c.ref.line, c.ref.col, c.node.end_lineno or c.ref.line,
                   (c.node.end_col_offset or 0) + 1,
                   f"`{api}` by {n} bits: NKI's integer dtypes are at most 32 bits wide, so the shift keeps none of "
                   "an element's bits; it cannot extract the high word of a product.",
                   {"api": api, "shift": n, "max_bits": 32, "nki_version": v},
                   severity=Severity.ERROR if certain else Severity.WARNING,
                   confidence="high" if certain else "medium",
                   fix="Split the operands into 16-bit halves (or bytes) so every partial product fits in 32 bits, "
                       "and recombine the halves with shifts below 32.")
