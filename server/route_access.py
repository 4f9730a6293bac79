"""ASGI middleware: who may call the routes Agent Server does not authenticate itself.

`langgraph dev` runs the custom auth (`server/auth.py`) only on its API
(threads, runs, assistants, store, ...). Its meta routes, the inmem runtime's
internal routes and a custom app's routes answer without it. Agent Server runs a
custom app's middleware before everything else (`server/webapp.py` adds this
one), so in token mode (``AUTH_TOKENS`` set) this middleware decides for them, per
route (`route_access`):

================================  ===================================================
``/ok``, ``/``                     open: health checks, ``{"ok": true}`` and nothing else
``/info``, ``/docs``,              a valid bearer token, or Studio's header
``/openapi.json``                  (``x-auth-scheme: langsmith``, which the server
                                   accepts on its API too): Studio reads them to connect;
                                   versions and the API schema, no user data
``/metrics``,                      a valid bearer token (operational data: the
``/playbook/contract``             deployment's locks, run counts); the gate sends one
                                   with ``--header``
``/internal/...``, ``/deploy...``  refused (403) for everyone: the inmem runtime's test
                                   routes wipe every user's data
                                   (``POST /internal/truncate``) and read any thread raw
``/visible/...``                   the route authenticates the caller itself
anything else                      the server's own auth
================================  ===================================================

It also closes two holes of the API that the auth handlers cannot see:

* ``POST /threads/{id}/copy``: the server checks the caller's *read* permission on
  the original and keeps its metadata, so an operator (who reads every thread)
  could create a thread in another user's space. An operator's copy of a thread
  that is not theirs gets the server's own answer for a thread it cannot find
  (409 ``Conflict``).
* ``GET /threads/{id}/runs``: ``limit`` and ``offset`` must be integers, ``limit`` at
  least 1 and ``offset`` at least 0 (the server slices with them: ``limit=-1``
  dropped the last run). Both modes; 422 otherwise.

In dev mode (no ``AUTH_TOKENS``) the routes stay as `langgraph dev` serves them: one
user, on loopback. Requests of the in-process client (``root_path`` ``/noauth``) are
passed on untouched.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, Literal
from urllib.parse import parse_qsl

from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.errors import APIStatusError

from server import access

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

Access = Literal["open", "token_or_studio", "token", "refused", "server"]
"""What a route needs in token mode; ``server``: the server's own auth (or the route's) decides."""

OPEN_PATHS = frozenset({"/ok", "/"})
STUDIO_READABLE_PATHS = frozenset({"/info", "/docs", "/openapi.json"})
TOKEN_PATHS = frozenset({"/metrics", "/playbook/contract"})
REFUSED_PREFIXES = ("/internal/", "/deploy")

STUDIO_SCHEME = "langsmith"
"""``x-auth-scheme`` value Studio sends."""

COPY = re.compile(r"/threads/(?P<thread_id>[^/]+)/copy/?")
RUNS_LIST = re.compile(r"/threads/[^/]+/runs/?")

SERVER_NOT_FOUND_ON_COPY = "Conflict"
"""The server's own 409 detail for a copy of a thread it cannot find."""


def route_access(path: str) -> Access:
    """What the route at ``path`` needs in token mode."""
    if path in OPEN_PATHS:
        return "open"
    if path in STUDIO_READABLE_PATHS:
        return "token_or_studio"
    if path in TOKEN_PATHS:
        return "token"
    if path.startswith(REFUSED_PREFIXES):
        return "refused"
    return "server"


def page_error(query: dict[str, str]) -> str | None:
    """Why a runs-list query's ``limit``/``offset`` is refused, or None."""
    for name, minimum in (("limit", 1), ("offset", 0)):
        raw = query.get(name)
        if raw is None:
            continue
        try:
            value = int(raw)
        except ValueError:
            return f"{name} must be an integer, got {raw!r}"
        if value < minimum:
            return f"{name} must be at least {minimum}, got {value}: page with limit >= 1 and offset >= 0"
    return None


def _headers(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers") or []}


def _query(scope: Scope) -> dict[str, str]:
    return dict(parse_qsl((scope.get("query_string") or b"").decode("latin-1"), keep_blank_values=True))


async def _answer(send: Send, status: int, detail: str) -> None:
    body = json.dumps({"detail": detail}, ensure_ascii=False).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})


class RouteAccessMiddleware:
    """See the module docstring. ``client_factory`` builds the in-process client used to
    read a thread's owner (it reads with no caller, so without filters)."""

    def __init__(self, app: ASGIApp, client_factory: Callable[[], LangGraphClient] = get_client) -> None:
        self.app = app
        self.client_factory = client_factory

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or str(scope.get("root_path") or "").startswith("/noauth"):
            await self.app(scope, receive, send)
            return
        refusal = await self._refusal(scope)
        if refusal is not None:
            await _answer(send, *refusal)
            return
        await self.app(scope, receive, send)

    async def _refusal(self, scope: Scope) -> tuple[int, str] | None:
        path, method = scope.get("path") or "", scope.get("method")
        if method == "GET" and RUNS_LIST.fullmatch(path) and (error := page_error(_query(scope))):
            return 422, error
        try:
            config = access.access_config()
        except access.AccessConfigError:
            return None  # the server's authenticate answers 500 with the reason
        if config.dev_mode:
            return None
        headers = _headers(scope)
        studio = headers.get("x-auth-scheme") == STUDIO_SCHEME
        needs = route_access(path)
        if needs == "refused":
            return 403, (
                f"{path} is not offered in token mode: it acts on every user's data. "
                "Use the API routes, or a dev-mode server (no AUTH_TOKENS) for local tests"
            )
        if needs == "open" or (needs == "token_or_studio" and studio):
            return None
        copy = COPY.fullmatch(path) if method == "POST" else None
        if needs == "server" and (copy is None or studio):
            return None  # the server authenticates; Studio is never an operator
        try:
            user = access.authenticate(headers.get("authorization"), config)
        except access.Unauthenticated as exc:
            return 401, str(exc)
        if (
            copy is not None
            and access.READ_ALL in user["permissions"]
            and not await self._owns(copy["thread_id"], user["identity"])
        ):
            return 409, SERVER_NOT_FOUND_ON_COPY  # only an operator reads, and so could copy, a thread not theirs
        return None

    async def _owns(self, thread_id: str, identity: str) -> bool:
        client = self.client_factory()
        try:
            thread = await client.threads.get(thread_id)
        except APIStatusError:  # absent, or not a thread id: the server would not find it either
            return False
        finally:
            await client.aclose()
        return (thread.get("metadata") or {}).get(access.OWNER_KEY) == identity
