"""End to end against the real engine (`nki-assist lsp`): real rules, parser and resources."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsp_helpers import REAL_SERVER, make_client_fixture, open_doc, replace_all, wait_diagnostics
from lsprotocol import types

pytest.importorskip("nki_assist.check.engine")
pytest.importorskip("nki_assist.parse.nki")
pytestmark = pytest.mark.asyncio(loop_scope="module")

KERNEL = (Path(__file__).parent / "lsp_real_kernel_nki.py").read_text(encoding="utf-8")
client = make_client_fixture(REAL_SERVER)


def rule(diags, rule_id):
    (d,) = [d for d in diags if d.code == rule_id]
    return d


def apply(text: str, edits: list[types.TextEdit]) -> str:
    """Apply single-line edits (UTF-16 columns) to text."""
    lines = text.splitlines(keepends=True)
    for e in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        line = lines[e.range.start.line]
        raw = line.encode("utf-16-le")
        a, b = 2 * e.range.start.character, 2 * e.range.end.character
        lines[e.range.start.line] = (raw[:a] + e.new_text.encode("utf-16-le") + raw[b:]).decode("utf-16-le")
    return "".join(lines)


async def test_real_rules_positions_hover_lens_and_fixes(client):
    uri = (client.root / "add_rows_nki.py").as_uri()
    open_doc(client, uri, KERNEL)
    diags = await wait_diagnostics(client, uri, lambda d: {"NKI103", "NKI201", "NKI202"} <= {x.code for x in d})

    psum = rule(diags, "NKI103")
    line = KERNEL.splitlines()[7]
    start = line.index("nl.ndarray")  # characters; one emoji before it adds one UTF-16 unit
    assert (psum.range.start.line, psum.range.start.character) == (7, start + 1)
    assert psum.range.end.character == start + 1 + len("nl.ndarray((128, 1024), dtype=nl.float32, buffer=nl.psum)")
    assert psum.severity == types.DiagnosticSeverity.Error
    assert psum.code_description.href.endswith("/docs/rules/psum-tile-exceeds-bank.md")

    async def hover(line, character):
        result = await client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=line, character=character)))
        return result.contents.value if result else ""

    acc = await hover(7, start - 4)  # on `acc`
    assert "4.0 KiB" in acc and "25.0% of 16.0 KiB" in acc and "banks: 2 of 8" in acc and "exceeds one bank" in acc
    assert "trip count: **4**" in await hover(9, 9)
    on_diag = await hover(7, start + 5)
    assert "**NKI103**" in on_diag and "PSUM" in on_diag

    (lens,) = await client.text_document_code_lens_async(types.CodeLensParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))
    # `a = nl.load(a_tensor[...])` takes the input's dtype: its size is not counted, and the lens says so
    assert lens.command.title.startswith(
        "SBUF peak ≥ 1.9% (4.0 KiB/partition), 1 tile depends on dtype · PSUM 2/8 banks")

    carried = rule(diags, "NKI201")
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=carried.range,
        context=types.CodeActionContext(diagnostics=[carried])))
    fix = actions[0]
    assert fix.title == "Make loop `i` sequential (nl.sequential_range) (unsafe fix: review the change)"
    assert fix.is_preferred
    fixed = apply(KERNEL, fix.edit.changes[uri])
    assert "for i in nl.sequential_range(4):" in fixed

    unused = rule(diags, "NKI202")
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=unused.range,
        context=types.CodeActionContext(diagnostics=[unused])))
    (disable,) = [a for a in actions if a.title == "Disable NKI202 for this line"]
    fixed = apply(fixed, disable.edit.changes[uri])
    assert "def add_rows(a_tensor, b_tensor):  # noqa: NKI202\n" in fixed

    replace_all(client, uri, fixed, version=2)
    diags = await wait_diagnostics(client, uri, lambda d: not {"NKI201", "NKI202"} & {x.code for x in d})
    assert {d.code for d in diags} == {"NKI103"}


async def test_half_typed_code_never_breaks_the_server(client):
    uri = (client.root / "typing_nki.py").as_uri()
    open_doc(client, uri, KERNEL)
    await wait_diagnostics(client, uri, lambda d: len(d) >= 3)
    version = 1
    for cut in range(len(KERNEL) - 1, len(KERNEL) - 200, -7):  # delete from the end, keystroke by keystroke
        version += 1
        replace_all(client, uri, KERNEL[:cut], version=version)
    version += 1
    replace_all(client, uri, KERNEL[: KERNEL.index("    for i")] + "    for i in nl.affine_range(\n", version=version)
    diags = await wait_diagnostics(client, uri, lambda d: "NKI201" not in {x.code for x in d})
    assert all(d.source == "nki-assist" for d in diags)
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=7, character=20)))
    assert hover is None or hover.contents.value


FIXES = Path(__file__).resolve().parent.parent / "fixtures" / "fixes"


async def test_fix_all_applies_every_safe_fix_and_only_when_asked(client):
    text = (FIXES / "loop_aliases.py").read_text(encoding="utf-8") + "\n\n" + \
        (FIXES / "renamed_apis_new.py").read_text(encoding="utf-8").split("\n\n\n", 1)[1]
    uri = (client.root / "fix_all_nki.py").as_uri()
    open_doc(client, uri, text)
    diags = await wait_diagnostics(client, uri, lambda d: sum(x.code == "NKI502" for x in d) == 3)

    async def actions(only=None, diagnostics=()):
        start = types.Position(line=0, character=0)
        return await client.text_document_code_action_async(types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri), range=types.Range(start=start, end=start),
            context=types.CodeActionContext(diagnostics=list(diagnostics), only=only))) or []

    (fix_all,) = await actions(only=[types.CodeActionKind.SourceFixAll])
    assert fix_all.kind == "source.fixAll.nki-assist"
    fixed = apply(text, fix_all.edit.changes[uri])
    # the safe fixes: three loop aliases -> range; the unsafe sbuf rename is left, and so is psum_fmax: the
    # workspace names no NKI version, and psum_bank_fmax is new in 0.4 (issue 41: unsafe, with the reason)
    assert "nl.tile_size.psum_fmax" in fixed and "psum_bank_fmax" not in fixed and "total_available_sbuf_size" in fixed
    assert "affine_range" not in fixed and "sequential_range(" not in fixed and "in static_range" not in fixed
    assert await actions(only=[types.CodeActionKind.QuickFix]) == []  # no diagnostics given, no fix-all

    unsafe = next(d for d in diags if d.code == "NKI501" and "sbuf" in d.message)
    quick = await actions(only=[types.CodeActionKind.QuickFix], diagnostics=[unsafe])
    assert [a.title for a in quick] == [
        "Rename to `nl.tile_size.sbuf_fmax_bytes` (unsafe fix: review the change)", "Disable NKI501 for this line",
        "Fix all safe nki-assist problems in this file (3)"]

    replace_all(client, uri, fixed, version=2)
    diags = await wait_diagnostics(client, uri, lambda d: not any(x.code == "NKI502" for x in d))
    assert [d.code for d in diags] == ["NKI501", "NKI501"]  # psum_fmax (a guessed version keeps it) and sbuf
    edited = fixed.replace("nl.tile_size.total_available_sbuf_size", "nl.tile_size.total_available_sbuf_size // 2")
    replace_all(client, uri, edited.replace("budget =", "budget  ="), version=3)
    await wait_diagnostics(client, uri, lambda d: any("sbuf" in x.message and x.range.start.character
                                                      == unsafe.range.start.character + 1 for x in d))
    stale = await actions(only=[types.CodeActionKind.QuickFix], diagnostics=[unsafe])  # v1's diagnostic
    assert [a.title for a in stale] == ["Disable NKI501 for this line"]  # the rename no longer matches the text


def _key(diags):
    return sorted((d.code, d.range.start.line, d.range.start.character, d.range.end.line, d.range.end.character,
                   d.message) for d in diags)


async def test_incremental_edits_publish_what_a_fresh_open_publishes(client):
    """The server reuses parse work between versions of a document (parse.reuse.ParseCache): after
    range edits inside a kernel, of a module constant and deleting a line, its diagnostics are those
    of the final text opened fresh."""
    from benchmarks.check_bench import generate

    text = generate(100)  # 5 kernels reading the module constants TILE_P / TILE_F
    uri = (client.root / "edited_nki.py").as_uri()
    open_doc(client, uri, text)
    await wait_diagnostics(client, uri, lambda d: len(d) > 0)
    lines = text.split("\n")

    def change(version: int, line: int, new: str) -> None:
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangePartial(
                range=types.Range(start=types.Position(line=line, character=0),
                                  end=types.Position(line=line, character=len(lines[line]))), text=new)]))
        lines[line] = new

    exp = next(i for i, ln in enumerate(lines) if "nl.exp(shifted)" in ln)
    change(2, exp, lines[exp].replace("(shifted)", "(tile)"))
    tile_p = lines.index("TILE_P = 128")
    change(3, tile_p, "TILE_P = 64")
    scale = next(i for i, ln in enumerate(lines) if "nl.multiply(s, scale)" in ln)
    change(4, scale, "")
    final = "\n".join(lines)
    fresh = (client.root / "fresh_nki.py").as_uri()
    open_doc(client, fresh, final)
    cold = _key(await wait_diagnostics(client, fresh, lambda d: len(d) > 0))
    assert any(c[0] == "NKI202" and "scale" in c[-1] for c in cold)  # the deleted line's input is now unread
    await wait_diagnostics(client, uri, lambda d: _key(d) == cold)
