"""NKI113: a one-dimensional on-chip (SBUF/PSUM) tile in legacy `neuronxcc.nki` code.

Documented (legacy known issues): "Tile on SBUF/PSUM must have at least 2 dimensions ... If using a 1D tile on
SBUF/PSUM, users may get an `Insufficient rank` error", with `nl.zeros((128, ), dtype=dtype, buffer=nl.sbuf)` as
the example that "won't work". Two forms, each read from the kernel's own code:
- an on-chip allocation whose shape has one dim (`nl.zeros((128,), buffer=nl.sbuf)`);
- `nl.load` of a one-index access into an HBM tensor the kernel shows to be 1-D (allocated with a one-dim shape,
  a `.reshape((n,))` view, or a parameter unpacked as `n, = x.shape` / asserted `len(x.shape) == 1`): the loaded
  tile has no partition dim.
Not for NKI 0.3+ code: nki-library's own tests allocate `(1,)` SBUF tensors there. The same known issue's
"index [N, 1] buffers with both indices" is not checked: Neuron-team legacy kernels pass `bias=b[:n]` of an
`(n, 1)` buffer.
"""

from __future__ import annotations

import ast
import re

from ...api.hardware import Target
from ...findings import RelatedLocation, Severity
from ...parse.nki_model import NkiFile, NkiKernel
from ..registry import RuleSpec
from .common import check, emit, kernel_findings, kernel_function, resolve_api, scope_nodes

RULES = [  # this module's rules: the registry collects them, docs/rules/ is generated from them
    RuleSpec("NKI113", "on-chip-tile-below-two-dims", "unsupported-construct", Severity.WARNING,
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

_ALLOC = frozenset({"nl.ndarray", "nl.zeros", "nl.ones", "nl.full", "nl.empty"})
_ON_CHIP = ("sbuf", "psum")
# text a finding needs: an allocation, or a load (prefilter per kernel before the AST walk)
_HINT = re.compile(r"\b(?:ndarray|zeros|ones|full|empty|load)\(")


def _shape(call: ast.Call) -> list[ast.AST] | None:
    node = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "shape"), None)
    return list(node.elts) if isinstance(node, (ast.Tuple, ast.List)) else None


def _buffer(call: ast.Call) -> str:
    """sbuf | psum | hbm | "" (default: sbuf for nl.ndarray and friends)."""
    node = next((k.value for k in call.keywords if k.arg == "buffer"), None)
    if node is None and len(call.args) > 2:
        node = call.args[2]
    text = ast.unparse(node) if node is not None else "sbuf"
    return next((b for b in ("psum", "hbm", "sbuf") if b in text), "")


def _index_count(node: ast.Subscript) -> int:
    return len(node.slice.elts) if isinstance(node.slice, ast.Tuple) else 1


def _one_d_params(fn: ast.FunctionDef, nodes: list[ast.AST]) -> dict[str, int]:
    """Parameters the kernel shows to be 1-D: `n, = x.shape`, `(n,) = x.shape`, `assert len(x.shape) == 1`,
    `assert x.ndim == 1` -> the line that shows it."""
    params = {a.arg for a in fn.args.args + fn.args.kwonlyargs}
    out: dict[str, int] = {}
    for n in nodes:
        if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], (ast.Tuple, ast.List)) \
                and len(n.targets[0].elts) == 1 and isinstance(n.value, ast.Attribute) and n.value.attr == "shape" \
                and isinstance(n.value.value, ast.Name) and n.value.value.id in params:
            out.setdefault(n.value.value.id, n.lineno)
        elif isinstance(n, ast.Assert) and isinstance(n.test, ast.Compare) and len(n.test.ops) == 1 \
                and isinstance(n.test.ops[0], ast.Eq) and isinstance(n.test.comparators[0], ast.Constant) \
                and n.test.comparators[0].value == 1:
            left = n.test.left
            if isinstance(left, ast.Call) and isinstance(left.func, ast.Name) and left.func.id == "len" \
                    and left.args and isinstance(left.args[0], ast.Attribute) and left.args[0].attr == "shape":
                left = left.args[0].value
            elif isinstance(left, ast.Attribute) and left.attr == "ndim":
                left = left.value
            else:
                continue
            if isinstance(left, ast.Name) and left.id in params:
                out.setdefault(left.id, n.lineno)
    return out


