"""ASGI middleware: API requests the runtime cannot handle get a 4xx, before the server sees them.

The API's schema lets through requests that `langgraph dev`'s runtime then fails on with a
500 (found by `tests/integration/api_fuzz.py`). This middleware, added to the custom app
(`server/webapp.py`; Agent Server runs a custom app's middleware before its own
routes), refuses them as a class, with a 422 (or 404) that names the field and what is
accepted, so the request changes nothing:

* **integers** (``limit``, ``offset``, ``max_depth``, ``depth``, ``since``, ``version``, in
  the query or at the top of a JSON body, each body of ``/runs/batch`` too): whole numbers
  from 0 to 2**63 - 1, what SQLite holds (``/threads/{id}/history?limit=2**63`` overflowed
  the checkpointer's query; ``/store/namespaces {"limit": 10**30}`` was a float slice
  index). ``after_seconds``: seconds from 0 to a year (a delay past what a date holds
  overflowed the run's start time and left its thread busy with no run); ``ttl`` (a store
  item's, or the one in a thread's ``ttl`` object): minutes from 0 to 10**9.
* **body keys the runtime indexes unchecked**: ``POST /store/items/search`` needs
  ``namespace_prefix`` (a list of strings; ``[]`` searches everything the caller may read).
* **store namespaces** (``namespace``, ``namespace_prefix``, ``prefix``, ``suffix`` on
  ``/store/...``, query or body): a label with a NUL byte is refused (the store refuses it,
  and the namespace check of `server/auth.py` turned that into a 500).
* **checkpoint ids** (in any body, each body of ``/runs/batch`` too): ``checkpoint_id``, the
  ``checkpoint`` object (an object; its ``checkpoint_id``, ``checkpoint_ns``, ``thread_id``
  strings, its ``checkpoint_map`` an object) and ``config.configurable``'s ``checkpoint_id`` and
  ``checkpoint_ns`` are that type or null. A run request's ``checkpoint_id: 5`` (or ``["x"]``)
  was a 500 (the runtime reads it as a UUID string), and the stateless run routes took any
  ``checkpoint`` unchecked (``5``: a 500; ``{"checkpoint_map": 5}``: a run that failed on it).
* **``before`` of ``POST /threads/{id}/history``**: the API takes a checkpoint
  (``{"checkpoint_id": ...}``, as `langgraph-sdk` sends it) but the runtime hands it to the
  checkpointer as a config, which reads ``before["configurable"]``: every such request was
  a 500. It is passed on with the checkpoint as its ``configurable`` too (so ``before``
  works); one without a ``checkpoint_id`` is refused.
* **a ``values`` filter on ``POST /threads/search`` and ``/threads/count``**: the in-memory
  runtime compares it against every thread's values, and a thread that has none yet
  (created, never run) makes every such search a 500. Refused (422): filter by
  ``metadata`` or ``status``, or read the threads' values.
* **``/ui/...`` without a UI bundle**: langgraph-api serves static files there from
  ``.langgraph_api/ui/public``, which only exists when a graph ships UI components; without
  it every request but ``POST /ui/{graph_id}`` was a 500 (no token needed). Now a 404.

Refusals answer ``{"detail": ...}`` like the server's own 4xx. A body that is not JSON, or
not an object, is passed on: the server answers it. A body nesting deeper than
``MAX_JSON_DEPTH`` never gets here (`server/body_depth.py`, the app's outermost middleware).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

from server.payload_middleware import _buffer, _json_response

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

INT64_MAX = 2**63 - 1
MAX_DELAY = 10**9
"""Minutes (``ttl``): about 1,900 years; past that the runtime's date arithmetic overflows."""
MAX_AFTER_SECONDS = 365 * 24 * 3600
"""The longest delay a run may be created with (``after_seconds``): a year. The run handler
(server/auth.py) checks the same bound for the in-process client, which skips this layer."""

INTEGER_RANGES: dict[str, tuple[int, int]] = {
    name: (0, INT64_MAX) for name in ("limit", "offset", "max_depth", "depth", "since", "version")
}
"""Fields that must be whole numbers, and their range (inclusive)."""
NUMBER_RANGES: dict[str, tuple[int, int]] = {"after_seconds": (0, MAX_AFTER_SECONDS), "ttl": (0, MAX_DELAY)}
"""Fields that may be fractional, and their range (inclusive); ``null`` stays allowed."""

