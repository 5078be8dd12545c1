"""The language server under a client's mistakes (issue 44, case 5): bounded hover scans, framing errors
answered with an error and a resync (or a clean exit), no full wait before the first check, requests after
`shutdown` answered. Raw JSON-RPC over stdio (RawClient of test_lsp_robustness)."""

from __future__ import annotations

import time

import pytest
from test_lsp_robustness import KERNEL, RawClient, _open, _started

from lsp_server.hover import api_hover, word_at
from lsp_server.navigation import dotted_at


@pytest.fixture
def client():
    c = _started()
    yield c
    c.close()


def _hover(client: RawClient, uri: str, line: int, char: int, timeout: float = 30.0):
    return client.request("textDocument/hover", {"textDocument": {"uri": uri},
                                                 "position": {"line": line, "character": char}}, timeout)


def test_scans_of_a_long_dotless_word_are_bounded():
    word = "a" * 200_000
    t0 = time.perf_counter()
    assert api_hover({"imports": {"nl": "nki.language"}}, word, 100_000, None) is None
    assert word_at(word, 100_000) is not None
    from types import SimpleNamespace

    dotted = dotted_at(word + ".x", SimpleNamespace(col=200_002, end_col=200_003))
    assert dotted.endswith("a.x") and len(dotted) < 300  # the name as far as the window reaches
    assert time.perf_counter() - t0 < 1.0  # before: minutes (the dotted regex backtracks per start position)


def test_hover_on_a_long_line_answers_and_the_server_stays_responsive(client):
    uri = "file:///w/long_nki.py"
    _open(client, uri, KERNEL + "x = " + "b" * 100_000 + "\n")
    t0 = time.monotonic()
    assert _hover(client, uri, 8, 50_000, timeout=60) is not None
    assert time.monotonic() - t0 < 20  # before: 40k characters took 5-22 s, 100k far longer
    assert _hover(client, uri, 6, 4) is not None


def _raw(client: RawClient, data: bytes) -> None:
    try:
        client.proc.stdin.write(data)
        client.proc.stdin.flush()
    except BrokenPipeError:  # the server ended while it was sent
        pass


def test_a_too_short_content_length_is_answered_and_the_stream_resyncs(client):
    body = b'{"jsonrpc": "2.0", "id": 900, "method": "textDocument/hover", "params": {}}'
    _raw(client, b"Content-Length: %d\r\n\r\n" % (len(body) - 20) + body)
    err = client.wait(lambda m: m.get("error", {}).get("code") == -32700, 20)
    assert err is not None and err["id"] is None  # before: logged only, and every later message misframed
    assert client.request("shutdown", None, timeout=20) is not None  # the next message is read again


def test_a_too_long_content_length_is_answered_and_the_stream_resyncs(client):
    body = b'{"jsonrpc": "2.0", "method": "$/noop", "params": {}}'
    _raw(client, b"Content-Length: %d\r\n\r\n" % (len(body) + 500) + body)
    client.send({"id": 902, "method": "shutdown", "params": None})  # read into the "body"; found again by resync
    seen: list[dict] = []
    client.wait(lambda m: seen.append(m) or m.get("id") == 902, 40)
    assert [m["error"]["code"] for m in seen if m.get("id") is None and "error" in m] == [-32700]
    assert any(m.get("id") == 902 and "error" not in m for m in seen)  # before: deaf to every later message


def test_a_huge_header_line_ends_the_server_cleanly(client):
    _raw(client, b"X-Junk: " + b"j" * (3 << 20) + b"\r\n")
    assert client.proc.wait(timeout=30) == 1  # before: it died with a traceback (or hung)


def test_a_request_before_the_first_check_does_not_wait_the_full_five_seconds(client):
    uri = "file:///w/first_nki.py"
    _open(client, uri, KERNEL)
    t0 = time.monotonic()
    assert _hover(client, uri, 6, 4) is not None
    assert time.monotonic() - t0 < 4.5  # before: always 5 s and more in push mode


def test_requests_after_shutdown_are_answered(client):
    assert client.request("shutdown", None) is not None
    reply = _hover(client, "file:///w/x_nki.py", 0, 0, timeout=10)
    assert reply is not None and reply["error"]["code"] == -32600  # before: no reply ever
