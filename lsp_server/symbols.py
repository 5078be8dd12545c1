"""Document symbols (kernels > loops > tiles), inlay hints (tile shape/dtype/buffer/bytes per
partition, loop trip counts) and the code-lens/hover wording for sizes that depend on a symbol.

All work on the parse of the last good analysis (1-based engine positions); LSP positions come from
`positions.py` in the document's negotiated encoding.
"""

from __future__ import annotations

import re
from typing import Any, Sequence

from lsprotocol import types
from pygls.workspace.position_codec import PositionCodec

from .hover import _IDENT, _NOT_SYMBOLS, KIB, _get, _shape, allocation_text, loop_text, size_depends_on
from .positions import UTF16, to_lsp_position


def _fmt(n: float) -> str:
    return f"{n:,.0f} B" if n < KIB else f"{n / KIB:,.1f} KiB"


def _short_dtype(dtype: Any) -> str:
    return str(dtype).rsplit(".", 1)[-1] if dtype else "?"


def _range(lines: Sequence[str], line: int, col: int, end_line: int, end_col: int,
           codec: PositionCodec) -> types.Range:
    start = to_lsp_position(lines, line, col, codec)
    end = to_lsp_position(lines, end_line, end_col, codec)
    if (end.line, end.character) < (start.line, start.character):
        end = start
    return types.Range(start=start, end=end)


def _line_end(lines: Sequence[str], line: int) -> int:
    """1-based column just past the last character of `line` (without the newline)."""
    if not 1 <= line <= len(lines):
        return 1
    return len(lines[line - 1].rstrip("\r\n")) + 1


def _alloc_symbol(alloc: Any, lines: Sequence[str], codec: PositionCodec) -> types.DocumentSymbol | None:
    name = _get(alloc, "name")
    line = _get(alloc, "line")
    if not name or not line:
        return None
    end_line = _get(alloc, "end_line") or line
    col = _get(alloc, "col") or 1
    end_col = _get(alloc, "end_col") or _line_end(lines, end_line)
    bpp = _get(alloc, "bytes_per_partition")
    detail = (f"{_shape(_get(alloc, 'shape'))} {_short_dtype(_get(alloc, 'dtype'))} "
              f"{str(_get(alloc, 'buffer') or 'sbuf').upper()}")
    if isinstance(bpp, (int, float)):
        detail += f", {_fmt(bpp)}/partition"
    rng = _range(lines, line, 1, end_line, end_col, codec)
    sel = _range(lines, line, col, end_line, end_col, codec)
    return types.DocumentSymbol(name=name, kind=types.SymbolKind.Variable, range=rng, selection_range=sel,
                                detail=detail)


def _loop_symbol(loop: Any, lines: Sequence[str], codec: PositionCodec) -> types.DocumentSymbol:
    line, end_line = _get(loop, "line"), _get(loop, "end_line") or _get(loop, "line")
    kind = str(_get(loop, "kind") or "range").rsplit(".", 1)[-1]
    trips, expr = _get(loop, "trip_count"), _get(loop, "trip_expr")
    detail = f"{trips:,} trips" if isinstance(trips, int) else f"trips: {expr or 'runtime'}"
    rng = _range(lines, line, 1, end_line, _line_end(lines, end_line), codec)
    sel = _range(lines, line, _get(loop, "col") or 1, line, _line_end(lines, line), codec)
    return types.DocumentSymbol(name=f"for {_get(loop, 'var') or '_'} in {kind}", kind=types.SymbolKind.Namespace,
                                range=rng, selection_range=sel, detail=detail, children=[])


def _kernels(nki_file: Any) -> list[Any]:
    return list(_get(nki_file, "kernels") or []) if nki_file is not None else []


def document_symbols(nki_file: Any, lines: Sequence[str], codec: PositionCodec = UTF16) -> list[types.DocumentSymbol]:
    """Kernels, each with its loops (nested as in the source) and the tiles allocated in them."""
    out = []
    for kernel in _kernels(nki_file):
        name, line = _get(kernel, "name"), _get(kernel, "line")
        if not name or not line:
            continue
        end_line = _get(kernel, "end_line") or line
        col = _get(kernel, "col") or 1
        name_col = _line_text(lines, line).find(f"def {name}")
        sel_col = name_col + len("def ") + 1 if name_col >= 0 else col
        symbol = types.DocumentSymbol(
            name=name, kind=types.SymbolKind.Function, detail="helper" if _get(kernel, "helper") else "kernel",
            range=_range(lines, line, 1, end_line, _line_end(lines, end_line), codec),
            selection_range=_range(lines, line, sel_col, line, sel_col + len(name), codec), children=[])
        # loops nest by line range: the innermost loop that contains a line owns what starts there
        scopes: list[tuple[int, int, types.DocumentSymbol]] = []
        loops = sorted(_get(kernel, "loops") or [], key=lambda lp: (_get(lp, "line"), -(_get(lp, "end_line") or 0)))
        for loop in loops:
            loop_symbol = _loop_symbol(loop, lines, codec)
            _owner(scopes, symbol, _get(loop, "line")).children.append(loop_symbol)
            scopes.append((_get(loop, "line"), _get(loop, "end_line") or _get(loop, "line"), loop_symbol))
        for alloc in _get(kernel, "allocations") or []:
            alloc_symbol = _alloc_symbol(alloc, lines, codec)
            if alloc_symbol is not None:
                _owner(scopes, symbol, _get(alloc, "line")).children.append(alloc_symbol)
        _sort(symbol)
        out.append(symbol)
    return out


