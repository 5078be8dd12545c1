"""After the review command, open documents' diagnostics are refreshed: pushed again (push
clients) or re-pulled after workspace/diagnostic/refresh (pull clients such as Neovim 0.11)."""

from __future__ import annotations

import asyncio

import pytest
from lsp_helpers import FAKE_SERVER, FAST, make_client_fixture, open_doc, wait_diagnostics
from lsprotocol import types

pytestmark = pytest.mark.asyncio(loop_scope="module")

KERNEL = "import neuronxcc.nki as nki\n\n\ndef kernel(a):\n    x = BAD\n    return x\n"
pushing = make_client_fixture(FAKE_SERVER, settings={**FAST, "review": {"outputDir": ""}})
pulling = make_client_fixture(FAKE_SERVER, pull=True, settings={**FAST, "review": {"outputDir": ""}})


def make_port(root, name: str) -> tuple[str, str]:
    folder = root / name
    folder.mkdir()
    (folder / "port.toml").write_text('[port]\nname = "fake"\nnki = "kernel_nki.py"\n')
    (folder / "kernel_nki.py").write_text(KERNEL)
    (folder / "helper_nki.py").write_text(KERNEL)
    return (folder / "kernel_nki.py").as_uri(), (folder / "helper_nki.py").as_uri()


def review(client, uri):
    return client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="nki-assist.reviewPort", arguments=[uri]))


async def test_push_client_gets_every_open_document_again(pushing):
    kernel, helper = make_port(pushing.root, "push")
    published: list[str] = []
    original = pushing.protocol.fm.features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS]

    def record(params: types.PublishDiagnosticsParams):
        published.append(params.uri)
        return original(params)

    pushing.protocol.fm.features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = record
    for uri in (kernel, helper):
        open_doc(pushing, uri, KERNEL)
        await wait_diagnostics(pushing, uri, lambda d: len(d) == 1)
    await asyncio.sleep(0.3)  # settings pulled at start-up may re-check the first document once more
    before = len(published)
    result = await review(pushing, kernel)
    assert result["ok"] is True
    again = published[before:]
    assert sorted(again) == sorted([kernel, helper])  # each open document once, before the reply
    assert len(pushing.diagnostics[helper]) == 1


async def test_pull_client_is_asked_to_pull_again(pulling):
    kernel, _ = make_port(pulling.root, "pull")
    refreshes = []
    original = pulling.protocol.fm.features[types.WORKSPACE_DIAGNOSTIC_REFRESH]

    def record(params):
        refreshes.append(params)
        return original(params)

    pulling.protocol.fm.features[types.WORKSPACE_DIAGNOSTIC_REFRESH] = record
    open_doc(pulling, kernel, KERNEL)
    report = await pulling.text_document_diagnostic_async(types.DocumentDiagnosticParams(
        text_document=types.TextDocumentIdentifier(uri=kernel)))
    assert len(report.items) == 1
    result = await review(pulling, kernel)
    assert result["ok"] is True and len(refreshes) == 1
    assert kernel not in pulling.diagnostics  # still never pushed
