"""Call forms public NKI kernels got wrong and maintainers later fixed (NKI517-NKI519): a matmul result
accumulated into PSUM with an operator other than `+=`, a NumPy attribute that NumPy does not have used inside a
kernel (legacy ops take NumPy functions, `op0=np.multiply`), and `nl.load_transpose2d` reading a kernel-local HBM
buffer. Read from the kernels' Python AST (rules/nki/api_usage.py), in both dialects."""

from __future__ import annotations

import ast
import difflib
import importlib

from ...api.hardware import Target
from ...findings import Severity
from ...parse.nki_model import NkiFile
from ..registry import RuleSpec
from .api_usage import dotted, usage
from .common import allocation_of, check, emit, kernel_function, walk_nodes

RULES = [  # this module's rules: the registry collects them, docs/rules/ is generated from them
    RuleSpec("NKI517", "psum-non-additive-accumulation", "unsupported-construct", Severity.WARNING,
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
    RuleSpec("NKI518", "unknown-numpy-attribute-in-kernel", "unsupported-construct", Severity.WARNING,
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
    RuleSpec("NKI519", "transpose-load-from-local-hbm", "unsupported-construct", Severity.WARNING,
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

MATMULS = frozenset({"nisa.nc_matmul", "nl.matmul"})
_AUG = {ast.Sub: "-=", ast.Mult: "*=", ast.Div: "/=", ast.FloorDiv: "//=", ast.Mod: "%=", ast.Pow: "**=",
        ast.MatMult: "@=", ast.BitAnd: "&=", ast.BitOr: "|=", ast.BitXor: "^=", ast.LShift: "<<=",
        ast.RShift: ">>="}
# operator short names people write for NumPy's spelled-out ufuncs (np.mul: np.multiply)
NUMPY_SPELLED_OUT = {"mul": "multiply", "sub": "subtract", "div": "divide", "pow": "power", "neg": "negative"}
HBM_BUFFERS = frozenset({"shared_hbm", "hbm", "private_hbm"})


def _matmul_call(node: ast.AST, aliases: dict[str, str]) -> str | None:
    if isinstance(node, ast.UnaryOp):  # psum -= -nc_matmul(...) is still not an accumulation
        node = node.operand
    if isinstance(node, ast.Call):
        name = dotted(node.func, aliases)
        return name if name in MATMULS else None
    return None


@check("NKI517", per_file=True)
def psum_non_additive_accumulation(nf: NkiFile, t: Target):
    if (u := usage(nf)) is None or not u.aliases:
        return
    for k, node in u.arith:
        if not isinstance(node, ast.AugAssign) or type(node.op) not in _AUG:
            continue
        api = _matmul_call(node.value, u.aliases)
        if api is None:
            continue
        op = _AUG[type(node.op)]
        target = ast.unparse(node.target)
        yield emit("NKI517", nf, node.lineno, node.col_offset + 1, node.end_lineno or node.lineno,
                   (node.end_col_offset or node.col_offset) + 1,
                   f"`{target} {op} {api}(...)`: PSUM accumulates matmul results by addition only; `{op}` is not an "
                   "accumulation the Tensor Engine can do, so the kernel fails to compile (trnfft: `psum -=` "
                   "inside affine_range) or the compiler adds a separate engine pass.",
                   {"target": target, "operator": op, "api": api, "kernel": k.name},
                   confidence="medium",
                   fix=("Negate one operand first (nl.negative / a negated copy) and accumulate with `+=`."
                        if op == "-=" else f"Accumulate with `+=` and apply the `{op[:-1]}` to the result afterwards."))


def _numpy_aliases(nf: NkiFile) -> dict[str, str]:
    return {a: m for a, m in nf.imports.items() if m == "numpy" or m.startswith("numpy.")}


def _attr_chain(node: ast.Attribute) -> tuple[str, list[str]] | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return (node.id, list(reversed(parts))) if isinstance(node, ast.Name) else None


def _removed_from_numpy(numpy) -> set[str]:
    """Names NumPy removed on purpose (2.0's expired attributes, 1.24's former aliases): absent here, present in
    the NumPy 1.x a kernel's environment may pin, so not reported."""
    out = set(getattr(getattr(numpy, "_expired_attrs_2_0", None), "__expired_attributes__", None) or ())
    return out | set(getattr(numpy, "__former_attrs__", None) or ()) | set(
        getattr(numpy, "__expired_functions__", None) or ())


def _numpy_missing(numpy, module: str, parts: list[str]) -> int | None:
    """The index in `parts` of the first attribute the installed NumPy lacks; None when it has them all."""
    try:
        obj = importlib.import_module(module)
    except ImportError:
        return None
    for i, p in enumerate(parts):
        if not hasattr(obj, p):
            return None if obj is numpy and p in _removed_from_numpy(numpy) else i
        obj = getattr(obj, p)
    return None


@check("NKI518", per_file=True)
def unknown_numpy_attribute(nf: NkiFile, t: Target):
    aliases = _numpy_aliases(nf)
    if not aliases:
        return
    numpy = None  # imported at the first kernel that reads it (~0.1 s once per process)
    seen: set[tuple[int, int]] = set()
    looked_up: dict[tuple[str, tuple[str, ...]], int | None] = {}
    for k in nf.kernels:
        if not any(f"{a}." in line for line in nf.lines[k.line - 1:k.end_line] for a in aliases):
            continue
        if numpy is None:
            import numpy
        fn = kernel_function(nf, k)
        nodes = sorted(walk_nodes(nf, fn, ast.Attribute) if fn is not None else (),
                       key=lambda n: (n.lineno, n.col_offset, -(n.end_col_offset or 0)))  # outermost chain first
        for node in nodes:
            chain = _attr_chain(node)
            if chain is None or chain[0] not in aliases or (node.lineno, node.col_offset) in seen:
                continue
            seen.add((node.lineno, node.col_offset))
            base, parts = chain
            key = (aliases[base], tuple(parts))
            if key not in looked_up:
                looked_up[key] = _numpy_missing(numpy, aliases[base], parts)
            i = looked_up[key]
            if i is None:
                continue
            attr, shown = parts[i], ".".join([base, *parts[:i + 1]])
            name = ".".join([aliases[base], *parts[:i + 1]])
            pool = sorted(n for n in dir(numpy) if not n.startswith("_")) if i == 0 and aliases[base] == "numpy" \
                else []
            close = difflib.get_close_matches(attr, pool, n=1, cutoff=0.6)
            hint = NUMPY_SPELLED_OUT.get(attr) if i == 0 else None
            hint = hint or (close[0] if close else None)
            yield emit("NKI518", nf, node.lineno, node.col_offset + 1, node.end_lineno or node.lineno,
                       (node.end_col_offset or node.col_offset) + 1,
                       f"`{shown}` inside the kernel `{k.name}`: the installed NumPy ({numpy.__version__}) has no "
                       f"`{name}`, so tracing the kernel raises AttributeError on this line"
                       + (f"; did you mean `{'.'.join([base, *parts[:i], hint])}`?" if hint else "."),
                       {"name": name, "numpy_version": numpy.__version__, "kernel": k.name, "suggestion": hint},
                       fix=(f"Use `{'.'.join([base, *parts[:i], hint])}`." if hint else "Use an attribute NumPy has."))


def _base_name(node: ast.AST) -> str | None:
    """`buf` for `buf[a:b, c]`, `buf.reshape(...)[...]`; None for anything else."""
    while True:
        if isinstance(node, ast.Subscript):
            node = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            node = node.func.value
        else:
            return node.id if isinstance(node, ast.Name) else None


@check("NKI519", per_file=True)
def transpose_load_from_local_hbm(nf: NkiFile, t: Target):
    if (u := usage(nf)) is None:
        return
    for c in u.calls:
        if c.ref.name != "nl.load_transpose2d":
            continue
        src = c.node.args[0] if c.node.args else next((kw.value for kw in c.node.keywords if kw.arg == "src"), None)
        name = _base_name(src) if src is not None else None
        k = next((k for k in sorted(nf.kernels, key=lambda k: k.line - k.end_line)
                  if k.line <= c.ref.line <= k.end_line), None)
        if name is None or k is None or any(p.name == name for p in k.params):
            continue
        a = allocation_of(k, name, c.ref.line)
        if a is None or a.implicit or a.buffer not in HBM_BUFFERS:
            continue
        yield emit("NKI519", nf, c.ref.line, c.ref.col, c.ref.end_line, c.ref.end_col,
                   f"`nl.load_transpose2d` reads `{name}`, an HBM buffer the kernel allocates (line {a.line}, "
                   f"buffer=nl.{a.buffer}); public kernels report that it accepts only the kernel's HBM arguments "
                   "(trnfft: a kernel-local shared_hbm scratch failed NEFF compilation on NKI 0.3.0).",
                   {"tensor": name, "allocation_line": a.line, "buffer": a.buffer, "kernel": k.name},
                   severity=Severity.WARNING, confidence="low",
                   fix="Transpose on chip instead (nisa.nc_transpose of an SBUF tile), or pass the data in as a kernel "
                       "argument.")
