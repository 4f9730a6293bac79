"""ASGI middleware: a request body that nests JSON deeper than `MAX_JSON_DEPTH` is a 422.

Every layer that reads a request body parses it whole, and each one fails on deep nesting
in its own way: Python's ``json`` (this server's middlewares, `server/webapp.py`) raises
`RecursionError` near 1,000 levels, langgraph-api's schema validator answers 400
``Recursion limit reached`` near 400, and orjson, which the runtime and `langgraph-sdk`
encode with, refuses to write past 255 levels. So a thread's metadata nested 5,000 deep
was a 500 where the body was parsed; a store value, run input or run metadata 250 deep
was stored and then broke every later read that wraps it (``/threads/search`` answered
500 for the user's every thread); a ``/visible`` context 400 deep failed in the
in-process client's encoder.

This middleware is the one bound for all of them. It is the custom app's outermost
(`server/webapp.py`; Agent Server runs a custom app's middleware before its own routes),
so it reads every body before anything parses it: the API's, ``/visible``'s, and the
in-process client's own requests, which pass through the same stack. It scans the raw
bytes (`json_depth`: brackets outside strings, nothing is parsed) and refuses a body
deeper than the limit with a 422 ``{"detail": ...}`` naming the limit, before anything
is read or written. A body that is not JSON is scanned all the same and passed on when
shallow: the server answers it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, MutableMapping
from itertools import accumulate
from typing import Any

from server.payload_middleware import _buffer

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

MAX_JSON_DEPTH = 64
"""The deepest nesting of objects and arrays a request body may have (the body's own object
is level 1). What legitimate payloads need: a run's input with a tool call, the deepest
thing LangGraph clients send, is ``{"input": {"messages": [{"tool_calls": [{"args": {...}}]}]}}``,
7 levels plus the arguments, and ``POST /threads`` supersteps add 3 more: 10 to 30 in practice.
What the runtime survives: orjson writes at most 255 levels, and the runtime wraps a stored
value in up to a dozen levels of its own when it answers with it (a thread list, a history,
a subgraph's state in its parent's), so a value that deep was stored and then broke every
read (measured: 250 levels; 400 failed at the door of the ``/visible`` route). 64 is twice
the deepest legitimate payload and leaves the runtime about 190 levels for its wrappers (it
is also .NET System.Text.Json's default ``MaxDepth``)."""

_STRING = re.compile(rb'"(?:[^"\\]++|\\.)*+(?:"|\\?\Z)', re.DOTALL)
"""A JSON string; one with no closing quote runs to the end (so it is matched once, in linear time)."""
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_STEP = [0] * 256
for _opening in b"[{":
    _STEP[_opening] = 1
for _closing in b"]}":
    _STEP[_closing] = -1


def json_depth(body: bytes) -> int:
    """How deep ``body`` nests objects and arrays (0 for a scalar or an empty body), read from
    the bytes: brackets inside strings do not count, and nothing is parsed, so it takes any
    depth. A closing bracket without its opening one (not JSON) lowers the count, as a parser
    would stop there."""
    if body.count(b"[") + body.count(b"{") == 0:
        return 0
    structure = _STRING.sub(b"", body).translate(None, _NOT_BRACKETS)
    return max(0, max(accumulate(map(_STEP.__getitem__, structure)), default=0))


def too_deep(body: bytes, limit: int = MAX_JSON_DEPTH) -> str | None:
    """Why ``body`` is refused (its nesting is past ``limit``), or None."""
    if body.count(b"[") + body.count(b"{") <= limit:
        return None  # cannot nest deeper than it has brackets
    depth = json_depth(body)
    if depth <= limit:
        return None
    return (
        f"the request body nests JSON {depth} levels deep (objects and arrays); this server accepts at most "
        f"{limit} levels (MAX_JSON_DEPTH), so nothing was read or changed. Flatten the value, or send a deeply "
        "nested one as a JSON string"
    )


def refusal(path: str, detail: str) -> bytes:
    """The 422's body: ``{"detail": ...}``, and on ``/visible/...`` also the route's own
    ``{"error": ..., "message": ...}`` (`server/webapp.py`)."""
    answer: dict[str, str] = {"detail": detail}
    if path.startswith("/visible/"):
        answer |= {"error": "too_deep", "message": detail}
    return json.dumps(answer, ensure_ascii=False).encode()


def _carries_body(scope: Scope) -> bool:
    for name, value in scope.get("headers") or []:
        lowered = name.lower()
        if lowered == b"transfer-encoding" or (lowered == b"content-length" and value.strip() not in (b"", b"0")):
            return True
    return False


class BodyDepthMiddleware:
    """Refuse (422) a request whose body nests JSON deeper than `MAX_JSON_DEPTH`, on every route."""

    def __init__(self, app: ASGIApp, limit: int = MAX_JSON_DEPTH) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http" or not _carries_body(scope):
            await self.app(scope, receive, send)
            return
        body, replay = await _buffer(receive)
        detail = too_deep(body, self.limit)
        if detail is None:
            await self.app(scope, replay, send)
            return
        answer = refusal(str(scope.get("path", "")), detail)
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(answer)).encode())]
        await send({"type": "http.response.start", "status": 422, "headers": headers})
        await send({"type": "http.response.body", "body": answer})