REQUIRED_LISTS: dict[tuple[str, str], tuple[str, ...]] = {("POST", "/store/items/search"): ("namespace_prefix",)}
"""Body keys the runtime reads with ``payload[key]`` although the schema makes them optional."""

CHECKPOINT_FIELDS: dict[str, type] = {"checkpoint_id": str, "checkpoint_ns": str, "thread_id": str, "checkpoint_map": dict}
"""The fields of a ``checkpoint`` object (the API's ``Checkpoint`` schema, which the stateless run
routes do not apply) and their types; ``null`` stays allowed."""
CONFIGURABLE_CHECKPOINT_FIELDS = ("checkpoint_id", "checkpoint_ns")
"""The keys of ``config.configurable`` that LangGraph reads as the checkpoint to run from."""

NAMESPACE_FIELDS = frozenset({"namespace", "namespace_prefix", "prefix", "suffix"})
"""Store namespaces, in the query or the body of ``/store/...``."""
HISTORY = re.compile(r"/threads/[^/]+/history/?")
VALUES_FILTER_PATHS = frozenset({"/threads/search", "/threads/count"})
UI_PREFIX = re.compile(r"/ui(/|$)")
UI_RENDER = re.compile(r"/ui/[^/]+/?")
IN_PROCESS_ROOT = "/noauth"
"""``root_path`` of the in-process client's requests (our own reads): passed on untouched."""


class Refusal(Exception):
    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status, self.detail = status, detail


def ui_bundle_present() -> bool:
    """Whether langgraph-api has a folder to serve ``/ui`` from (it exists only with UI components)."""
    try:
        from langgraph_api.js.ui import UI_PUBLIC_DIR  # type: ignore[import-untyped]
    except ImportError:  # not inside the server: nothing is served there either
        return False
    return Path(UI_PUBLIC_DIR).is_dir()


def check_number(name: str, value: Any, where: str) -> None:
    """``value`` of field ``name`` is in its range (nothing to check for other fields)."""
    if name in INTEGER_RANGES:
        low, high = INTEGER_RANGES[name]
        whole = isinstance(value, int) or (isinstance(value, float) and math.isfinite(value) and value.is_integer())
        if isinstance(value, bool) or not whole or not low <= value <= high:
            raise Refusal(422, f"{where} {name!r} must be a whole number from {low} to {high} (2**63 - 1), not {value!r}")
    elif name == "ttl" and isinstance(value, dict):  # a thread's {"strategy": ..., "ttl": minutes}
        check_number(name, value.get("ttl"), "the 'ttl' object's field")
    elif name in NUMBER_RANGES and value is not None:
        low, high = NUMBER_RANGES[name]
        number = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
        if not number or not low <= value <= high:
            raise Refusal(422, f"{where} {name!r} must be a number from {low} to {high}, not {value!r}")


def _typed(name: str, value: Any, kind: type) -> None:
    if value is not None and (not isinstance(value, kind) or isinstance(value, bool)):
        what = "a string" if kind is str else "an object"
        shown = repr(value) if len(repr(value)) <= 80 else repr(value)[:77] + "..."
        raise Refusal(422, f"body field {name!r} must be {what} or null, not {shown}")


def check_checkpoints(body: dict[str, Any]) -> None:
    """Checkpoint ids in a body are strings (and a ``checkpoint`` an object): 422 naming the field."""
    _typed("checkpoint_id", body.get("checkpoint_id"), str)
    checkpoint = body.get("checkpoint")
    _typed("checkpoint", checkpoint, dict)
    for name, kind in CHECKPOINT_FIELDS.items():
        _typed(f"checkpoint.{name}", (checkpoint or {}).get(name), kind)
    config = body.get("config")
    configurable = config.get("configurable") if isinstance(config, dict) else None
    if isinstance(configurable, dict):
        for name in CONFIGURABLE_CHECKPOINT_FIELDS:
            _typed(f"config.configurable.{name}", configurable.get(name), str)


def _query_number(raw: str) -> Any:
    try:
        return int(raw)
    except ValueError:
        try:
            return float(raw)
        except ValueError:
            return raw


def check_query(path: str, query_string: bytes) -> None:
    for name, raw in parse_qsl(query_string.decode("latin-1"), keep_blank_values=True):
        if name in INTEGER_RANGES or name in NUMBER_RANGES:
            check_number(name, _query_number(raw), "query parameter")
        elif name in NAMESPACE_FIELDS and path.startswith("/store/"):
            check_namespace(name, [raw], "query parameter")


