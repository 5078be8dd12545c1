"""stdio transport that reads on the event loop.

pygls reads stdin in its thread pool: three thread hand-offs per message (header, blank line,
body), each waiting for the GIL while checks run in the worker threads. Under a burst of edits the
server then read ~7 messages/s and a hover waited behind thousands of queued `didChange`s for seconds.
Reading the pipe with asyncio takes the whole backlog in large chunks on the loop thread.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
from typing import BinaryIO

from pygls.io_ import StdinAsyncReader, StdoutWriter

from .framing import serve_messages

log = logging.getLogger("nki_assist.lsp")
READ_LIMIT = 1 << 20  # longest header line; bodies are read with readexactly (no limit)


class PipeReader:
    """pygls' reader interface over an asyncio stream."""

    def __init__(self, stream: asyncio.StreamReader) -> None:
        self.stream = stream

    async def readline(self) -> bytes:
        return await self.stream.readline()

    async def readexactly(self, n: int) -> bytes:
        try:
            return await self.stream.readexactly(n)
        except asyncio.IncompleteReadError as exc:  # end of input: pygls stops on a short read
            return exc.partial


async def pipe_reader(stdin: BinaryIO) -> PipeReader | None:
    """A reader on the event loop, or None when stdin is not a pipe/socket (a regular file)."""
    loop = asyncio.get_running_loop()
    stream = asyncio.StreamReader(limit=READ_LIMIT)
    try:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stream), stdin)
    except (ValueError, OSError) as exc:
        log.info("stdin is not a pipe (%s): reading it in a thread", exc)
        return None
    return PipeReader(stream)


def serve_stdio(server, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> None:
    """What `LanguageServer._start_io_async` does, with the loop-thread reader."""
    server._stop_event = threading.Event()  # pygls' own stop flag
    stdin = stdin or sys.stdin.buffer
    server.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))

    async def main() -> int:
        reader = await pipe_reader(stdin) or StdinAsyncReader(stdin, server.thread_pool)
        return await serve_messages(server._stop_event, reader, server.protocol, server.report_server_error)

    status = 0
    try:
        status = asyncio.run(main())
    except BrokenPipeError:
        log.error("connection to the client is lost; shutting down")
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        server.shutdown()
    if status:  # the framing could not be recovered: exit so that the editor starts a fresh server
        raise SystemExit(status)
