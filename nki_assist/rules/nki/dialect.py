"""Dialect / API-version rules (reference §2.5): removed, deprecated and too-new APIs, mixed namespaces."""

from __future__ import annotations

from ...api import table
from ...api.hardware import Target
from ...api.version import target_version
from ...findings import Severity
from ...parse.nki_model import NkiFile
from ..registry import RuleSpec
from .api_usage import usage
from .common import check, emit

RULES = [  # this module's rules: the registry collects them, docs/rules/ is generated from them
    RuleSpec("NKI501", "removed-api-in-new-nki", "deprecated-api", Severity.ERROR,
             "New-dialect file uses an API removed (error) or deprecated (warning) at or before the target NKI version.",
             fix="Use the replacement named in the message (see the NKI migration guide).",
             doc="""\
## What it finds
In a new-dialect file (`import nki`): APIs and keyword arguments that the versioned NKI API table (docs/api-table.md) lists as removed or deprecated at or before the target NKI version (`nki-version`, `--nki-version`, the project's pins, else the newest). These are `mask=` (removed 0.2), `nl.arange`/`nl.mgrid`, `nki.simulate_kernel`/`baremetal`/`benchmark`/`profile` (removed 0.2), `dst_rmw_op=` and `nki.jit(platform_target=)` (removed 0.3), `tensor_copy_dynamic_src/dst` (deprecated 0.3, removed 0.4), `nl.tile_size.psum_fmax` and `total_available_sbuf_size` (deprecated 0.4, not removed), and `nl.dynamic_range` (deprecated 0.6).

Removed at or before the target is an `error`; deprecated at or before it is a `warning` (it still compiles); deprecated or removed only after the target is silent. So `nl.tile_size.psum_fmax` is fine for a project that targets 0.3, which is what nki-library uses it for. A fix names the replacement only when the target version has it.

## Why it matters on Trainium
The compiler rejects removed APIs outright. Kernels half-ported from legacy samples fail to compile, or (for masks) lose their tail handling when the mask is just deleted. Deprecated APIs still work but will break on the next upgrade.

## Example
```python
x = nl.load(a[0:128, 0:512], mask=(i_p < M))   # mask= removed in 0.2
```

## Fix
Use the replacement in the message: min()-clamped slices instead of masks, slices or `.ap()` instead of `nl.arange`, `nl.tile_size.psum_bank_fmax` (0.4+) instead of `psum_fmax`.
""", emits=(Severity.WARNING,)),
    RuleSpec("NKI502", "deprecated-loop-iterator", "deprecated-api", Severity.INFO,
             "New NKI: nl.affine_range / sequential_range / static_range are deprecated aliases of range.",
             fix="Write `for i in range(n)` (or nl.fori_loop for a runtime loop).",
             doc="""\
## What it finds
In new NKI, loops over `nl.affine_range`, `nl.sequential_range` or `nl.static_range`.

## Why it matters on Trainium
New NKI unrolls every Python loop at specialization; these iterators are deprecated aliases of `range`. Their legacy meanings (parallel vs carried) no longer apply, which misleads readers porting legacy reasoning.

## Example
```python
for i in nl.affine_range(4):   # same as range(4) in new NKI
```

## Fix
Write `range(...)`, or `nl.fori_loop` for a loop that must stay a runtime loop.
"""),
    RuleSpec("NKI503", "new-api-in-legacy-nki", "deprecated-api", Severity.ERROR,
             "Legacy (neuronxcc.nki) file uses an API that only exists in new NKI (fori_loop, dma_compute, ...).",
             fix="Port the file to `import nki` or use the legacy equivalent named in the message.",
             doc="""\
## What it finds
In a legacy (`neuronxcc.nki`) file: APIs that exist only in new NKI. These are `nl.fori_loop`/`while_loop`, `nisa.dma_compute`, `nisa.register_*`, `nki.simulate`, `nl.tile_size.psum_bank_fmax`, MX/topk/exponential ISA calls, and `accumulate=` on `nc_matmul`.

## Why it matters on Trainium
The legacy toolchain has none of these names, so the kernel fails at import or trace time. This usually means a file mixes code copied from the new docs into a legacy kernel.

## Example
```python
nisa.nc_matmul(ps, st, mv, accumulate=True)   # legacy: ps += nisa.nc_matmul(st, mv)
```

## Fix
Use the legacy equivalent named in the message, or port the whole file to `import nki`.
"""),
    RuleSpec("NKI504", "mixed-nki-namespaces", "deprecated-api", Severity.ERROR,
             "The file imports both neuronxcc.nki and nki; NKI 0.4+ rejects neuronxcc.nki inside kernels.",
             fix="Import only `nki` (nki.language, nki.isa) and port the legacy calls.",
             doc="""\
## What it finds
A file that imports both the legacy `neuronxcc.nki` namespace and the new `nki` namespace. At a target NKI version of 0.4 or later, with the legacy namespace used inside a kernel, it is an `error` (a compile error since 0.4); otherwise a `warning`. Up to 0.3 a legacy import used only in type annotations (`neuronxcc.nki.typing`) is legal and not reported.

## Why it matters on Trainium
Since NKI 0.4, using `neuronxcc.nki` inside a kernel is a compile error, and all kernels in one model must use the same NKI version. Mixed files are half-migrated and break on current toolchains.

## Example
```python
import nki.isa as nisa
import neuronxcc.nki.language as nl   # legacy namespace
```

## Fix
Import only `nki`, `nki.language` and `nki.isa`, and port the legacy calls (see NKI501).
""", emits=(Severity.WARNING,)),
    RuleSpec("NKI505", "block-dimension-in-new-nki", "deprecated-api", Severity.ERROR,
             "New NKI: a tile has dimensions before its partition dim (block dims), removed in NKI 0.2.",
             fix="Make the partition dim leftmost and keep a Python list of tiles instead of block dims.",
             doc="""\
## What it finds
In new NKI: an SBUF/PSUM allocation with dimensions before its `nl.par_dim` partition dimension (legacy block dimensions).

## Why it matters on Trainium
NKI 0.2 removed block dimensions: the partition dimension must be leftmost. The allocation no longer compiles, and indexing `buf[i]` means something different.

## Example
```python
buf = nl.ndarray((2, nl.par_dim(128), 512), dtype=nl.float32, buffer=nl.sbuf)
```

## Fix
Allocate a Python list of `(128, 512)` tiles (one per block), or fold the block into the free dimension.
"""),
]

