"""Hover text: the numbers that matter where they matter.

Allocations (bytes per partition, share of SBUF/PSUM, PSUM banks), loops (trip count), matmul calls
(tile sizes against the target's limits) and diagnostics (the rule's explanation). Works on the
parse of the last analysed version; positions are 1-based (line, character column).
"""

from __future__ import annotations

import math
import re
from typing import Any, Iterable

from nki_assist.api import table
from nki_assist.api.version import resolve_nki_version

KIB = 1024
_WORD = _IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NOT_SYMBOLS = {"nl", "nki", "nisa", "np", "math", "min", "max", "shape", "dtype"}


def _fmt_bytes(n: float) -> str:
    return f"{n:,.0f} B" if n < KIB else f"{n / KIB:,.1f} KiB"


def _get(obj: Any, *names: str) -> Any:
    for name in names:
        value = obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)
        if value is not None:
            return value
    return None


def _covers(item: Any, line: int, col: int) -> bool:
    start, end = _get(item, "line"), _get(item, "end_line") or _get(item, "line")
    if start is None or not start <= line <= end:
        return False
    c0, c1 = _get(item, "col", "column"), _get(item, "end_col", "end_column")
    if line == start and c0 is not None and col < c0:
        return False
    if line == end and c1 is not None and col > c1:
        return False
    return True


def _shape(shape: Any) -> str:
    if not shape:
        return "?"
    return "[" + ", ".join(str(d) for d in shape) + "]"


def size_depends_on(alloc: Any) -> list[str]:
    """What an allocation's bytes per partition depend on when they are not known statically:
    the names in its symbolic dimensions, and "dtype" when the element type is not known."""
    names: list[str] = []
    for dim in _get(alloc, "shape") or ():
        if not isinstance(dim, int):
            for name in _IDENT.findall(str(dim)):
                if name not in names and name not in _NOT_SYMBOLS:
                    names.append(name)
    if not _get(alloc, "dtype"):
        names.append("dtype")
    return names or ["a runtime value"]


# Scans of a line look this far either side of the cursor (issue 44): a name is never this long, and a regex run
# over a whole 2 MB line (or one that backtracks, as _DOTTED does on a long word without dots) would hold the
# server for seconds to hours while nothing else is answered.
WINDOW = 256


def around(line_text: str, col: int) -> tuple[str, int]:
    """The part of `line_text` within WINDOW characters of 1-based `col`, and `col` in it."""
    lo = max(0, col - 1 - WINDOW)
    return line_text[lo:col - 1 + WINDOW], col - lo


def word_at(line_text: str, col: int) -> str | None:
    line_text, col = around(line_text, col)
    for m in _WORD.finditer(line_text):
        if m.start() + 1 <= col <= m.end():
            return m.group()
    return None


def allocation_text(alloc: Any, target: Any) -> str:
    buffer = str(_get(alloc, "buffer") or "sbuf").lower()
    shape, dtype = _get(alloc, "shape"), _get(alloc, "dtype") or "?"
    bpp = _get(alloc, "bytes_per_partition")
    out = [f"**{_get(alloc, 'name') or 'tile'}** `{_shape(shape)} {dtype}` in **{buffer.upper()}**", ""]
    if shape and isinstance(shape[0], int):
        note = "" if shape[0] <= target.partitions else f" — **exceeds the {target.partitions} partitions**"
        out.append(f"- partitions: {shape[0]} of {target.partitions}{note}")
    if not isinstance(bpp, (int, float)):
        out.append(f"- bytes per partition: depends on {', '.join(f'`{n}`' for n in size_depends_on(alloc))} "
                   "(not known before the kernel runs)")
        return "\n".join(out)
    out.append(f"- bytes per partition: {_fmt_bytes(bpp)}")
    if "psum" in buffer:
        banks = max(1, math.ceil(bpp / target.psum_bank_bytes))
        pct = 100.0 * bpp / target.psum_bytes_per_partition
        out.append(f"- PSUM: {pct:.1f}% of {_fmt_bytes(target.psum_bytes_per_partition)} per partition")
        fits = "fits one bank" if bpp <= target.psum_bank_bytes else "**exceeds one bank**; a matmul output must fit one"
        out.append(f"- banks: {banks} of {target.psum_banks} ({_fmt_bytes(target.psum_bank_bytes)} each; {fits})")
    elif "hbm" in buffer or "shared" in buffer:
        out.append("- lives in HBM (device memory), not on-chip")
    else:
        usable = target.sbuf_usable_bytes_per_partition
        out.append(f"- SBUF: {100.0 * bpp / usable:.1f}% of the {_fmt_bytes(usable)} usable per partition "
                   f"on {target.name}")
    return "\n".join(out)


def loop_text(loop: Any) -> str:
    kind = _get(loop, "kind") or "range"
    var = _get(loop, "var") or "_"
    trips, expr = _get(loop, "trip_count"), _get(loop, "trip_expr")
    head = f"**loop** `{var}` over `{kind}`"
    if isinstance(trips, int):
        body = f"- trip count: **{trips:,}**" + (f" (`{expr}`)" if expr and str(expr) != str(trips) else "")
    else:
        body = "- trip count: depends on a runtime value" + (f" (`{expr}`)" if expr else "")
    notes = {
        "affine_range": "iterations must be independent (the compiler may reorder and pipeline them)",
        "sequential_range": "iterations run in order (loop-carried dependencies allowed)",
        "static_range": "fully unrolled at trace time",
    }
    short = str(kind).rsplit(".", 1)[-1]
    return "\n".join([head, "", body] + ([f"- {notes[short]}"] if short in notes else []))


