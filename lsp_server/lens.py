"""Code lens over each kernel: SBUF peak %, PSUM banks, and MFU/bottleneck after a review ran."""

from __future__ import annotations

from typing import Any, Sequence

from lsprotocol import types
from pygls.workspace.position_codec import PositionCodec

from .hover import _get
from .positions import UTF16, to_lsp_position
from .symbols import lens_sizes

REVIEW_COMMAND = "nki-assist.reviewPort"


def kernel_title(resources: dict | None, perf: dict | None, target: Any, kernel: Any = None) -> str:
    parts = []
    if resources:
        # a tile of symbolic size is not counted in the peak: say what it depends on rather than 0
        parts.extend(lens_sizes(kernel, resources, target))
    else:
        parts.append("resources: not computed")
    if perf:
        mfu, bottleneck = perf.get("mfu_estimated_percent"), perf.get("bottleneck")
        if isinstance(mfu, (int, float)):
            parts.append(f"est. MFU {mfu:.1f}%")
        if bottleneck:
            parts.append(f"bottleneck: {bottleneck}")
    else:
        parts.append("run port review for MFU")
    return " · ".join(parts)


def code_lenses(uri: str, lines: Sequence[str], nki_file: Any, resources: dict[str, dict],
                perf_by_kernel: dict[str, dict], target: Any,
                codec: PositionCodec = UTF16) -> list[types.CodeLens]:
    lenses = []
    for kernel in (_get(nki_file, "kernels") or []) if nki_file is not None else []:
        name, line = _get(kernel, "name"), _get(kernel, "line")
        if not name or not line:
            continue
        pos = to_lsp_position(lines, line, 1, codec)
        title = kernel_title(resources.get(name), perf_by_kernel.get(name) or perf_by_kernel.get("*"), target,
                             kernel)
        lenses.append(types.CodeLens(
            range=types.Range(start=pos, end=pos),
            command=types.Command(title=title, command=REVIEW_COMMAND, arguments=[uri]),
            data={"kernel": name},
        ))
    return lenses
