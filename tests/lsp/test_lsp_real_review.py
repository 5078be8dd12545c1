"""The review command against the real engine: the bundled example port, simulator enabled."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from lsp_helpers import FAST, REAL_SERVER, REPO, make_client_fixture, open_doc, wait_diagnostics
from lsprotocol import types

pytestmark = pytest.mark.asyncio(loop_scope="module")

client = make_client_fixture(REAL_SERVER, settings={**FAST, "execution": {"enabled": True}})


async def test_real_review_of_the_example_port(client):
    port = client.root / "gemm"
    shutil.copytree(REPO / "examples" / "gemm_bias_relu", port)
    kernel = port / "gemm_bias_relu_nki.py"
    uri = kernel.as_uri()
    open_doc(client, uri, kernel.read_text())
    await wait_diagnostics(client, uri)
    result = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="nki-assist.reviewPort", arguments=[uri]))
    assert result["ok"] is True and result["verdict"] == "block"
    md = result["markdown"]
    assert "Ragged tails are not guarded" in md and "## Numerics" in md and "## Performance" in md
    assert Path(result["output"]).read_text() == md
    assert result["mfu_estimated_percent"] > 0
    (token,) = [t for t in client.progress_reports if str(t).startswith("nki-assist-review")]
    assert isinstance(client.progress_reports[token][-1], types.WorkDoneProgressEnd)
    lenses = await client.text_document_code_lens_async(types.CodeLensParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))
    assert any("MFU" in lens.command.title for lens in lenses)