@check("NKI113", per_file=True)  # reads the kernel's Python AST
def tile_rank(nf: NkiFile, t: Target):
    if nf.dialect != "legacy":
        return  # NKI 0.3+ code (nki-library's own tests) allocates (1,) SBUF tensors: the rule is the legacy docs'
    for k in nf.kernels:
        if _HINT.search("\n".join(nf.lines[k.line - 1:k.end_line])):
            # per kernel (the language server re-walks only an edited kernel)
            yield from kernel_findings(nf, k, "NKI113", _kernel_tiles)


def _kernel_tiles(nf: NkiFile, k: NkiKernel):
    """NKI113's findings in one kernel: they read its `def`, the file's imports and path."""
    fn = kernel_function(nf, k)
    if fn is None:
        return
    nodes = sorted((n for n in scope_nodes(nf, fn) if isinstance(n, (ast.Assign, ast.Assert, ast.Call, ast.Subscript))),
                   key=lambda n: (n.lineno, n.col_offset))
    one_d_hbm = _one_d_params(fn, nodes)  # name -> line that shows it is 1-D
    for n in nodes:
        if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
            name, value = n.targets[0].id, n.value
            one_d_hbm.pop(name, None)  # rebound: 1-D again only if the new value is
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) \
                    and value.func.attr == "reshape" and len(value.args) == 1 \
                    and isinstance(value.args[0], (ast.Tuple, ast.List)) and len(value.args[0].elts) == 1:
                one_d_hbm[name] = n.lineno  # a 1-D view
            elif isinstance(value, ast.Call) and resolve_api(nf, value.func) in _ALLOC:
                dims, buf = _shape(value), _buffer(value)
                if dims is not None and len(dims) == 1 and buf == "hbm":
                    one_d_hbm[name] = n.lineno
        if isinstance(n, ast.Call):
            api = resolve_api(nf, n.func)
            if api in _ALLOC:
                dims, buf = _shape(n), _buffer(n)
                if dims is not None and len(dims) == 1 and buf in _ON_CHIP:
                    yield emit("NKI113", nf, n.lineno, n.col_offset + 1, n.end_lineno,
                               (n.end_col_offset or 0) + 1,
                               f"`{ast.unparse(n)[:80]}` makes a one-dimensional {buf.upper()} tile: on-chip tiles "
                               "need a partition dim and a free dim (at least 2-D), or the compiler reports "
                               "`Insufficient rank`.",
                               {"form": "allocation", "buffer": buf, "shape": ast.unparse(n.args[0]) if n.args else ""},
                               fix="Give it a free dim of 1: `(N, 1)` instead of `(N,)`.")
            elif api == "nl.load" and n.args and isinstance(n.args[0], ast.Subscript):
                access = n.args[0]
                base = access
                while isinstance(base, ast.Subscript):
                    base = base.value
                if isinstance(base, ast.Name) and base.id in one_d_hbm and _index_count(access) == 1:
                    f = emit("NKI113", nf, n.lineno, n.col_offset + 1, n.end_lineno, (n.end_col_offset or 0) + 1,
                             f"`{ast.unparse(n)[:80]}` loads from `{base.id}`, which is 1-D: the tile it makes has "
                             "no partition dim (on-chip tiles are at least 2-D; the compiler reports "
                             "`Insufficient rank`).",
                             {"form": "load", "tensor": base.id, "shown_line": one_d_hbm[base.id]},
                             fix=f"View `{base.id}` as 2-D first (`{base.id}.reshape((rows, cols))`, the rows on "
                                 "the partition dim) and load a `[P, F]` block of it.")
                    yield f.model_copy(update={"related": [RelatedLocation(
                        file=nf.path or "", line=one_d_hbm[base.id],
                        message=f"`{base.id}` is 1-D here")]})
