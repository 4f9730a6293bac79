"""ASGI middleware for the thread-state routes whose auth event cannot see the body.

``POST /threads/{id}/state`` (``update_state``) reaches the auth handlers as a
``threads.update`` event whose value is only ``{"thread_id": ...}``: no values, no
``as_node``, no ``checkpoint_id``. And ``GET /threads/{id}/state/{checkpoint_id}``
(and ``POST /threads/{id}/state/checkpoint``) is a ``threads.read`` event with the
thread id alone. So this middleware, added to the custom app
(`server/webapp.py`; Agent Server runs a custom app's middleware before its
own auth), handles those routes:

* ``update_state``: the values and ``as_node`` are checked against the thread's
  graph with `server/payloads.py` (the same rules as run input), and a
  ``checkpoint_id`` must name a checkpoint of the thread. An update of a subgraph's
  state (a ``checkpoint`` with a ``checkpoint_ns``) must name a subgraph of the thread's
  graph (else 400, where the server answered 400 or 500 ``Subgraph ... not found``
  depending on the values); its values are left to the server. A refusal answers
  ``{"detail": ...}`` with its 4xx and the request never reaches the server: the
  thread stays exactly as it was. Without this, ``{"messages": 5}`` is a 500 and an
  unknown ``checkpoint_id`` silently replaces the head with an empty state.
* ``POST /threads`` with ``supersteps`` (a new thread's history): ``metadata.graph_id``
  must name a graph the server serves (the server created the thread before it found
  out, answered 201 "was created, but there were problems" and kept an empty thread),
  ``if_exists: "do_nothing"`` may not name a thread that exists (the server wrote the
  supersteps onto it), and every update is checked the same way against the graph; a
  refusal creates and writes nothing.
* reading the state at a checkpoint the thread does not have answers 404 instead
  of a 200 with empty values.

It reads the thread (graph id, checkpoint) by calling the server app below it with
the caller's own headers, so the server's auth applies to those reads: a thread the
caller may not see, an unauthenticated request, a thread with no graph yet, or a
body that is not JSON are passed on untouched, and the server answers as it would.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import httpx

from server import payloads, serving
from server.guarding import GRAPHS

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

THREADS = re.compile(r"/threads")
STATE_UPDATE = re.compile(r"/threads/(?P<thread_id>[^/]+)/state")
STATE_AT = re.compile(r"/threads/(?P<thread_id>[^/]+)/state/(?P<checkpoint_id>[^/]+)")

_FORWARDED_HEADERS_SKIPPED = frozenset({b"host", b"content-length", b"content-type", b"transfer-encoding"})


def missing_checkpoint(state: Any) -> bool:
    """Whether a state read at a checkpoint found none (the server answers empty values
    with no ``created_at`` and no ``metadata`` then)."""
    return isinstance(state, dict) and state.get("created_at") is None and state.get("metadata") is None


def subgraph_path(namespace: str) -> str:
    """``checkpoint_ns`` without its task ids (``library:1|tools:7`` -> ``library|tools``), the form
    ``Pregel.get_subgraphs(namespace=...)`` takes (as LangGraph recasts it; its helper is private)."""
    return "|".join(part.split(":")[0] for part in namespace.split("|") if not part.isdigit())


def unknown_subgraph(graph_id: Any, namespace: Any) -> tuple[int, str] | None:
    """A refusal when ``namespace`` (an update's ``checkpoint_ns``) names no subgraph of the
    thread's graph. The server would look the subgraph up itself and, depending on the
    values, answer 400 or 500 ``Subgraph ... not found``."""
    path = GRAPHS.get(graph_id) if isinstance(graph_id, str) else None
    if path is None or not isinstance(namespace, str):
        return None  # no graph of ours, or a namespace that is not a string: the server answers
    graph = serving.load(path)
    recast = subgraph_path(namespace)
    if any(True for _ in graph.get_subgraphs(namespace=recast, recurse=True)):
        return None
    known = sorted(name for name, _ in graph.get_subgraphs(recurse=True))
    return 400, (
        f"update_state refused, the thread was left as it was: checkpoint_ns {namespace!r} names no subgraph of "
        f"{graph_id} (its subgraphs: {', '.join(known) or 'none'}); leave checkpoint_ns out to update the thread's "
        "own state"
    )


def _json_response(status: int, detail: str) -> tuple[Message, Message]:
    body = json.dumps({"detail": detail}, ensure_ascii=False).encode()
    start = {
        "type": "http.response.start",
        "status": status,
        "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
    }
    return start, {"type": "http.response.body", "body": body}


class PayloadMiddleware:
    """Check ``update_state`` bodies and checkpoint reads before Agent Server handles them."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        method, path = scope.get("method"), scope.get("path", "")
        if method == "POST" and THREADS.fullmatch(path):
            await self._create_thread(scope, receive, send)
        elif method == "POST" and (match := STATE_UPDATE.fullmatch(path)):
            await self._update_state(match["thread_id"], scope, receive, send)
        elif method == "GET" and (match := STATE_AT.fullmatch(path)):
            await self._state_at(match["thread_id"], match["checkpoint_id"], scope, receive, send)
        elif method == "POST" and (match := STATE_AT.fullmatch(path)) and match["checkpoint_id"] == "checkpoint":
            body, replay = await _buffer(receive)
            try:
                checkpoint_id = json.loads(body)["checkpoint"]["checkpoint_id"]
            except (ValueError, TypeError, KeyError):
                checkpoint_id = None
            await self._state_at(match["thread_id"], checkpoint_id, scope, replay, send)
        else:
            await self.app(scope, receive, send)

    # -- reading as the caller ------------------------------------------------------------

    def _client(self, scope: Scope) -> httpx.AsyncClient:
        headers = [(k, v) for k, v in scope.get("headers", []) if k.lower() not in _FORWARDED_HEADERS_SKIPPED]
        transport = httpx.ASGITransport(app=self.app, root_path=scope.get("root_path", ""))
        return httpx.AsyncClient(transport=transport, base_url="http://api", headers=headers, timeout=30)

    # -- a new thread's supersteps -----------------------------------------------------------

    async def _create_thread(self, scope: Scope, receive: Receive, send: Send) -> None:
        body, replay = await _buffer(receive)
        try:
            payload = json.loads(body or b"null")
        except ValueError:
            payload = None
        if isinstance(payload, dict) and payload.get("supersteps"):
            refusal = await self._supersteps_refusal(payload, scope)
            if refusal is not None:
                for message in _json_response(*refusal):
                    await send(message)
                return
        await self.app(scope, replay, send)

    async def _supersteps_refusal(self, payload: dict[str, Any], scope: Scope) -> tuple[int, str] | None:
        """Why a ``POST /threads`` with ``supersteps`` is refused, or None.

        The server creates the thread first and writes the supersteps through the graph named by
        ``metadata.graph_id`` after: without one (or with a graph it does not serve) it answered 201
        ``Thread ... was created, but there were problems updating the state`` and kept a new empty
        thread each time. With ``if_exists: "do_nothing"`` and a thread that exists it wrote them
        onto that thread. So all of it is checked here, before anything is created or written.
        """
        supersteps = payload["supersteps"]
        metadata = payload.get("metadata")
        graph_id = metadata.get("graph_id") if isinstance(metadata, dict) else None
        async with self._client(scope) as client:
            found = await client.post("/assistants/search", json={"metadata": {"created_by": "system"}, "limit": 1000})
            if found.status_code != 200:
                return None  # not authenticated, say: the server answers
            graphs = sorted({assistant["graph_id"] for assistant in found.json()})
            if not isinstance(graph_id, str) or graph_id not in graphs:
                named = f"metadata.graph_id {graph_id!r}, no graph of this server" if graph_id else "no metadata.graph_id"
                return 422, (
                    f"thread not created: supersteps are written through the thread's graph, and this request has {named}. Send "
                    f"metadata.graph_id (one of: {', '.join(graphs)}), or create the thread without supersteps"
                )
            thread_id = payload.get("thread_id")
            if payload.get("if_exists") == "do_nothing" and isinstance(thread_id, str):
                existing = await client.get(f"/threads/{thread_id}")
                if existing.status_code == 200:  # the caller's (or read by an operator): nothing new to them
                    return 409, (
                        f"nothing written: thread {thread_id} already exists, and if_exists 'do_nothing' would write the "
                        "supersteps onto it (supersteps only seed a new thread). Leave supersteps out to get the thread as "
                        "it is, or write to it with update_state"
                    )
        shape = serving.graph_shape(graph_id, serving.policy_for(graph_id))
        if shape is not None:
            try:
                payloads.check_supersteps(supersteps, shape, payloads.limits(serving.max_message_chars()))
            except payloads.Refused as exc:
                return exc.status, f"thread not created: {exc.message}"
        return None

    # -- update_state -----------------------------------------------------------------------

    async def _update_state(self, thread_id: str, scope: Scope, receive: Receive, send: Send) -> None:
        body, replay = await _buffer(receive)
        try:
            payload = json.loads(body or b"null")
        except ValueError:
            payload = None
        if isinstance(payload, dict):
            refusal = await self._refusal(thread_id, payload, scope)
            if refusal is not None:
                for message in _json_response(*refusal):
                    await send(message)
                return
        await self.app(scope, replay, send)

    async def _refusal(self, thread_id: str, payload: dict[str, Any], scope: Scope) -> tuple[int, str] | None:
        raw_checkpoint = payload.get("checkpoint")
        checkpoint = raw_checkpoint if isinstance(raw_checkpoint, dict) else {}
        namespace = checkpoint.get("checkpoint_ns")
        async with self._client(scope) as client:
            thread = await client.get(f"/threads/{thread_id}")
            if thread.status_code != 200:
                return None  # absent, not the caller's, not authenticated: the server answers
            graph_id = (thread.json().get("metadata") or {}).get("graph_id")
            if namespace:
                return unknown_subgraph(graph_id, namespace)  # else its own schema, resolved by the server
            shape = serving.graph_shape(graph_id, serving.policy_for(graph_id)) if graph_id else None
            if shape is None:
                return None  # no graph yet: the server answers 400
            try:
                payloads.check_state_update(
                    payload.get("values"), payload.get("as_node"), shape, payloads.limits(serving.max_message_chars())
                )
            except payloads.Refused as exc:
                return exc.status, f"update_state refused, the thread was left as it was: {exc.message}"
            checkpoint_id = payload.get("checkpoint_id") or checkpoint.get("checkpoint_id")
            if not checkpoint_id:
                return None  # the head
            found = await client.post(
                f"/threads/{thread_id}/state/checkpoint", json={"checkpoint": {"checkpoint_id": str(checkpoint_id)}}
            )
            if found.status_code == 200 and missing_checkpoint(found.json()):
                return 404, (
                    f"update_state refused, the thread was left as it was: thread {thread_id} has no checkpoint "
                    f"{checkpoint_id}. List its checkpoints with get_history, or leave checkpoint_id out to update "
                    "the latest state."
                )
        return None

    # -- state at a checkpoint ----------------------------------------------------------------

    async def _state_at(self, thread_id: str, checkpoint_id: str | None, scope: Scope, receive: Receive, send: Send) -> None:
        held: list[Message] = []

        async def hold(message: Message) -> None:
            held.append(message)

        await self.app(scope, receive, hold)
        start = next((m for m in held if m["type"] == "http.response.start"), None)
        if start is not None and start["status"] == 200:
            body = b"".join(m.get("body", b"") for m in held if m["type"] == "http.response.body")
            try:
                state = json.loads(body)
            except ValueError:
                state = None
            if missing_checkpoint(state):
                named = checkpoint_id or ((state or {}).get("checkpoint") or {}).get("checkpoint_id") or "?"
                held = list(
                    _json_response(
                        404,
                        f"thread {thread_id} has no checkpoint {named}. List its checkpoints with "
                        "get_history, or read the latest state with get_state without a checkpoint id.",
                    )
                )
        for message in held:
            await send(message)


async def _buffer(receive: Receive) -> tuple[bytes, Receive]:
    """The whole request body, and a ``receive`` that hands it on again."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    body = b"".join(chunks)
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return body, replay
