"""Dialect / API-version rules (reference §2.5): removed, deprecated and too-new APIs, mixed namespaces."""

from __future__ import annotations

from ...api import table
from ...api.version import target_version
from ...findings import Severity
from ...api.hardware import Target
from ...parse.nki_model import NkiFile
from .api_usage import usage
from .common import check, emit

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