# Removed / deprecated APIs and keywords come from the versioned API table (nki_assist/api), read at the
# target NKI version (Target.nki_version): removed at or before it = error, deprecated at or before it =
# warning, deprecated after it = silent. These are the names NKI501 reports (the loop aliases are NKI502's).
NKI501_APIS = ("nl.arange", "nl.mgrid", "nl.tile_size.psum_fmax", "nl.tile_size.total_available_sbuf_size",
               "nisa.tensor_copy_dynamic_src", "nisa.tensor_copy_dynamic_dst", "nki.simulate_kernel",
               "nki.baremetal", "nki.benchmark", "nki.profile", "nl.dynamic_range", "nl.spmd_dim")
NKI501_KWARGS = ("mask", "dst_rmw_op", "platform_target")
# legacy file: api -> what to use in legacy NKI
NEW_ONLY = {
    "nl.fori_loop": "nl.sequential_range", "nl.while_loop": "nl.sequential_range",
    "nisa.dma_compute": "nisa.dma_copy(dst_rmw_op=...)", "nki.simulate": "nki.simulate_kernel",
    "nisa.register_alloc": "Python scalars", "nisa.register_move": "Python scalars",
    "nisa.register_load": "Python scalars", "nisa.register_store": "Python scalars",
    "nl.tile_size.psum_bank_fmax": "nl.tile_size.psum_fmax", "nisa.nc_matmul_mx": "nisa.nc_matmul",
    "nisa.quantize_mx": "explicit scaling", "nisa.topk": "nisa.max8 / nisa.nc_find_index8",
    "nisa.exponential": "nisa.activation(op=nl.exp)",
}
LOOP_ALIASES = ("nl.affine_range", "nl.sequential_range", "nl.static_range")


def _replacement_ok(repl: str | None, v: str) -> bool:
    """A fix may name the replacement only when the target version has it (no fix the target rejects)."""
    if not repl:
        return False
    name = repl.split(" ")[0].split("(")[0]
    if not name.startswith(("nl.", "nisa.", "nki.")):
        return True
    return table.status(name, v) in ("present", "deprecated")


@check("NKI501")
def removed_api(nf: NkiFile, t: Target):
    if nf.dialect != "new":
        return
    v = target_version(t)
    for k in nf.kernels:
        for r in k.api_refs:
            if r.kwarg is not None:
                if r.kwarg not in NKI501_KWARGS or (r.kwarg == "platform_target" and r.api != "nki.jit"):
                    continue
                st = table.kwarg_status(r.api, r.kwarg, v)
                fact = table.kwarg_fact(r.api, r.kwarg) or {}
                if st not in ("removed", "deprecated"):
                    continue
                repl = fact.get("replacement", "the documented replacement")
                ver = fact.get("removed") if st == "removed" else fact.get("deprecated")
                yield emit("NKI501", nf, r.line, r.col, r.end_line, r.end_col,
                           f"`{r.kwarg}=` on `{r.api}` was {st} in NKI {ver}; use {repl}.",
                           {"api": r.api, "kwarg": r.kwarg, f"{st}_in": ver, "replacement": repl, "nki_version": v},
                           severity=Severity.ERROR if st == "removed" else Severity.WARNING,
                           fix=f"Drop `{r.kwarg}=` and use {repl}.")
                continue
            if r.api not in NKI501_APIS:
                continue
            st = table.status(r.api, v)
            if st not in ("removed", "deprecated"):
                continue  # present at the target (deprecated later, if at all): silent
            e = table.lookup(r.api, v)
            repl = e.replacement if e and e.replacement else "the documented replacement"
            ver = e.removed if st == "removed" else e.deprecated
            ev = {"api": r.api, f"{st}_in": ver, "replacement": repl, "nki_version": v}
            yield emit("NKI501", nf, r.line, r.col, r.end_line, r.end_col,
                       f"`{r.api}` was {st} in NKI {ver}; use {repl}.", ev,
                       severity=Severity.ERROR if st == "removed" else Severity.WARNING,
                       fix=f"Replace `{r.api}` with {repl}." if _replacement_ok(repl, v) else None)