def check_namespace(name: str, value: Any, where: str) -> None:
    """Namespace labels cannot hold a NUL byte (the store refuses them; our namespace check
    then failed with a 500)."""
    if isinstance(value, list) and any(isinstance(label, str) and "\x00" in label for label in value):
        raise Refusal(422, f"{where} {name!r}: a namespace label cannot contain a NUL byte (\\x00), not {value!r}")


def history_before(payload: dict[str, Any]) -> dict[str, Any] | None:
    """``before`` of ``POST /threads/{id}/history`` as the runtime reads it, or None when it
    needs no change. The API takes a checkpoint (``{"checkpoint_id": ...}``, what
    `langgraph-sdk`'s ``get_history(before=...)`` sends) and hands it to the checkpointer as
    if it were a config, which reads ``before["configurable"]``: every such request was a
    500. The checkpoint goes in as the config's ``configurable``; without a ``checkpoint_id``
    the request is refused."""
    before = payload.get("before")
    if not isinstance(before, dict) or "configurable" in before:
        return None
    checkpoint_id = before.get("checkpoint_id")
    if not isinstance(checkpoint_id, str) or not checkpoint_id:
        raise Refusal(
            422,
            f"body field 'before' must name a checkpoint: {{\"checkpoint_id\": ...}} (from get_history), not {before!r}",
        )
    return {**payload, "before": {**before, "configurable": {"checkpoint_id": checkpoint_id}}}


def check_body(method: str, path: str, payload: Any) -> dict[str, Any] | None:
    """Raise `Refusal` for a body the runtime cannot handle; a body to send instead, or None."""
    bodies = payload if isinstance(payload, list) else [payload]
    for body in bodies:
        if not isinstance(body, dict):
            continue  # the server answers
        for name, value in body.items():
            check_number(name, value, "body field")
            if name in NAMESPACE_FIELDS and path.startswith("/store/"):
                check_namespace(name, value, "body field")
        check_checkpoints(body)
    if not isinstance(payload, dict):
        return None
    template = path.rstrip("/") or "/"
    for key in REQUIRED_LISTS.get((method, template), ()):
        value = payload.get(key)
        if not isinstance(value, list) or not all(isinstance(part, str) for part in value):
            raise Refusal(
                422, f"body field {key!r} is required: a list of strings ([] for everything you may read), not {value!r}"
            )
    if method == "POST" and template in VALUES_FILTER_PATHS and payload.get("values"):
        raise Refusal(
            422,
            "filtering threads by 'values' is not served by this server (its runtime cannot compare them while a "
            "thread has no values yet): filter by 'metadata' or 'status', or read the threads' values",
        )
    if method == "POST" and HISTORY.fullmatch(path):
        return history_before(payload)
    return None


class RequestLimitsMiddleware:
    """Refuse, with a 4xx naming the field, the API requests the runtime would answer with a 5xx."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http" or scope.get("root_path") == IN_PROCESS_ROOT:
            await self.app(scope, receive, send)
            return
        method, path = str(scope.get("method", "")), str(scope.get("path", ""))
        try:
            if UI_PREFIX.match(path) and not (method == "POST" and UI_RENDER.fullmatch(path)) and not ui_bundle_present():
                raise Refusal(404, f"{path} not found: this deployment has no UI components (no /ui bundle)")
            check_query(path, scope.get("query_string", b""))
        except Refusal as exc:
            await _refuse(exc, send)
            return
        if method not in ("POST", "PUT", "PATCH", "DELETE") or path.startswith("/visible/"):
            await self.app(scope, receive, send)
            return
        body, replay = await _buffer(receive)
        try:
            payload = json.loads(body) if body else None
        except ValueError:
            payload = None
        try:
            rewritten = check_body(method, path, payload)
        except Refusal as exc:
            await _refuse(exc, send)
            return
        if rewritten is not None:
            scope, replay = _with_body(scope, json.dumps(rewritten).encode(), receive)
        await self.app(scope, replay, send)


def _with_body(scope: Scope, body: bytes, receive_more: Receive) -> tuple[Scope, Receive]:
    """The request with ``body`` instead of the one the client sent (already read whole)."""
    headers = [(k, v) for k, v in scope.get("headers", []) if k.lower() != b"content-length"]
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if sent:
            return await receive_more()  # the client's disconnect, when it comes
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return {**scope, "headers": [*headers, (b"content-length", str(len(body)).encode())]}, receive


async def _refuse(exc: Refusal, send: Send) -> None:
    for message in _json_response(exc.status, exc.detail):
        await send(message)