def _operand_shape(matmul: Any, role: str) -> Any:
    operand = _get(matmul, role)
    return _get(operand, "shape") if operand is not None else _get(matmul, f"{role}_shape")


def _dims(matmul: Any) -> dict[str, Any]:
    """K (contraction), M (stationary free), N (moving free) from the operand shapes, when known."""
    dims: dict[str, Any] = {"K": None, "M": None, "N": None}
    stationary, moving = _operand_shape(matmul, "stationary"), _operand_shape(matmul, "moving")
    if stationary and len(stationary) >= 2:
        dims["K"], dims["M"] = stationary[0], stationary[-1]
    if moving and len(moving) >= 2:
        dims["K"] = dims["K"] if dims["K"] is not None else moving[0]
        dims["N"] = moving[-1]
    return dims


def matmul_text(matmul: Any, target: Any) -> str:
    call = _get(matmul, "call") or matmul
    api = _get(call, "api") or "matmul"
    dims = _dims(matmul)
    limits = {"K": ("contraction (partitions)", target.contraction_max),
              "M": ("stationary free", target.stationary_fmax),
              "N": ("moving free", target.moving_fmax)}
    out = [f"**{api}** on {target.name}", "", "| dim | tile | limit |", "|---|---|---|"]
    for key, (label, limit) in limits.items():
        value = dims.get(key)
        shown = "?" if value is None else str(value)
        flag = " ❌" if isinstance(value, int) and value > limit else ""
        out.append(f"| {key} {label} | {shown}{flag} | {limit} |")
    for role in ("stationary", "moving", "dst"):
        operand = _get(matmul, role)
        if operand is not None and _get(operand, "text"):
            shape = _get(operand, "shape")
            dtype = _get(operand, "dtype")
            out.append(f"\n{role}: `{_get(operand, 'text')}`" + (f" {_shape(shape)}" if shape else "")
                       + (f" {dtype}" if dtype else ""))
    out.append(f"\nPSUM output: at most {target.psum_bank_fp32} fp32 per partition in one "
               f"{_fmt_bytes(target.psum_bank_bytes)} bank.")
    return "\n".join(out)


def diagnostic_text(rule: str, message: str, fix: str | None) -> str:
    try:
        # deferred: the server answers `initialize` before the engine is imported (start-up time)
        from nki_assist.rules.registry import docs_text

        docs = docs_text(rule)
    except Exception:  # noqa: BLE001 - unknown rule or registry missing
        docs = ""
    parts = [f"**{rule}**: {message}"]
    if fix:
        parts.append(f"**Fix:** {fix}")
    if docs:
        parts.append("---\n" + _demote_headings(docs))
    return "\n\n".join(parts)


def _demote_headings(markdown: str) -> str:
    return re.sub(r"^(#{1,4}) ", lambda m: "#" * min(len(m.group(1)) + 2, 6) + " ", markdown, flags=re.M)


def _kernels(nki_file: Any) -> Iterable[Any]:
    return (_get(nki_file, "kernels") or []) if nki_file is not None else []


def item_hover(nki_file: Any, line: int, col: int, line_text: str, target: Any) -> str | None:
    """Hover text for the parsed item at (line, col), or None."""
    word = word_at(line_text, col)
    for kernel in _kernels(nki_file):
        for matmul in _get(kernel, "matmuls") or []:
            if _covers(_get(matmul, "call") or matmul, line, col):
                return matmul_text(matmul, target)
        for alloc in _get(kernel, "allocations") or []:
            if _covers(alloc, line, col):
                return allocation_text(alloc, target)
        for loop in _get(kernel, "loops") or []:
            if _get(loop, "line") == line and (word in (None, _get(loop, "var")) or word.endswith("range")):
                return loop_text(loop)
        k0, k1 = _get(kernel, "line") or 0, _get(kernel, "end_line") or 10**9
        if word and k0 <= line <= k1:
            for alloc in _get(kernel, "allocations") or []:
                if _get(alloc, "name") == word:
                    return allocation_text(alloc, target)
    return api_hover(nki_file, line_text, col, target)


def _version(nki_file: Any, target: Any) -> str:
    """The file's target NKI version: the target's, else what its project's pins say (as `check` does)."""
    explicit = getattr(target, "nki_version", None)
    if explicit:
        return explicit
    path = _get(nki_file, "path")
    return resolve_nki_version(None, path).version if path else resolve_nki_version().version


_DOTTED = re.compile(r"[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)+")


def api_hover(nki_file: Any, line_text: str, col: int, target: Any) -> str | None:
    """The versioned API table's facts for the `nl.x` / `nisa.x` name under the cursor (docs/api-table.md)."""
    imports = _get(nki_file, "imports") or {}
    line_text, col = around(line_text, col)
    for m in _DOTTED.finditer(line_text):
        if not m.start() < col <= m.end() + 1:
            continue
        head, _, rest = m.group(0).partition(".")
        module = imports.get(head)
        if not module or not module.startswith("nki"):
            return None
        parts = rest.split(".")
        for n in range(len(parts), 0, -1):  # the longest documented name: nl.tile_size.pmax, else nl.tile_size
            text = table.hover_markdown(f"{module}.{'.'.join(parts[:n])}", _version(nki_file, target))
            if text:
                return text
    return None
