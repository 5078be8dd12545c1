"""The message loop of the stdio transport: LSP framing that survives a client's mistakes (issue 44, case 5).

pygls' loop trusts the framing: a wrong Content-Length leaves it reading a body into the next message's header
(or waiting for bytes that never come), alive and deaf for the rest of the session; a header line over the stream
limit raises out of the loop and kills the server. Here:

- a body that is not JSON gets a JSON-RPC parse error (-32700, id null), and reading resumes at the next
  `Content-Length:` header found in what was read (resync);
- a body that does not arrive within BODY_WAIT_S of its header (a Content-Length larger than what was sent, with
  the client waiting for an answer) is handled the same way with what did arrive;
- a header line longer than the reader's limit ends the server cleanly (logged, exit status 1): no resync is safe
  inside a line that long, and an editor restarts a server that exits.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import threading
from typing import Any

log = logging.getLogger("nki_assist.lsp")

HEADER = re.compile(rb"^Content-Length:[ \t]*(\d+)[ \t]*\r?\n$", re.I)
BODY_WAIT_S = 5.0
PARSE_ERROR = -32700
MAX_BODY = 256 << 20  # a Content-Length beyond this is a framing error, not a message


class FramingFailed(Exception):
    """The stream cannot be resynchronised (a header line over the limit): the server ends."""


class _Pushback:
    """A reader whose unread bytes can be put back (what follows a resync point)."""

    def __init__(self, reader: Any):
        self.reader, self.buf = reader, b""

    async def readline(self) -> bytes:
        if b"\n" in self.buf:
            line, _, self.buf = self.buf.partition(b"\n")
            return line + b"\n"
        head, self.buf = self.buf, b""
        try:
            return head + await self.reader.readline()
        except (ValueError, asyncio.LimitOverrunError) as exc:  # asyncio: a line over the stream's limit
            raise FramingFailed(f"a header line longer than the limit ({exc})") from exc

    async def body(self, n: int) -> tuple[bytes, bool]:
        """(bytes, complete): `n` bytes, or what arrived within BODY_WAIT_S."""
        if len(self.buf) >= n:
            data, self.buf = self.buf[:n], self.buf[n:]
            return data, True
        head, self.buf = self.buf, b""
        stream = getattr(self.reader, "stream", None)
        try:
            rest = await asyncio.wait_for(self.reader.readexactly(n - len(head)), BODY_WAIT_S)
            return head + rest, len(head) + len(rest) == n
        except asyncio.TimeoutError:
            # asyncio's readexactly keeps what arrived in the stream's buffer until it has all: take it
            got = bytes(getattr(stream, "_buffer", b""))
            if got:
                await stream.readexactly(len(got))
            return head + got, False

    def resync(self, data: bytes) -> None:
        """Put back what follows the first `Content-Length:` header inside `data` (a misframed body)."""
        at = data.find(b"Content-Length:", 1)
        if at >= 0:
            self.buf = data[at:] + self.buf


def _parse_error(protocol: Any, why: str) -> None:
    log.error("framing error: %s", why)
    try:
        # a plain dict: JSON-RPC wants `"id": null` here, which pygls' response objects leave out
        protocol._send_data({"jsonrpc": "2.0", "id": None,
                             "error": {"code": PARSE_ERROR, "message": f"Parse error: {why}"}})
    except Exception:  # noqa: BLE001 - the client is gone: the loop ends on its own
        log.exception("cannot send the parse error")


async def serve_messages(stop_event: threading.Event, reader: Any, protocol: Any, error_handler=None) -> int:
    """Read and dispatch messages until end of input or `stop_event`; 0, or 1 when the framing failed."""
    src = _Pushback(reader)
    length = None
    while not stop_event.is_set():
        try:
            line = await src.readline()
        except FramingFailed as exc:
            log.error("ending the server: %s", exc)
            return 1
        if not line:
            return 0
        m = HEADER.match(line)
        at = line.find(b"Content-Length:", 1)
        if not m and at > 0:  # the tail of a misframed body ran into the next header: start again there
            src.buf = line[at:] + src.buf
            continue
        if m:
            length = int(m.group(1))
            continue
        if line.strip():
            continue  # another header (Content-Type), or garbage between messages: skipped
        if length is None:
            continue  # a blank line without a Content-Length before it
        n, length = length, None
        if n > MAX_BODY:
            _parse_error(protocol, f"Content-Length {n} is beyond {MAX_BODY} bytes")
            continue
        body, complete = await src.body(n)
        try:
            if not complete:
                raise ValueError(f"only {len(body)} of the {n} bytes of Content-Length arrived")
            message = json.loads(body, object_hook=protocol.structure_message)
        except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError included
            _parse_error(protocol, str(exc)[:200])
            src.resync(body)
            continue
        except Exception as exc:  # noqa: BLE001 - a message pygls cannot structure: as pygls does
            log.exception("unable to handle message")
            if error_handler:
                error_handler(exc, type(exc))
            continue
        try:
            protocol.handle_message(message)
        except Exception as exc:  # noqa: BLE001 - one bad message must not end the session
            log.exception("unable to handle message")
            if error_handler:
                error_handler(exc, type(exc))
    return 0
