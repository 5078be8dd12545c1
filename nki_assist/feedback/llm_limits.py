"""Bounds on an LLM reply (issue 44, case 2): its size and the time the whole reply takes.

The OpenAI client's timeout applies to each read, so a server that trickles one byte every few seconds holds a
review for hours, and nothing bounds the size of what it sends (a 60 MB "summary" would land in the report and the
reply cache). `bounded_http_client` gives the client an HTTP transport that counts the bytes and the seconds of
each response as its body arrives and stops it past either limit; `limit_problem` names which limit ended a call.
"""

from __future__ import annotations

import time
from typing import Any, Iterator

MAX_REPLY_BYTES = 1 << 20  # an assessment is a few kilobytes of JSON; 1 MiB is far beyond any honest reply


class ReplyTooLarge(Exception):
    """The response body passed MAX_REPLY_BYTES."""


class ReplyTooSlow(Exception):
    """The whole response took longer than the call's timeout."""


def _exceeded(exc: BaseException | None) -> BaseException | None:
    seen = 0
    while exc is not None and seen < 8:
        if isinstance(exc, (ReplyTooLarge, ReplyTooSlow)):
            return exc
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return None


def limit_problem(exc: BaseException) -> str | None:
    """What went wrong, when a limit of this module ended the call (found in the exception's chain)."""
    hit = _exceeded(exc)
    return None if hit is None else str(hit)


def bounded_http_client(total_s: float, max_bytes: int = MAX_REPLY_BYTES) -> Any:
    """An httpx2 client (the OpenAI client's transport library) whose responses stop at `max_bytes` or when
    `total_s` seconds have passed since the request was sent, whichever comes first."""
    import httpx2  # deferred: only an LLM call loads the HTTP stack

    class _Bounded(httpx2.SyncByteStream):
        def __init__(self, inner, deadline: float):
            self.inner, self.deadline = inner, deadline

        def __iter__(self) -> Iterator[bytes]:
            got = 0
            for chunk in self.inner:
                got += len(chunk)
                if got > max_bytes:
                    raise httpx2.ReadError("reply too large") from ReplyTooLarge(
                        f"the reply passed {max_bytes:,} bytes; stopped reading")
                if time.monotonic() > self.deadline:
                    raise httpx2.ReadTimeout("reply too slow") from ReplyTooSlow(
                        f"the reply took more than {total_s:g} s in all; stopped reading")
                yield chunk

        def close(self) -> None:
            self.inner.close()

    class _Transport(httpx2.BaseTransport):
        def __init__(self):
            self.inner = httpx2.HTTPTransport()

        def handle_request(self, request):
            deadline = time.monotonic() + total_s
            response = self.inner.handle_request(request)
            if time.monotonic() > deadline:
                response.close()
                raise httpx2.ReadTimeout("reply too slow") from ReplyTooSlow(
                    f"the reply's headers took more than {total_s:g} s; stopped")
            length = response.headers.get("content-length", "")
            if length.isdigit() and int(length) > max_bytes:
                response.close()
                raise httpx2.ReadError("reply too large") from ReplyTooLarge(
                    f"the reply announces {int(length):,} bytes, more than {max_bytes:,}; not read")
            response.stream = _Bounded(response.stream, deadline)
            return response

        def close(self) -> None:
            self.inner.close()

    return httpx2.Client(transport=_Transport(), timeout=total_s, follow_redirects=False)