def _owner(scopes, kernel_symbol, line: int):
    inside = [(start, end, sym) for start, end, sym in scopes if start <= line <= end]
    return max(inside, key=lambda s: s[0])[2] if inside else kernel_symbol


def _sort(symbol: types.DocumentSymbol) -> None:
    if symbol.children:
        symbol.children.sort(key=lambda s: (s.range.start.line, s.range.start.character))
        for child in symbol.children:
            _sort(child)


def _line_text(lines: Sequence[str], line: int) -> str:
    return lines[line - 1] if 1 <= line <= len(lines) else ""


def alloc_label(alloc: Any) -> str:
    shape, dtype = _get(alloc, "shape"), _short_dtype(_get(alloc, "dtype"))
    buffer = str(_get(alloc, "buffer") or "sbuf").upper()
    bpp = _get(alloc, "bytes_per_partition")
    if "HBM" in buffer:
        return f": {_shape(shape)} {dtype} {buffer}"
    size = f"{_fmt(bpp)}/partition" if isinstance(bpp, (int, float)) else \
        "size depends on " + ", ".join(size_depends_on(alloc))
    return f": {_shape(shape)} {dtype} {buffer} · {size}"


def loop_label(loop: Any) -> str:
    trips, expr = _get(loop, "trip_count"), _get(loop, "trip_expr")
    if isinstance(trips, int):
        return f"{trips:,} trips"
    names = [n for n in _IDENT.findall(str(expr or "")) if n not in _NOT_SYMBOLS]
    return "trips depend on " + (", ".join(dict.fromkeys(names)) if names else "a runtime value")


def inlay_hints(nki_file: Any, lines: Sequence[str], first: int, last: int, target: Any,
                codec: PositionCodec = UTF16) -> list[types.InlayHint]:
    """Hints for 1-based lines first..last: after a tile's name, and at the end of a loop header."""
    hints = []
    for kernel in _kernels(nki_file):
        k0, k1 = _get(kernel, "line") or 0, _get(kernel, "end_line") or 0
        if k1 < first or k0 > last:
            continue
        for alloc in _get(kernel, "allocations") or []:
            line, name = _get(alloc, "line"), _get(alloc, "name")
            if not name or not line or not first <= line <= last:
                continue
            text = _line_text(lines, line)
            col = _get(alloc, "col") or 1
            at = _name_before(text, name, col)
            if at is None:
                continue
            hints.append(types.InlayHint(
                position=to_lsp_position(lines, line, at + len(name) + 1, codec), label=alloc_label(alloc),
                kind=types.InlayHintKind.Type,
                tooltip=types.MarkupContent(kind=types.MarkupKind.Markdown, value=allocation_text(alloc, target))))
        for loop in _get(kernel, "loops") or []:
            line = _get(loop, "line")
            if not line or not first <= line <= last:
                continue
            hints.append(types.InlayHint(
                position=to_lsp_position(lines, line, _line_end(lines, line), codec), label=loop_label(loop),
                padding_left=True, tooltip=types.MarkupContent(kind=types.MarkupKind.Markdown, value=loop_text(loop))))
    hints.sort(key=lambda h: (h.position.line, h.position.character))
    return hints


def _name_before(text: str, name: str, col: int) -> int | None:
    """0-based index of the assigned `name` before 1-based `col` (`name = nl.ndarray(...)`)."""
    for m in reversed(list(re.finditer(rf"\b{re.escape(name)}\b", text[:max(col - 1, 0)]))):
        rest = text[m.end():max(col - 1, 0)]
        if re.match(r"\s*(?:\[[^\]]*\])?\s*(?:[+\-*/@]?=)", rest) or re.match(r"\s*:", rest):
            return m.start()
    return None


def lens_sizes(kernel: Any, resources: dict | None, target: Any) -> list[str]:
    """Code-lens parts for SBUF and PSUM; a buffer with tiles of symbolic size says what it depends on
    instead of a 0 that only counts the known tiles."""
    resources = resources or {}
    allocs = list(_get(kernel, "allocations") or []) if kernel is not None else []
    parts = []
    for buf in ("sbuf", "psum"):
        unknown = [a for a in allocs if str(_get(a, "buffer") or "").lower() == buf
                   and not isinstance(_get(a, "bytes_per_partition"), (int, float))]
        names = list(dict.fromkeys(n for a in unknown for n in size_depends_on(a)))
        depends = f"depends on {', '.join(names)}" if names else ""
        if buf == "sbuf":
            pct, peak = resources.get("sbuf_percent"), resources.get("sbuf_peak_bytes_per_partition")
            known = isinstance(peak, (int, float)) and peak > 0
            if isinstance(pct, (int, float)) and (known or not unknown):
                size = f" ({peak / KIB:.1f} KiB/partition)" if isinstance(peak, (int, float)) else ""
                text = f"SBUF peak {'≥ ' if unknown else ''}{pct:.1f}%{size}"
                parts.append(text + (f", {len(unknown)} tile{'s' * (len(unknown) > 1)} {depends}" if unknown else ""))
            elif unknown:
                parts.append(f"SBUF {depends}")
        else:
            banks = resources.get("psum_banks")
            known = isinstance(banks, (int, float)) and banks > 0
            if isinstance(banks, (int, float)) and (known or not unknown):
                parts.append(f"PSUM {'≥ ' if unknown else ''}{int(banks)}/{target.psum_banks} banks"
                             + (f", {depends}" if unknown else ""))
            elif unknown:
                parts.append(f"PSUM {depends}")
    return parts
