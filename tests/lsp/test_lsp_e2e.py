"""End-to-end: the real server over stdio, VS Code's recorded capabilities, a deterministic fake engine."""

from __future__ import annotations

import asyncio
import time

import pytest
from lsp_helpers import FAKE_SERVER, make_client_fixture, open_doc, replace_all, wait_diagnostics
from lsprotocol import types

KERNEL = '''import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.isa as nisa


@nki.jit
def tiled(a, b):
    acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
    t = nl.ndarray((128, 2048), dtype=nl.bfloat16, buffer=nl.sbuf)
    for k in nl.affine_range(8):  # carried
        acc += nisa.nc_matmul(t, t)
    s = "😀😀"; x = BAD
    y = t
    return acc
'''

pytestmark = pytest.mark.asyncio(loop_scope="module")
client = make_client_fixture(FAKE_SERVER)


def by_message(diags, text):
    return [d for d in diags if text in d.message]


async def test_open_publishes_diagnostics_with_utf16_ranges(client):
    tmp_path = client.root / "open_publishes_diagnostics_with_utf16_ranges"
    tmp_path.mkdir()
    uri = (tmp_path / "kernel_nki.py").as_uri()
    open_doc(client, uri, KERNEL)
    diags = await wait_diagnostics(client, uri, lambda d: len(d) == 2)
    (bad,) = by_message(diags, "BAD token")
    # 18 characters precede BAD on line 12; the two emoji are 2 UTF-16 units each -> 20.
    assert (bad.range.start.line, bad.range.start.character) == (11, 20)
    assert (bad.range.end.line, bad.range.end.character) == (11, 23)
    assert bad.code == "NA100" and bad.source == "nki-assist"
    assert bad.severity == types.DiagnosticSeverity.Warning
    assert bad.code_description.href.endswith("/docs/rules/unused-suppression.md")
    (rel,) = bad.related_information
    assert rel.location.uri == (tmp_path / "kernel.cu").as_uri()
    assert rel.location.range.start.line == 6 and rel.message == "CUDA original"
    assert bad.data["rule"] == "NA100" and bad.data["language"] == "nki"
    (carried,) = by_message(diags, "carried dependency")
    assert (carried.range.start.character, carried.range.end.character) == (13, 28)


async def test_edits_make_diagnostics_disappear_and_reappear(client):
    tmp_path = client.root / "edits_make_diagnostics_disappear_and_reappear"
    tmp_path.mkdir()
    uri = (tmp_path / "kernel_nki.py").as_uri()
    open_doc(client, uri, KERNEL)
    await wait_diagnostics(client, uri, lambda d: len(by_message(d, "BAD")) == 1)
    replace_all(client, uri, KERNEL.replace("BAD", "ok"), version=2)
    await wait_diagnostics(client, uri, lambda d: not by_message(d, "BAD"))
    replace_all(client, uri, "\n\n" + KERNEL, version=3)
    diags = await wait_diagnostics(client, uri, lambda d: len(by_message(d, "BAD")) == 1)
    assert by_message(diags, "BAD")[0].range.start.line == 13  # moved down with the text


async def test_typing_fast_publishes_only_settled_versions(client):
    tmp_path = client.root / "typing_fast_publishes_only_settled_versions"
    tmp_path.mkdir()
    """Half-typed code on every keystroke: debounced, the last version wins, nothing stale."""
    uri = (tmp_path / "kernel_nki.py").as_uri()
    published: list[tuple[int | None, int]] = []
    original = client.protocol.fm.features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS]

    def record(params: types.PublishDiagnosticsParams):
        published.append((params.version, len(params.diagnostics)))
        return original(params)

    client.protocol.fm.features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = record
    head = KERNEL.replace("    s = \"😀😀\"; x = BAD\n", "")
    open_doc(client, uri, head)
    await wait_diagnostics(client, uri)
    typed = '    x = BAD + (1'
    for i in range(1, len(typed) + 1):  # one edit per keystroke, 5 ms apart (debounce is 50 ms)
        replace_all(client, uri, head.replace("    return acc\n", typed[:i] + "\n    return acc\n"), version=1 + i)
        await asyncio.sleep(0.005)
    final = 1 + len(typed)
    await wait_diagnostics(client, uri, lambda d: len(by_message(d, "BAD")) == 1)
    await asyncio.sleep(0.2)
    versions = [v for v, _ in published]
    assert versions[-1] == final
    assert len(published) <= 4, published  # 16 keystrokes, a handful of publishes
    assert versions == sorted(versions)  # never an older version after a newer one


async def test_non_nki_python_is_skipped_and_cuda_is_checked(client):
    tmp_path = client.root / "non_nki_python_is_skipped_and_cuda_is_checked"
    tmp_path.mkdir()
    plain = (tmp_path / "util.py").as_uri()
    open_doc(client, plain, "import numpy as np\nx = BAD\n")
    assert list(await wait_diagnostics(client, plain)) == []
    cuda = (tmp_path / "kernel.cu").as_uri()
    open_doc(client, cuda, "__global__ void k(float* x) {\n  x[0] = BAD;\n}\n", language="cuda-cpp")
    (d,) = await wait_diagnostics(client, cuda, lambda d: len(d) == 1)
    assert d.data["language"] == "cuda"
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=cuda), range=d.range,
        context=types.CodeActionContext(diagnostics=[d])))
    (disable,) = [a for a in actions if a.title == "Disable NA100 for this line"]
    (edit,) = disable.edit.changes[cuda]
    assert edit.new_text == "  // nki-assist: ignore[NA100]"
    assert (edit.range.start.line, edit.range.start.character) == (1, 13)


