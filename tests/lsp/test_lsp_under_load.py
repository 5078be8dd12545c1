"""Latest-version semantics and answers from the last good result while a check runs (issue 31
item 7, at test scale; benchmarks/lsp_load_bench.py is the full 50-document storm)."""

from __future__ import annotations

import asyncio
import random

import pytest
from lsp_helpers import FAKE_SERVER, make_client_fixture, open_doc, replace_all, wait_diagnostics
from lsprotocol import types

pytestmark = pytest.mark.asyncio(loop_scope="module")

KERNEL = "import neuronxcc.nki as nki\n\n\ndef k(a):\n    x = BAD\n    return x\n"
HANG = "# nki-assist-test-hang\n"

pushing = make_client_fixture(FAKE_SERVER, NKI_ASSIST_LSP_TEST_FAULT="rule-hang")
pulling = make_client_fixture(FAKE_SERVER, pull=True, NKI_ASSIST_LSP_TEST_FAULT="rule-hang")


def record_publishes(client) -> list[tuple[str, int | None, int]]:
    """(uri, version, number of diagnostics) of every publishDiagnostics, in arrival order."""
    if hasattr(client, "published"):
        return client.published
    client.published = []
    features = client.protocol.fm.features
    original = features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS]

    def publish(*args):
        params = args[-1]
        client.published.append((params.uri, params.version, len(params.diagnostics)))
        return original(*args)

    features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = publish
    return client.published


def with_bad(n: int) -> str:
    return KERNEL.replace("    x = BAD\n", "".join(f"    x{i} = BAD\n" for i in range(n)) or "    x = 1\n")


async def test_bursts_end_on_the_latest_version_published_in_order(pushing):
    published = record_publishes(pushing)
    rng = random.Random(7)
    uris = [(pushing.root / f"burst{i}_nki.py").as_uri() for i in range(8)]
    versions = {uri: 1 for uri in uris}
    for uri in uris:
        open_doc(pushing, uri, with_bad(1))
    for _ in range(300):  # rapid edits, no waiting: most versions are superseded before they are checked
        uri = rng.choice(uris)
        versions[uri] += 1
        replace_all(pushing, uri, with_bad(versions[uri] % 5), version=versions[uri])
        if rng.random() < 0.2:
            await asyncio.sleep(0)
    for uri in uris:
        want = versions[uri] % 5
        await wait_diagnostics(pushing, uri, lambda d, want=want: len(d) == want, timeout=20)
    for uri in uris:
        seen = [v for u, v, _ in published if u == uri]
        assert seen == sorted(seen) and len(seen) == len(set(seen)), seen  # never an older version after a newer
        final = [(v, n) for u, v, n in published if u == uri][-1]
        assert final == (versions[uri], versions[uri] % 5)
    # superseded versions were skipped, not checked one by one
    assert len(published) < 300


async def test_requests_during_a_long_check_answer_from_the_last_result(pushing):
    published = record_publishes(pushing)
    uri = (pushing.root / "long_check_nki.py").as_uri()
    open_doc(pushing, uri, KERNEL)
    await wait_diagnostics(pushing, uri, lambda d: len(d) == 1)
    replace_all(pushing, uri, KERNEL + HANG, version=2)  # this check blocks its worker for 20 s
    await asyncio.sleep(0.5)
    loop = asyncio.get_running_loop()
    started = loop.time()
    hover = await pushing.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=4, character=9)))
    assert "**NA100**" in hover.contents.value  # version 1's finding
    (diag,) = pushing.diagnostics[uri]
    actions = await pushing.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=diag.range,
        context=types.CodeActionContext(diagnostics=[diag])))
    assert "Disable NA100 for this line" in [a.title for a in actions]
    lenses = await pushing.text_document_code_lens_async(types.CodeLensParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))
    assert lenses and lenses[0].data == {"kernel": "k"}
    assert loop.time() - started < 2.5  # none of them waited for the 20 s check
    # a newer version is checked beside the stuck one and published; version 2 never is
    replace_all(pushing, uri, KERNEL.replace("BAD", "ok"), version=3)
    await wait_diagnostics(pushing, uri, lambda d: len(d) == 0, timeout=8)
    assert [v for u, v, _ in published if u == uri] == [1, 3]


async def test_a_pull_during_a_long_check_gets_the_last_result_then_a_refresh(pulling):
    uri = (pulling.root / "long_pull_nki.py").as_uri()
    open_doc(pulling, uri, KERNEL)
    first = await pulling.text_document_diagnostic_async(types.DocumentDiagnosticParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))
    assert [d.code for d in first.items] == ["NA100"]
    refreshes = pulling.diagnostic_refresh_count
    replace_all(pulling, uri, KERNEL + HANG, version=2)
    await asyncio.sleep(0.3)
    loop = asyncio.get_running_loop()
    started = loop.time()
    stale = await pulling.text_document_diagnostic_async(types.DocumentDiagnosticParams(
        text_document=types.TextDocumentIdentifier(uri=uri), previous_result_id=first.result_id))
    assert loop.time() - started < 2.5  # the old server waited 5 s here
    assert stale.kind == "unchanged" and stale.result_id == first.result_id  # the last result, not a wait
    replace_all(pulling, uri, KERNEL.replace("BAD", "ok"), version=3)
    deadline = loop.time() + 8
    while pulling.diagnostic_refresh_count == refreshes and loop.time() < deadline:
        await asyncio.sleep(0.05)
    assert pulling.diagnostic_refresh_count > refreshes  # the client is asked to pull again
    fresh = await pulling.text_document_diagnostic_async(types.DocumentDiagnosticParams(
        text_document=types.TextDocumentIdentifier(uri=uri), previous_result_id=first.result_id))
    assert fresh.kind == "full" and list(fresh.items) == []
