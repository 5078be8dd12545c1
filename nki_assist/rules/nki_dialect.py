"""Dialect / API-version rules (reference §2.5): removed, deprecated and too-new APIs, mixed namespaces."""

from __future__ import annotations

from ..findings import Severity
from ..hardware import Target
from ..parse.nki_model import NkiFile
from .nki_common import check, emit

# new-dialect file: api -> (replacement, NKI version that removed/renamed it, severity)
REMOVED_IN_NEW = {
    "nl.arange": ("slices or .ap() access patterns", "0.2", Severity.ERROR),
    "nl.mgrid": ("slices or .ap() access patterns", "0.2", Severity.ERROR),
    "nl.tile_size.psum_fmax": ("nl.tile_size.psum_bank_fmax", "0.4", Severity.ERROR),
    "nl.tile_size.total_available_sbuf_size": ("nl.tile_size.sbuf_fmax_bytes (usable bytes per partition)",
                                               "0.4", Severity.WARNING),
    "nisa.tensor_copy_dynamic_src": ("nisa.tensor_copy with .ap(scalar_offset=...)", "0.4", Severity.ERROR),
    "nisa.tensor_copy_dynamic_dst": ("nisa.tensor_copy with .ap(scalar_offset=...)", "0.4", Severity.ERROR),
    "nki.simulate_kernel": ("nki.simulate(kernel)(...)", "0.2", Severity.ERROR),
    "nki.baremetal": ("nki.simulate or the framework launcher", "0.2", Severity.ERROR),
    "nki.benchmark": ("neuron-profile / Neuron Explorer", "0.2", Severity.ERROR),
    "nki.profile": ("neuron-profile / Neuron Explorer", "0.2", Severity.ERROR),
    "nl.dynamic_range": ("nl.fori_loop(lower, upper, body_fun)", "0.6", Severity.WARNING),
    "nl.spmd_dim": ("kernel[2](...) launch with nl.program_id", "0.2", Severity.ERROR),
}
REMOVED_KWARGS = {
    "mask": ("min()-clamped slices", "0.2"),
    "dst_rmw_op": ("nisa.dma_compute", "0.3"),
    "platform_target": ("NEURON_PLATFORM_TARGET_OVERRIDE", "0.3"),
}
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


@check("NKI501")
def removed_api(nf: NkiFile, t: Target):
    if nf.dialect != "new":
        return
    for k in nf.kernels:
        for r in k.api_refs:
            if r.kwarg is not None:
                if r.kwarg in REMOVED_KWARGS and (r.kwarg != "platform_target" or r.api == "nki.jit"):
                    repl, ver = REMOVED_KWARGS[r.kwarg]
                    yield emit("NKI501", nf, r.line, r.col, r.end_line, r.end_col,
                               f"`{r.kwarg}=` on `{r.api}` was removed in NKI {ver}; use {repl}.",
                               {"api": r.api, "kwarg": r.kwarg, "removed_in": ver, "replacement": repl},
                               fix=f"Drop `{r.kwarg}=` and use {repl}.")
                continue
            if r.api in REMOVED_IN_NEW:
                repl, ver, sev = REMOVED_IN_NEW[r.api]
                verb = "deprecated" if sev is Severity.WARNING else "removed or renamed"
                yield emit("NKI501", nf, r.line, r.col, r.end_line, r.end_col,
                           f"`{r.api}` was {verb} in NKI {ver}; use {repl}.",
                           {"api": r.api, "removed_in": ver, "replacement": repl},
                           severity=sev, fix=f"Replace `{r.api}` with {repl}.")


@check("NKI502")
def deprecated_loops(nf: NkiFile, t: Target):
    if nf.dialect != "new":
        return
    for k in nf.kernels:
        for r in k.api_refs:
            if r.kwarg is None and r.api in LOOP_ALIASES:
                yield emit("NKI502", nf, r.line, r.col, r.end_line, r.end_col,
                           f"`{r.api}` is a deprecated alias of `range` in new NKI: the loop is unrolled at "
                           "specialization and its legacy scheduling meaning is gone.",
                           {"api": r.api, "replacement": "range"},
                           fix=f"Replace `{r.api}(...)` with `range(...)` (or nl.fori_loop for a runtime loop).")


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
    (line, col, end_col), alias = legacy[0]
    yield emit("NKI504", nf, line, col, line, end_col,
               f"This file imports both the legacy `neuronxcc.nki` namespace (`{alias}`) and new `nki`; NKI 0.4+ "
               "rejects neuronxcc.nki inside kernels and all kernels in a model must use one NKI version.",
               {"legacy_alias": alias, "imports": dict(sorted(nf.imports.items()))})


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