async def test_code_actions_quick_fix_and_suppression(client):
    tmp_path = client.root / "code_actions_quick_fix_and_suppression"
    tmp_path.mkdir()
    uri = (tmp_path / "kernel_nki.py").as_uri()
    open_doc(client, uri, KERNEL)
    diags = await wait_diagnostics(client, uri, lambda d: len(d) == 2)
    (carried,) = by_message(diags, "carried dependency")
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=carried.range,
        context=types.CodeActionContext(diagnostics=[carried])))
    fix, disable, fix_all = actions
    assert fix.title == "Use nl.sequential_range (carried dependency)" and fix.is_preferred
    assert fix_all.kind == "source.fixAll.nki-assist" and fix_all.edit == fix.edit  # the only safe fix
    (edit,) = fix.edit.changes[uri]
    assert edit.new_text == "nl.sequential_range"
    assert (edit.range.start.line, edit.range.start.character, edit.range.end.character) == (9, 13, 28)
    (sup,) = disable.edit.changes[uri]
    assert sup.new_text == "  # noqa: NA100" and sup.range.start.character == len("    for k in nl.affine_range(8):  # carried")

    # Applying the suppression makes the finding go away (the engine honours `# noqa`).
    lines = KERNEL.splitlines(keepends=True)
    lines[9] = lines[9].rstrip("\n") + sup.new_text + "\n"
    replace_all(client, uri, "".join(lines), version=2)
    diags = await wait_diagnostics(client, uri, lambda d: len(d) == 1)
    assert not by_message(diags, "carried")


async def test_hover_on_allocations_loops_matmul_and_diagnostic(client):
    tmp_path = client.root / "hover_on_allocations_loops_matmul_and_diagnostic"
    tmp_path.mkdir()
    uri = (tmp_path / "kernel_nki.py").as_uri()
    open_doc(client, uri, KERNEL)
    await wait_diagnostics(client, uri, lambda d: len(d) == 2)

    async def hover(line, character):
        result = await client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=line, character=character)))
        return result.contents.value if result else None

    psum = await hover(7, 5)  # `acc = nl.ndarray(... psum)`
    assert "2.0 KiB" in psum and "12.5% of 16.0 KiB" in psum and "banks: 1 of 8" in psum
    sbuf = await hover(8, 4)  # `t` = 2048 bf16 = 4 KiB of trn2's 207.7 KiB usable
    assert "4.0 KiB" in sbuf and "1.9% of the 207.7 KiB usable per partition on trn2" in sbuf
    assert "partitions: 128 of 128" in sbuf
    use = await hover(12, 8)  # a later use of `t` inside the kernel
    assert use == sbuf
    loop = await hover(9, 8)
    assert "trip count: **8**" in loop and "independent" in loop
    matmul = await hover(10, 20)
    assert "| N moving free | 1024 ❌ | 512 |" in matmul and "| K contraction (partitions) | 128 | 128 |" in matmul
    diag = await hover(11, 21)  # on BAD: the rule's explanation from its docs page
    assert "**NA100**: BAD token here" in diag and "What it finds" in diag
    assert await hover(3, 0) is None


async def test_code_lens_shows_kernel_resources(client):
    tmp_path = client.root / "code_lens_shows_kernel_resources"
    tmp_path.mkdir()
    uri = (tmp_path / "kernel_nki.py").as_uri()
    open_doc(client, uri, KERNEL)
    await wait_diagnostics(client, uri, lambda d: len(d) == 2)
    (lens,) = await client.text_document_code_lens_async(types.CodeLensParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))
    assert lens.range.start.line == 6
    assert lens.command.title == "SBUF peak 1.9% (4.0 KiB/partition) · PSUM 1/8 banks · run port review for MFU"
    assert lens.command.command == "nki-assist.reviewPort" and list(lens.command.arguments) == [uri]


async def test_untitled_and_deleted_documents_are_served(client):
    tmp_path = client.root / "untitled_and_deleted_documents_are_served"
    tmp_path.mkdir()
    untitled = "untitled:Untitled-1"
    open_doc(client, untitled, KERNEL)
    diags = await wait_diagnostics(client, untitled, lambda d: len(d) == 2)
    (bad,) = by_message(diags, "BAD")
    assert bad.related_information is None  # relative CUDA path cannot be resolved without a folder
    gone = (tmp_path / "deleted" / "gone_nki.py").as_uri()  # never existed on disk
    open_doc(client, gone, KERNEL)
    assert len(await wait_diagnostics(client, gone, lambda d: len(d) == 2)) == 2
    client.text_document_did_close(types.DidCloseTextDocumentParams(
        text_document=types.TextDocumentIdentifier(uri=gone)))
    await wait_diagnostics(client, gone, lambda d: len(d) == 0)


async def test_ten_megabyte_file_is_skipped_with_a_note_and_others_still_served(client):
    tmp_path = client.root / "ten_megabyte_file_is_skipped_with_a_note_and_others_still_served"
    tmp_path.mkdir()
    big = (tmp_path / "big_nki.py").as_uri()
    text = KERNEL + ("# " + "x" * 98 + "\n") * 100_000  # ~10 MB
    small = (tmp_path / "small_nki.py").as_uri()
    open_doc(client, big, text)
    open_doc(client, small, KERNEL)
    started = time.perf_counter()
    assert len(await wait_diagnostics(client, small, lambda d: len(d) == 2)) == 2
    (note,) = await wait_diagnostics(client, big, lambda d: len(d) == 1)
    assert "above the 5.0 MB limit" in note.message and note.code is None
    assert time.perf_counter() - started < 10
