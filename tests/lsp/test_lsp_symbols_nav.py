"""Inlay hints, document symbols, definition/references, workspace diagnostics and the code lens for
symbolic sizes, against the real engine (`nki-assist lsp`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsp_helpers import REAL_SERVER, make_client_fixture, open_doc
from lsprotocol import types

pytest.importorskip("nki_assist.check.engine")
pytest.importorskip("nki_assist.parse.nki")
pytestmark = pytest.mark.asyncio(loop_scope="module")

KERNELS = (Path(__file__).parent / "lsp_nav_kernels_nki.py").read_text(encoding="utf-8")
LINES = KERNELS.splitlines()
client = make_client_fixture(REAL_SERVER, pull=True)


def doc_id(uri: str) -> types.TextDocumentIdentifier:
    return types.TextDocumentIdentifier(uri=uri)


def at(line: int, needle: str, offset: int = 0) -> types.Position:
    """0-based position of `needle` on 0-based `line` (ASCII text)."""
    return types.Position(line=line, character=LINES[line].index(needle) + offset)


async def opened(client, name: str, text: str = KERNELS) -> str:
    uri = (client.root / name).as_uri()
    open_doc(client, uri, text)
    report = await client.text_document_diagnostic_async(types.DocumentDiagnosticParams(text_document=doc_id(uri)))
    assert report.kind == "full"
    return uri


async def test_inlay_hints_show_tile_shapes_bytes_and_trip_counts(client):
    uri = await opened(client, "hints_nki.py")
    hints = await client.text_document_inlay_hint_async(types.InlayHintParams(
        text_document=doc_id(uri), range=types.Range(start=types.Position(line=0, character=0),
                                                      end=types.Position(line=len(LINES), character=0))))
    got = {(h.position.line, h.position.character): h.label for h in hints}
    assert got[(7, 7)] == ": [128, 512] float32 PSUM · 2.0 KiB/partition"  # after `acc`
    assert got[(9, 9)] == ": [128, 512] bfloat16 SBUF · 1.0 KiB/partition"  # after `t`, inside the loop
    assert got[(8, len(LINES[8]))] == "4 trips"  # at the end of the `for` line
    assert got[(20, 7)] == ": [128, N] float32 PSUM · size depends on N"
    assert got[(21, len(LINES[21]))] == "trips depend on rows"
    acc = next(h for h in hints if h.position.line == 7)
    assert acc.kind == types.InlayHintKind.Type and "banks: 1 of 8" in acc.tooltip.value
    # only the requested range
    part = await client.text_document_inlay_hint_async(types.InlayHintParams(
        text_document=doc_id(uri), range=types.Range(start=types.Position(line=17, character=0),
                                                      end=types.Position(line=25, character=0))))
    assert sorted(h.position.line for h in part) == [19, 20, 21]


async def test_document_symbols_nest_loops_and_tiles_in_kernels(client):
    uri = await opened(client, "symbols_nki.py")
    symbols = await client.text_document_document_symbol_async(types.DocumentSymbolParams(text_document=doc_id(uri)))
    assert [(s.name, s.kind) for s in symbols] == [("scale_rows", types.SymbolKind.Function),
                                                  ("wide_rows", types.SymbolKind.Function)]
    scale = symbols[0]
    assert (scale.range.start.line, scale.range.end.line) == (5, 13)
    assert (scale.selection_range.start.character, scale.selection_range.end.character) == (4, 14)
    assert [c.name for c in scale.children] == ["out", "acc", "for i in affine_range"]
    loop = scale.children[2]
    assert loop.detail == "4 trips" and (loop.range.start.line, loop.range.end.line) == (8, 12)
    (tile,) = loop.children
    assert (tile.name, tile.kind, tile.detail) == ("t", types.SymbolKind.Variable,
                                                    "[128, 512] bfloat16 SBUF, 1.0 KiB/partition")
    wide = symbols[1]
    assert wide.children[-1].detail == "trips: rows // 128"


async def test_definition_and_references_of_tiles_and_kernels(client):
    uri = await opened(client, "nav_nki.py")

    async def definition(pos):
        return await client.text_document_definition_async(types.DefinitionParams(text_document=doc_id(uri),
                                                                                  position=pos))

    async def references(pos, include=True):
        return await client.text_document_references_async(types.ReferenceParams(
            text_document=doc_id(uri), position=pos, context=types.ReferenceContext(include_declaration=include)))

    # the tile `t` used on line 11 is defined on line 9 (inside the loop)
    (d,) = await definition(at(11, "(t, t)", 1))
    assert (d.uri, d.range.start.line, d.range.start.character, d.range.end.character) == (uri, 9, 8, 9)
    refs = await references(at(11, "(t, t)", 1))
    assert sorted((r.range.start.line, r.range.start.character) for r in refs) == [
        (9, 8), (10, 8), (11, 26), (11, 29)]  # not the `t` in the comment
    assert len(await references(at(11, "(t, t)", 1), include=False)) == 3
    # `acc` in wide_rows is its own tile, not scale_rows' `acc`
    (d,) = await definition(at(22, "acc"))
    assert d.range.start.line == 20
    assert {r.range.start.line for r in await references(at(22, "acc"))} == {20, 22, 23}
    # the kernel called from caller()
    (d,) = await definition(at(28, "scale_rows"))
    assert (d.range.start.line, d.range.start.character) == (5, 4)
    refs = await references(at(28, "scale_rows"))
    # the string on line 28 is not a use; the other open documents (same text) are searched too
    assert sorted(r.range.start.line for r in refs if r.uri == uri) == [5, 28]
    assert {r.uri for r in refs} >= {uri, (client.root / "symbols_nki.py").as_uri()}
    assert await definition(at(28, '"scale_rows"', 1)) is None


async def test_kernel_definition_and_references_across_open_documents(client):
    defining = await opened(client, "lib_nki.py", KERNELS.replace("wide_rows", "wide_rows_lib"))
    using_text = "import neuronxcc.nki as nki\nfrom lib_nki import wide_rows_lib\n\n\n" \
                 "def run(x):\n    return wide_rows_lib(x)\n"
    using = await opened(client, "use_nki.py", using_text)
    (d,) = await client.text_document_definition_async(types.DefinitionParams(
        text_document=doc_id(using), position=types.Position(line=5, character=13)))
    assert (d.uri, d.range.start.line) == (defining, 17)
    refs = await client.text_document_references_async(types.ReferenceParams(
        text_document=doc_id(using), position=types.Position(line=5, character=13),
        context=types.ReferenceContext(include_declaration=True)))
    assert {(r.uri, r.range.start.line) for r in refs} >= {(defining, 17), (using, 1), (using, 5)}


async def test_code_lens_says_what_a_symbolic_size_depends_on(client):
    uri = await opened(client, "lens_nki.py")
    lenses = await client.text_document_code_lens_async(types.CodeLensParams(text_document=doc_id(uri)))
    titles = {lens.range.start.line: lens.command.title for lens in lenses}
    assert titles[5].startswith("SBUF peak 0.5% (1.0 KiB/partition) · PSUM 1/8 banks")
    assert "PSUM depends on N" in titles[17] and "PSUM 0/8" not in titles[17]


async def test_workspace_diagnostics_cover_open_and_unopened_files(client):
    on_disk = client.root / "sub" / "disk_nki.py"
    on_disk.parent.mkdir(exist_ok=True)
    on_disk.write_text(KERNELS, encoding="utf-8")
    uri = await opened(client, "ws_open_nki.py")
    report = await client.workspace_diagnostic_async(types.WorkspaceDiagnosticParams(previous_result_ids=[]))
    by_uri = {item.uri: item for item in report.items}
    assert uri in by_uri and on_disk.as_uri() in by_uri
    disk = by_uri[on_disk.as_uri()]
    assert disk.kind == "full" and disk.items and all(d.source == "nki-assist" for d in disk.items)
    assert sorted(d.code for d in disk.items) == sorted(d.code for d in by_uri[uri].items)
    again = await client.workspace_diagnostic_async(types.WorkspaceDiagnosticParams(previous_result_ids=[
        types.PreviousResultId(uri=item.uri, value=item.result_id) for item in report.items]))
    assert {item.kind for item in again.items} == {"unchanged"}
    on_disk.write_text(KERNELS.replace("    return out\n\n\n@nki.jit", "    return BAD\n\n\n@nki.jit", 1),
                       encoding="utf-8")
    third = await client.workspace_diagnostic_async(types.WorkspaceDiagnosticParams(previous_result_ids=[
        types.PreviousResultId(uri=item.uri, value=item.result_id) for item in report.items]))
    changed = {item.uri: item.kind for item in third.items}
    assert changed[on_disk.as_uri()] == "full" and changed[uri] == "unchanged"
