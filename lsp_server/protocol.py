"""JSON-RPC protocol that answers every request, even one whose params do not deserialize.

pygls turns a request with malformed params (a string where a position's line should be, a
negative character, a missing textDocument) into an exception while decoding the message and
only logs it: the client then waits forever for its answer. Here such a request gets a JSON-RPC
error response (-32602 Invalid params, naming the bad field) and is otherwise dropped. It also
dispatches messages without pygls' Protocol `isinstance` checks (see `handle_message`).
"""

from __future__ import annotations

import contextvars
import logging
from typing import Any

from lsprotocol.types import ResponseError
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.protocol import LanguageServerProtocol

log = logging.getLogger("nki_assist.lsp")


class _Answered:
    """Stands in for a request that was already answered with an error."""

    jsonrpc = "answered"


ANSWERED = _Answered()


def _why(exc: BaseException) -> str:
    cause = exc.__cause__
    try:
        from cattrs import transform_error

        lines = transform_error(cause) if cause is not None else []
    except Exception:  # noqa: BLE001 - not a cattrs error: keep the generic text
        lines = []
    return "; ".join(lines[:3]) or (str(cause) if cause else str(exc))


class AnsweringProtocol(LanguageServerProtocol):
    def structure_message(self, data: dict[str, Any]):
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            if not ("jsonrpc" in data and "id" in data and "method" in data):
                raise  # a notification or a response: nobody waits for an answer
            method = data.get("method")
            code = JsonRpcInvalidParams.CODE if isinstance(exc, JsonRpcInvalidParams) else exc.code
            message = f"invalid params for {method}: {_why(exc)}"
            log.warning("answered request %r with an error: %s", data.get("id"), message)
            self._send_response(data["id"], error=ResponseError(code=code, message=message))
            return ANSWERED

    def handle_message(self, message):
        """pygls' dispatch without its `isinstance` checks against runtime-checkable Protocols (0.3 ms
        per message in `typing._get_protocol_attrs`, on the event loop, for every keystroke)."""
        if message is ANSWERED:
            return None
        if self._shutdown and hasattr(message, "id") and getattr(message, "method", "exit") != "exit":
            # LSP: a request after `shutdown` is answered with InvalidRequest (pygls drops it: the client waits)
            self._send_response(message.id, error=ResponseError(code=-32600, message="the server is shut down"))
            return None
        if getattr(message, "jsonrpc", None) != self.VERSION or self._shutdown:
            return super().handle_message(message)  # pygls warns, or lets only `exit` through
        ctx = contextvars.copy_context()
        if hasattr(message, "method") and hasattr(message, "params"):
            if hasattr(message, "id"):
                return ctx.run(self._handle_request, message.id, message.method, message.params)
            return ctx.run(self._handle_notification, message.method, message.params)
        if hasattr(message, "id") and hasattr(message, "result"):
            return ctx.run(self._handle_response, message.id, message.result)
        return super().handle_message(message)
