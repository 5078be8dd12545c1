"""Sliding windows (NKI111): overlapping per-tap loads of a convolution or stencil.

A load whose offset steps by less than its extent over a loop that selects no output element reads
overlapping windows on purpose (tap t of a convolution reads the input shifted by t). That is not an
indexing error (MIG110 stays silent on it); the cost is that every window is its own HBM transfer.
"""

from __future__ import annotations

from ...api.hardware import Target
from ...parse.nki_model import NkiFile
from ..migration.index import evaluator, output_axes, sliding_windows
from ..migration.pair import output_store
from .common import check, emit


@check("NKI111")
def sliding_window_reloads(nf: NkiFile, t: Target):
    for k in nf.kernels:
        ev = evaluator(k)
        seen = set()
        windows = k.memo("sliding_windows", lambda: sliding_windows(k, ev, output_axes(k, output_store(k), ev)))
        for w in windows:
            if (w["line"], w["loop_var"]) in seen:
                continue
            seen.add((w["line"], w["loop_var"]))
            taps, ext, step, var = w["taps"], w["extent"], w["step"], w["loop_var"]
            halo = ext + step * (taps - 1) if taps else None
            tile = f"`{w['tile']}`" if w["tile"] else "the window tile"
            shift = var if step == 1 else f"{var} * {step}"
            n = f"{taps}" if taps else f"every iteration of `{var}`"
            yield emit(
                "NKI111", nf, w["line"], w["col"], w["line"], None,
                f"`{w['operand']}` is loaded inside loop `{var}` (line {w['loop_line']}) with its axis-{w['axis']} "
                f"offset stepping by {step} per iteration over a {ext}-wide window, and `{var}` selects no output "
                f"element: a sliding window (convolution taps), correct as written. Consecutive windows share "
                f"{ext - step} of {ext} elements, so each input element is loaded from HBM up to "
                f"{n} times.",
                {"operand": w["operand"], "tensor": w["tensor"], "loop_var": var, "loop_line": w["loop_line"],
                 "extent": ext, "step": step, "taps": taps, "halo": halo, "axis": w["axis"]},
                fix=(f"Load one {halo}-wide halo tile of `{w['tensor']}` per output tile, before loop `{var}`, and "
                     f"give tap `{var}` the shifted SBUF slice [{shift}:{shift} + {ext}] of it instead "
                     f"of reloading {tile}: {taps - 1} of {taps} HBM loads of the window disappear."
                     if halo else
                     f"Load one halo tile of `{w['tensor']}` (the {ext}-wide window plus the shift of the last "
                     f"`{var}`) per output tile and give each `{var}` a shifted SBUF slice of it."),
                confidence="medium")
