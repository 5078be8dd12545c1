"""The review's proven fix as a code action (issue 39 item 5): after `nki-assist.reviewPort`, a finding whose
repair a re-run of every size proved (a unified diff in its evidence) is offered as a quick fix on its line,
and applying it yields the fixed kernel; once the document no longer matches the diff, it is not offered."""

from __future__ import annotations

import asyncio

import pytest
from lsp_helpers import FAKE_SERVER, FAST, make_client_fixture, open_doc, wait_diagnostics
from lsprotocol import types

from lsp_server.proven_fix import diff_edits, hunks

pytestmark = pytest.mark.asyncio(loop_scope="module")

KERNEL = """import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def kernel(x):
    y = nl.ndarray((256, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    for t in nl.affine_range(2):
        xt = nl.load(x[t * 128 + nl.arange(128)[:, None], nl.arange(64)[None, :]])
        nl.store(y[t * 64 + nl.arange(128)[:, None], nl.arange(64)[None, :]], value=xt)
    return y
"""
DIFF = """--- a/kernel_nki.py
+++ b/kernel_nki.py
@@ -10,1 +10,1 @@
-        nl.store(y[t * 64 + nl.arange(128)[:, None], nl.arange(64)[None, :]], value=xt)
+        nl.store(y[t * 128 + nl.arange(128)[:, None], nl.arange(64)[None, :]], value=xt)
"""
FIXED = KERNEL.replace("y[t * 64 +", "y[t * 128 +")

client = make_client_fixture(FAKE_SERVER, settings={**FAST, "review": {"outputDir": ""}})


def _apply(text: str, edits: list[types.TextEdit]) -> str:
    lines = text.splitlines(keepends=True)
    for e in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        start = sum(len(x) for x in lines[:e.range.start.line]) + e.range.start.character
        end = sum(len(x) for x in lines[:e.range.end.line]) + e.range.end.character
        text = "".join(lines)
        text = text[:start] + e.new_text + text[end:]
        lines = text.splitlines(keepends=True)
    return "".join(lines)


async def test_diff_edits_apply_and_refuse_a_changed_document():
    assert hunks(DIFF) == [(10, [DIFF.splitlines()[3][1:]], [DIFF.splitlines()[4][1:]])]
    lines = KERNEL.splitlines(keepends=True)
    assert _apply(KERNEL, diff_edits(DIFF, lines)) == FIXED
    assert diff_edits(DIFF, FIXED.splitlines(keepends=True)) is None  # already applied: no longer matches
    assert diff_edits("--- a\n+++ b\n@@ -1 +1 @@\n?garbage\n", lines) is None


async def _actions(client, uri, line):
    return await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=types.Range(start=types.Position(line=line, character=0), end=types.Position(line=line, character=5)),
        context=types.CodeActionContext(diagnostics=[])))


async def test_review_offers_the_proven_fix_as_a_quick_fix(client):
    out = client.root / "reviews"
    client.set_configuration({**FAST, "review": {"outputDir": str(out)}}, section="nki-assist")
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    folder = client.root / "proven"
    folder.mkdir()
    (folder / "port.toml").write_text('[port]\nname = "fake"\nnki = "kernel_nki.py"\n')
    (folder / "kernel_nki.py").write_text(KERNEL)
    (folder / "proven.diff").write_text(DIFF)
    uri = (folder / "kernel_nki.py").as_uri()
    open_doc(client, uri, KERNEL)
    await wait_diagnostics(client, uri)
    await asyncio.sleep(0.2)
    before = await _actions(client, uri, 9) or []
    assert not [a for a in before if "proven" in a.title]  # nothing proven before the review

    result = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="nki-assist.reviewPort", arguments=[uri]))
    assert result["ok"] is True

    actions = await _actions(client, uri, 9) or []
    (fix,) = [a for a in actions if "proven by re-running all sizes" in a.title]
    assert fix.kind == types.CodeActionKind.QuickFix and fix.is_preferred
    assert fix.title.endswith("(SIM112, line 10)")
    assert _apply(KERNEL, fix.edit.changes[uri]) == FIXED
    elsewhere = await _actions(client, uri, 3) or []
    assert not [a for a in elsewhere if "proven" in a.title]  # only on the finding's line