@check("NKI502")
def deprecated_loops(nf: NkiFile, t: Target):
    if nf.dialect != "new":
        return
    v = target_version(t)
    for k in nf.kernels:
        for r in k.api_refs:
            if r.kwarg is None and r.api in LOOP_ALIASES and table.status(r.api, v) == "deprecated":
                yield emit("NKI502", nf, r.line, r.col, r.end_line, r.end_col,
                           f"`{r.api}` is a deprecated alias of `range` in new NKI: the loop is unrolled at "
                           "specialization and its legacy scheduling meaning is gone.",
                           {"api": r.api, "replacement": "range", "nki_version": v},
                           fix=f"Replace `{r.api}(...)` with `range(...)`" + (
                               " (or nl.fori_loop for a runtime loop)." if table.status("nl.fori_loop", v) == "present"
                               else "."))


@check("NKI503")
def new_api_in_legacy(nf: NkiFile, t: Target):
    if nf.dialect != "legacy":
        return
    for k in nf.kernels:
        for r in k.api_refs:
            if r.kwarg == "accumulate" and r.api == "nisa.nc_matmul":
                yield emit("NKI503", nf, r.line, r.col, r.end_line, r.end_col,
                           "`accumulate=` on nisa.nc_matmul exists only in NKI 0.3+; legacy NKI accumulates with "
                           "`psum += nisa.nc_matmul(...)`.",
                           {"api": r.api, "kwarg": "accumulate", "legacy_equivalent": "psum += nc_matmul"})
            elif r.kwarg is None and r.api in NEW_ONLY:
                yield emit("NKI503", nf, r.line, r.col, r.end_line, r.end_col,
                           f"`{r.api}` exists only in new NKI (`import nki`); legacy neuronxcc.nki has "
                           f"{NEW_ONLY[r.api]} instead.",
                           {"api": r.api, "legacy_equivalent": NEW_ONLY[r.api]})


@check("NKI504", per_file=True)
def mixed_namespaces(nf: NkiFile, t: Target):
    if nf.dialect != "transitional":
        return
    legacy = sorted((pos, alias) for alias, pos in nf.import_lines.items()
                    if nf.imports.get(alias, "").startswith(("neuronxcc.nki", "torch_neuronx.nki_jit"))
                    or (nf.imports.get(alias) == "neuronxcc" and any(m.startswith("neuronxcc.nki")
                                                                      for m in nf.imports_full)))
    if not legacy:
        return
    v = target_version(t)
    u = usage(nf)
    uses = [x for x in (u.legacy_uses if u else []) if x[0] in {a for _, a in legacy}]
    in_kernel = [x for x in uses if x[3] and not x[2]]
    only_annotations = u is not None and bool(uses) and all(x[2] for x in uses)
    rejects = table.vkey(v) >= (0, 4)  # RN 0.4.0: neuronxcc.nki inside kernels is a compile error
    if only_annotations and not rejects:
        return  # type annotations only: Python evaluates them, NKI never traces them; legal up to 0.3
    (line, col, end_col), alias = legacy[0]
    sev = Severity.ERROR if rejects and in_kernel else Severity.WARNING
    where = f"; the kernel uses it at line {in_kernel[0][1]}" if in_kernel else ""
    yield emit("NKI504", nf, line, col, line, end_col,
               f"This file imports both the legacy `neuronxcc.nki` namespace (`{alias}`) and new `nki`{where}; "
               + ("NKI 0.4+ rejects neuronxcc.nki inside kernels" if rejects else
                  f"NKI {v} still accepts it, but it is deprecated (a compile error from 0.4)")
               + " and all kernels in a model must use one NKI version.",
               {"legacy_alias": alias, "imports": dict(sorted(nf.imports.items())), "nki_version": v,
                "used_in_kernel": bool(in_kernel), "annotations_only": only_annotations},
               severity=sev)


@check("NKI505")
def block_dims(nf: NkiFile, t: Target):
    if nf.dialect != "new":
        return
    for k in nf.kernels:
        for a in k.allocations:
            if a.implicit or not a.partition_dim or a.buffer not in ("sbuf", "psum", "unknown"):
                continue
            yield emit("NKI505", nf, a.line, a.col, a.end_line, a.end_col,
                       f"`{a.name}` {list(a.shape or ())} has {a.partition_dim} block dimension(s) before its "
                       "partition dim; NKI 0.2+ requires the partition dim leftmost.",
                       {"tensor": a.name, "shape": list(a.shape or ()), "partition_dim": a.partition_dim,
                        "block_dims": list(a.block_dims)},
                       fix=f"Allocate {a.block_dims} separate tiles in a Python list, each with the partition dim first.")
