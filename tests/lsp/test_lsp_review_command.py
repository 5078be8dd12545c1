"""The `nki-assist.reviewPort` command end to end: progress, cancellation, result, lens update."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from lsp_helpers import FAKE_SERVER, FAST, make_client_fixture, open_doc, wait_diagnostics
from lsprotocol import types

pytestmark = pytest.mark.asyncio(loop_scope="module")

KERNEL = """import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def kernel(a):
    t = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    return t
"""

client = make_client_fixture(FAKE_SERVER, settings={**FAST, "review": {"outputDir": ""}},
                             FAKE_REVIEW_STEP="0.3")
disabled = make_client_fixture(FAKE_SERVER, FAKE_NO_REVIEW="1")


def make_port(root: Path, name: str) -> str:
    folder = root / name
    folder.mkdir()
    (folder / "port.toml").write_text('[port]\nname = "fake"\nnki = "kernel_nki.py"\n')
    (folder / "kernel_nki.py").write_text(KERNEL)
    return (folder / "kernel_nki.py").as_uri()


def execute(client, *arguments):
    return client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="nki-assist.reviewPort", arguments=list(arguments)))


async def test_review_reports_progress_and_opens_the_markdown(client):
    out = client.root / "reviews"
    client.set_configuration({**FAST, "review": {"outputDir": str(out)}}, section="nki-assist")
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    uri = make_port(client.root, "ok")
    open_doc(client, uri, KERNEL)
    await wait_diagnostics(client, uri)
    await asyncio.sleep(0.2)  # let the server re-read its settings

    refreshes = client.code_lens_refreshes
    result = await execute(client, uri)

    assert result["ok"] is True
    assert result["verdict"] == "revise" and result["mfu_estimated_percent"] == 23.4
    assert "simulate=False" in result["markdown"]  # execution is off by default: no simulator run
    written = Path(result["output"])
    assert written.parent == out and written.read_text() == result["markdown"]
    assert [d.uri for d in client.shown_documents][-1] == written.as_uri()
    (token,) = [t for t in client.progress_reports if str(t).startswith("nki-assist-review")]
    reports = client.progress_reports[token]
    assert isinstance(reports[0], types.WorkDoneProgressBegin) and reports[0].cancellable
    steps = [r for r in reports if isinstance(r, types.WorkDoneProgressReport)]
    assert [r.percentage for r in steps] == [0, 20, 40, 60, 80]
    assert isinstance(reports[-1], types.WorkDoneProgressEnd) and reports[-1].message == "done"

    # The code lens now carries the cost model's numbers, and the client was told to re-ask.
    assert client.code_lens_refreshes >= refreshes + 1  # (+ one per open kernel re-checked after)
    (lens,) = await client.text_document_code_lens_async(types.CodeLensParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))
    assert lens.command.title.endswith("est. MFU 23.4% · bottleneck: dma-overhead")


async def test_review_can_be_cancelled_from_the_progress_ui(client):
    uri = make_port(client.root, "cancel")
    before = set(client.progress_reports)
    task = asyncio.ensure_future(execute(client, uri))
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10
    while not (set(client.progress_reports) - before) and loop.time() < deadline:
        await asyncio.sleep(0.02)
    (token,) = set(client.progress_reports) - before
    started = loop.time()
    client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token=token))
    result = await asyncio.wait_for(task, 10)
    assert result == {"ok": False, "cancelled": True, "message": "review cancelled"}
    assert loop.time() - started < 1.0  # the fake review checks its cancel event every 0.3 s
    assert isinstance(client.progress_reports[token][-1], types.WorkDoneProgressEnd)


async def test_review_without_a_port_spec_says_what_to_do(client):
    folder = client.root / "lonely"
    folder.mkdir()
    (folder / "k_nki.py").write_text(KERNEL)
    result = await execute(client, (folder / "k_nki.py").as_uri())
    assert result["ok"] is False and "no port spec found" in result["message"]
    assert "no port spec found" in client.messages[-1].message


async def test_review_unavailable_is_reported_not_crashed(disabled):
    uri = make_port(disabled.root, "missing")
    result = await execute(disabled, uri)
    assert result["ok"] is False
    assert "Port review is not available in this nki-assist installation" in result["message"]
    # The server keeps serving.
    open_doc(disabled, uri, KERNEL + "x = BAD\n")
    assert len(await wait_diagnostics(disabled, uri, lambda d: len(d) == 1)) == 1
