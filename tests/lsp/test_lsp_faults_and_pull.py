"""A crashing or hanging check stays contained; pull-diagnostics clients get no pushes."""

from __future__ import annotations

import asyncio

import pytest
from lsp_helpers import FAKE_SERVER, make_client_fixture, open_doc, replace_all, wait_diagnostics
from lsprotocol import types

pytestmark = pytest.mark.asyncio(loop_scope="module")

KERNEL = "import neuronxcc.nki as nki\n\n\ndef k(a):\n    x = BAD\n    return x\n"
CRASHING = KERNEL + "# nki-assist-test-crash\n"
HANGING = KERNEL + "# nki-assist-test-hang\n"

faulty = make_client_fixture(FAKE_SERVER, NKI_ASSIST_LSP_TEST_FAULT="rule-crash,rule-hang")
pulling = make_client_fixture(FAKE_SERVER, pull=True)


async def test_a_crashing_rule_is_reported_and_the_server_keeps_serving(faulty):
    bad = (faulty.root / "crash_nki.py").as_uri()
    good = (faulty.root / "fine_nki.py").as_uri()
    open_doc(faulty, bad, CRASHING)
    (note,) = await wait_diagnostics(faulty, bad, lambda d: len(d) == 1)
    assert note.message.startswith("nki-assist could not check this file (RuntimeError: injected rule crash")
    assert note.severity == types.DiagnosticSeverity.Information and note.code is None
    assert any("check of" in m.message and "injected rule crash" in m.message for m in faulty.log_messages)

    open_doc(faulty, good, KERNEL)
    (d,) = await wait_diagnostics(faulty, good, lambda d: len(d) == 1)
    assert d.code == "NA100"
    # Removing the fault marker recovers the file.
    replace_all(faulty, bad, KERNEL, version=2)
    (d,) = await wait_diagnostics(faulty, bad, lambda d: len(d) == 1 and d[0].code == "NA100")


async def test_a_hanging_check_does_not_block_other_files(faulty):
    stuck = (faulty.root / "hang_nki.py").as_uri()
    open_doc(faulty, stuck, HANGING)
    await asyncio.sleep(0.2)
    loop = asyncio.get_running_loop()
    started = loop.time()
    for i in range(3):  # more files than one worker
        uri = (faulty.root / f"other{i}_nki.py").as_uri()
        open_doc(faulty, uri, KERNEL)
        await wait_diagnostics(faulty, uri, lambda d: len(d) == 1)
    hover = await faulty.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=4, character=9)))
    assert "**NA100**" in hover.contents.value
    assert loop.time() - started < 5
    assert stuck not in faulty.diagnostics


async def test_pull_clients_get_reports_and_no_pushes(pulling):
    uri = (pulling.root / "pull_nki.py").as_uri()
    open_doc(pulling, uri, KERNEL)
    report = await pulling.text_document_diagnostic_async(types.DocumentDiagnosticParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))
    assert report.kind == "full"
    (d,) = report.items
    assert d.code == "NA100" and (d.range.start.line, d.range.start.character) == (4, 8)
    again = await pulling.text_document_diagnostic_async(types.DocumentDiagnosticParams(
        text_document=types.TextDocumentIdentifier(uri=uri), previous_result_id=report.result_id))
    assert again.kind == "unchanged" and again.result_id == report.result_id

    replace_all(pulling, uri, KERNEL.replace("BAD", "ok"), version=2)
    fresh = await pulling.text_document_diagnostic_async(types.DocumentDiagnosticParams(
        text_document=types.TextDocumentIdentifier(uri=uri), previous_result_id=report.result_id))
    assert fresh.kind == "full" and list(fresh.items) == []
    await asyncio.sleep(0.2)
    assert uri not in pulling.diagnostics  # never pushed: one channel only
