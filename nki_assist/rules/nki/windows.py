"""Sliding windows (NKI111): overlapping per-tap loads of a convolution or stencil.

A load whose offset steps by less than its extent over a loop that selects no output element reads
overlapping windows on purpose (tap t of a convolution reads the input shifted by t). That is not an
indexing error (MIG110 stays silent on it); the cost is that every window is its own HBM transfer.
"""

from __future__ import annotations

from ...api.hardware import Target
from ...findings import Severity
from ...parse.nki_model import NkiFile
from ..migration.index import evaluator, output_axes, sliding_windows
from ..migration.pair import output_store
from ..registry import RuleSpec
from .common import check, emit

RULES = [  # this module's rules: the registry collects them, docs/rules/ is generated from them
    RuleSpec("NKI111", "sliding-window-reloaded", "redundant-dma", Severity.INFO,
             "A load steps its offset by less than its extent over a loop that selects no output element (the "
             "taps of a convolution or stencil): correct overlapping windows, each reloaded from HBM.",
             fix="Load one halo tile (window extent plus the taps' total shift) per output tile and give each tap "
                 "a shifted SBUF slice of it.",
             doc="""\
## What it finds
A load inside a loop whose offset steps by less than the loaded extent, where the loop variable selects
no element of the kernel output: the taps of a convolution or a stencil, each reading the input window
shifted by one tap. The windows overlap on purpose, so this is not an indexing error (MIG110 stays
silent on such loads); the finding reports what the overlap costs: every tap's window is a separate
HBM transfer of mostly the same bytes.

## Why it matters on Trainium
HBM-to-SBUF DMA is usually the bottleneck of a convolution written as shifted matmuls. With `KW` taps
the loop above moves each input element `KW` times; the shifted copies can come from SBUF instead,
where a free-axis slice of a tile is just an access-pattern offset for the engine reading it.

## Example
```python
for n in range(L // 512):
    acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
    for t in range(3):                                    # taps: no output element depends on t
        xw = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=xw, src=x[0:128, n * 512 + t:n * 512 + t + 512])   # 511 of 512 columns shared
        nisa.nc_matmul(dst=acc, stationary=w_sb[0:128, t * 128:(t + 1) * 128], moving=xw)
```

## Fix
Load one halo tile per output tile, before the tap loop: the window extent plus the total shift of the
taps (here 512 + 2 = 514 columns), and give tap `t` the shifted SBUF slice `halo[:, t:t + 512]` as its
operand. One DMA replaces `KW`, and the matmuls (or vector ops) are unchanged.
"""),
]


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
