"""Hardware-generation rules: NKI521 (a `get_nc_version() == genN` branch that newer NeuronCores fail) and
NKI522 (a Tensor Engine transpose whose dst dtype differs from its input's, which NeuronCore-v3 rejects).
The generations come from the API table at the target NKI version (`nisa.nc_version.gen*`)."""

from __future__ import annotations

import ast
import re
from functools import partial

from ...api import table
from ...api.hardware import Target
from ...api.version import target_version
from ...findings import RelatedLocation, Severity
from ...parse.nki_model import Call, NkiFile, NkiKernel
from ..registry import RuleSpec
from .common import check, emit, kernel_findings, kernel_function, kernel_has, resolve_api, scope_nodes, source_has

RULES = [  # this module's rules: the registry collects them, docs/rules/ is generated from them
    RuleSpec("NKI521", "nc-version-equality", "hardware-generation", Severity.WARNING,
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
    RuleSpec("NKI522", "transpose-dtype-mismatch", "unsupported-construct", Severity.WARNING,
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
""", policy="failure", emits=(Severity.ERROR,)),
]

E, W = Severity.ERROR, Severity.WARNING
_GEN = re.compile(r"(?:^|\.)nc_version\.gen(\d+)$")
_ALLOC = frozenset({"nl.ndarray", "nl.zeros", "nl.ones", "nl.full", "nl.empty", "nl.zeros_like", "nl.ndarray_like"})
_DTYPE_OF = re.compile(r"^([A-Za-z_]\w*)\.dtype$")
_CORES = {2: "NeuronCore-v2 (trn1)", 3: "NeuronCore-v3 (trn2)", 4: "NeuronCore-v4 (trn3)"}


def generations(version: str) -> list[int]:
    """The NeuronCore generations `nisa.nc_version` lists at an NKI version (every version's, for legacy)."""
    names = table.module_names("nisa.nc_version", version) if version != table.legacy_version() else ()
    gens = {int(m.group(1)) for n in names if (m := re.fullmatch(r"gen(\d+)", n))}
    if not gens:
        gens = {int(m.group(1)) for v in table.versions() for n in table.module_names("nisa.nc_version", v)
                if (m := re.fullmatch(r"gen(\d+)", n))}
    return sorted(gens)


def _is_version_call(nf: NkiFile, node: ast.AST, names: set[str]) -> bool:
    if isinstance(node, ast.Call):
        return resolve_api(nf, node.func).endswith("get_nc_version")
    return isinstance(node, ast.Name) and node.id in names


def _generation(nf: NkiFile, node: ast.AST) -> int | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    m = _GEN.search(resolve_api(nf, node)) if isinstance(node, ast.Attribute) else None
    return int(m.group(1)) if m else None


@check("NKI521", per_file=True)
def nc_version_equality(nf: NkiFile, t: Target):
    # a version test names get_nc_version (in the call, or in the import of the name it calls)
    if nf.dialect not in ("legacy", "new", "transitional") or not source_has(nf, "get_nc_version"):
        return
    gens = generations(target_version(t))
    if len(gens) < 3:
        return
    # a kernel compares a version only if it calls get_nc_version, by that name or by an alias imported for it
    # (`resolve_api` keeps the called name's last part, or gives the import's target for a bare alias)
    names = ("get_nc_version", *(alias for alias, mod in nf.imports.items() if mod.endswith("get_nc_version")))
    for k in nf.kernels:
        if kernel_has(nf, k, *names):
            yield from kernel_findings(nf, k, "NKI521", partial(_kernel_compares, t=t, gens=gens), t.name,
                                       target_version(t))


def _kernel_compares(nf: NkiFile, k: NkiKernel, t: Target, gens: list[int]):
    """NKI521's findings in one kernel: they read its `def`, the file's imports and path, and the target."""
    fn = kernel_function(nf, k)
    if fn is not None:
        nodes = scope_nodes(nf, fn)
        version_names = {n.targets[0].id for n in nodes if isinstance(n, ast.Assign) and len(n.targets) == 1
                         and isinstance(n.targets[0], ast.Name) and _is_version_call(nf, n.value, set())}
        for n in nodes:
            if not isinstance(n, ast.Compare) or len(n.ops) != 1 or not isinstance(n.ops[0], (ast.Eq, ast.NotEq)):
                continue
            left, right = n.left, n.comparators[0]
            if _is_version_call(nf, right, version_names):
                left, right = right, left
            if not _is_version_call(nf, left, version_names):
                continue
            g = _generation(nf, right)
            if g is None or not gens[0] < g < gens[-1]:
                continue  # the oldest (== means "and older") or the newest (nothing later yet)
            eq = isinstance(n.ops[0], ast.Eq)
            later = ", ".join(_CORES.get(x, f"gen{x}") for x in gens if x > g)
            op = ">=" if eq else "<"
            yield emit("NKI521", nf, n.lineno, n.col_offset + 1, n.end_lineno, (n.end_col_offset or 0) + 1,
                       f"`{ast.unparse(n)}` is {'false' if eq else 'true'} on {later}: newer cores take the branch "
                       f"meant for older generations. Generation checks usually mean \"gen{g} and later\": "
                       f"compare with `{op}`.",
                       {"generation": g, "operator": "==" if eq else "!=", "later": [x for x in gens if x > g],
                        "target": t.name, "nki_version": target_version(t)},
                       fix=f"Write `{ast.unparse(left)} {op} {ast.unparse(right)}`.", confidence="medium")


def _alloc_call(k: NkiKernel, name: str, line: int) -> Call | None:
    best = None
    for c in k.calls:
        if c.target == name and c.api in _ALLOC and c.line <= line and (best is None or c.line >= best.line):
            best = c
    return best


def _dtype(k: NkiKernel, operand, line: int, params: set[str]) -> tuple[str, str, int | None] | None:
    """("literal", dtype, alloc line) or ("input", parameter name, alloc line); None when unknown."""
    alloc = _alloc_call(k, operand.name, line) if operand.name else None
    where = alloc.line if alloc else None
    if operand.dtype:
        return "literal", operand.dtype, where
    if alloc is None:
        return None
    text = alloc.kwargs.get("dtype") or (alloc.args[1] if len(alloc.args) > 1 else "")
    m = _DTYPE_OF.match(text.strip())
    if m and m.group(1) in params:
        return "input", m.group(1), where
    return None


@check("NKI522")
def transpose_dtype(nf: NkiFile, t: Target):
    if nf.dialect not in ("new", "transitional"):
        return
    for k in nf.kernels:
        params = {p.name for p in k.params}
        for c in k.calls:
            if c.api != "nisa.nc_transpose" or not c.dst_style:
                continue
            ops = {o.role: o for o in c.operands}
            dst, data = ops.get("dst"), ops.get("data")
            if dst is None or data is None or dst.buffer not in ("psum", None):
                continue
            if "vector_engine" in (c.kwargs.get("engine") or ""):
                continue
            d_dst, d_data = _dtype(k, dst, c.line, params), _dtype(k, data, c.line, params)
            if d_dst is None or d_data is None or d_dst[1] == d_data[1]:
                continue
            if d_dst[0] == "input" and d_data[0] == "input":
                continue  # two inputs' dtypes: usually the same
            certain = d_dst[0] == d_data[0] == "literal" and t.name != "trn1"
            show = {"literal": lambda d: d[1], "input": lambda d: f"the dtype of kernel input `{d[1]}`"}
            msg = (f"`nisa.nc_transpose` writes `{dst.text}` ({show[d_dst[0]](d_dst)}) from `{data.text}` "
                   f"({show[d_data[0]](d_data)}); the transpose's dst must have the data tile's dtype "
                   "(NeuronCore-v3 and later do not convert)")
            if not certain:
                msg += ("" if t.name != "trn1" else "; trn1's PE array wrote fp32, later cores keep the input dtype")
                if "input" in (d_dst[0], d_data[0]):
                    msg += ": they match only when the caller passes that dtype"
            related = [RelatedLocation(file=nf.path, line=ln, message=f"`{o.text}` allocated")
                       for o, d in ((data, d_data), (dst, d_dst)) if (ln := d[2]) is not None]
            f = emit("NKI522", nf, c.line, c.col, c.end_line, c.end_col, msg + ".",
                     {"dst": dst.text, "data": data.text, "dst_dtype": d_dst[1], "data_dtype": d_data[1],
                      "dst_kind": d_dst[0], "data_kind": d_data[0], "target": t.name},
                     severity=E if certain else W, confidence="high" if certain else "medium")
            yield f.model_copy(update={"related": related})
