"""Every answer an Agent Server gives `playbook`, checked in one place before anything reads it.

langgraph-sdk decodes a 2xx body as JSON and hands it back as it is: a proxy's HTML page, an empty or
cut-off body, a scalar, an object where a list belongs, a thread without its id, a 200 that carries an
error payload. Read further, any of those became a ``KeyError`` or ``TypeError`` deep inside a rule (a
traceback, exit 1: "blocked"). `checked` gives a client whose HTTP layer (`CheckedHttp`, under every
``client.threads``/``assistants``/``runs`` call) parses each answer itself and checks it against the
shape its route returns (`ROUTES`: the fields the playbook reads, their types; other fields are free).
Anything else is a `BadAnswer` (exit 3) naming the server, the request, the status, the content type,
the first characters of the body and what was wrong, in one line. An event stream (``runs.stream``)
whose data is not JSON is the same.

Routes not listed are parsed (JSON or nothing) but not shaped; their callers read them defensively.
The same layer holds the command's deadline (`sources/budget.py`): every request, and every part of an
event stream, runs within what is left of it.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Collection, Mapping
from typing import Any, cast

import httpx
import orjson
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.schema import StreamPart

from migrations_playbook.errors import BadAnswer
from migrations_playbook.sources.budget import Deadline
from migrations_playbook.sources.compat import HttpClient


class Wrong(Exception):
    """An answer is not of its route's shape (the message says where and how)."""


Check = Callable[[Any, str], None]
"""``check(value, where)``: raise `Wrong` when ``value`` is not of the shape."""


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "a number", float: "a number"}.get(
        type(value), type(value).__name__
    )


def anything(value: Any, where: str) -> None:
    return None


def obj(required: Mapping[str, Check] | None = None, optional: Mapping[str, Check] | None = None) -> Check:
    """An object with the ``required`` keys, and the ``optional`` ones (or null) of their shapes when present."""

    def check(value: Any, where: str) -> None:
        if not isinstance(value, dict):
            raise Wrong(f"{where} is {_type_name(value)}, not an object")
        for key, inner in (required or {}).items():
            if key not in value:
                error = value.get("error") or value.get("detail") or value.get("message")
                if error is not None and isinstance(error, str | int | float):
                    raise Wrong(f"{where} is an error payload: {str(error)[:120]!r}")
                raise Wrong(f"{where} has no {key!r} (keys: {', '.join(map(str, list(value)[:8])) or 'none'})")
            inner(value[key], f"{where}.{key}")
        for key, inner in (optional or {}).items():
            if value.get(key) is not None:
                inner(value[key], f"{where}.{key}")

    return check


def list_of(item: Check) -> Check:
    def check(value: Any, where: str) -> None:
        if not isinstance(value, list):
            if isinstance(value, dict) and any(k in value for k in ("error", "detail", "message")):
                error = value.get("error") or value.get("detail") or value.get("message")
                raise Wrong(f"{where} is an error payload, not a list: {str(error)[:120]!r}")
            raise Wrong(f"{where} is {_type_name(value)}, not a list")
        for i, entry in enumerate(value):
            item(entry, f"{where}[{i}]")

    return check


def map_of(item: Check) -> Check:
    def check(value: Any, where: str) -> None:
        if not isinstance(value, dict):
            raise Wrong(f"{where} is {_type_name(value)}, not an object")
        for key, entry in value.items():
            item(entry, f"{where}[{key!r}]")

    return check


def scalar(*kinds: type) -> Check:
    def check(value: Any, where: str) -> None:
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            raise Wrong(f"{where} is {_type_name(value)}, not {' or '.join(_type_name(k()) for k in kinds)}")

    return check


TEXT = scalar(str)
COUNT = scalar(int)
OBJECT = obj()
LIST = list_of(anything)
ID = scalar(str, int)  # ids are strings; an older server's integer ids are accepted as they are

INTERRUPT = obj(optional={"id": ID})
TASK_FIELDS: dict[str, Check] = {
    "id": ID,
    "path": LIST,
    "interrupts": list_of(INTERRUPT),
    "checkpoint": OBJECT,
}


def state(value: Any, where: str) -> None:
    """A thread state (`get_state`, a history entry), nested through its tasks' subgraph states."""
    obj(
        {"values": anything},
        {"next": list_of(TEXT), "tasks": list_of(task), "checkpoint": OBJECT, "metadata": OBJECT, "parent_checkpoint": OBJECT},
    )(value, where)


def history_entry(value: Any, where: str) -> None:
    """A checkpoint of a thread's history: a state that names its checkpoint (history is paged by it)."""
    state(value, where)
    obj({"checkpoint": obj({"checkpoint_id": ID})})(value, where)


def task(value: Any, where: str) -> None:
    obj({"name": TEXT}, {**TASK_FIELDS, "state": state_or_config})(value, where)


def state_or_config(value: Any, where: str) -> None:
    """A task's ``state``: its subgraph's state (with ``values``), or the config pointing at it."""
    if isinstance(value, dict) and "values" in value:
        state(value, where)
    else:
        OBJECT(value, where)


THREAD = obj(
    {"thread_id": ID},
    {"status": TEXT, "metadata": OBJECT, "interrupts": map_of(list_of(INTERRUPT)), "state_updated_at": anything},
)
THREAD_RECORD = THREAD
"""A `threads.search` entry: its id, and what it was asked for (``select``) of the right types where present;
`require_fields` checks the ones asked for are there."""
ASSISTANT = obj({"assistant_id": ID, "graph_id": TEXT}, {"metadata": OBJECT, "version": COUNT})
DRAWING = obj(
    {"nodes": list_of(obj({"id": ID})), "edges": list_of(obj({"source": ID, "target": ID}))},
)
RUN = obj({"run_id": ID}, {"status": TEXT, "metadata": OBJECT})
WRITTEN = obj(optional={"checkpoint": OBJECT, "checkpoint_id": ID})

_T = r"[^/]+"
ROUTES: list[tuple[str, re.Pattern[str], Check, str]] = [
    (method, re.compile(f"^{pattern}$"), check, what)
    for method, pattern, check, what in [
        ("GET", "/ok", OBJECT, "an object"),
        ("POST", "/assistants/search", list_of(ASSISTANT), "a list of assistants"),
        ("GET", f"/assistants/{_T}", ASSISTANT, "an assistant"),
        ("PATCH", f"/assistants/{_T}", ASSISTANT, "an assistant"),
        ("POST", f"/assistants/{_T}/versions", list_of(OBJECT), "a list of assistant versions"),
        ("GET", f"/assistants/{_T}/graph", DRAWING, "a graph drawing (nodes and edges)"),
        ("GET", f"/assistants/{_T}/schemas", OBJECT, "the graph's schemas"),
        ("GET", f"/assistants/{_T}/subgraphs(/{_T})?", map_of(OBJECT), "the subgraphs' schemas"),
        ("POST", "/threads/search", list_of(THREAD_RECORD), "a list of threads"),
        ("POST", "/threads/count", COUNT, "a number"),
        ("POST", "/threads", THREAD, "a thread"),
        ("GET", f"/threads/{_T}", THREAD, "a thread"),
        ("PATCH", f"/threads/{_T}", THREAD, "a thread"),
        ("POST", f"/threads/{_T}/copy", THREAD, "a thread"),
        ("GET", f"/threads/{_T}/state(/{_T})?", state, "a thread state"),
        ("POST", f"/threads/{_T}/state/checkpoint", state, "a thread state"),
        ("POST", f"/threads/{_T}/state", WRITTEN, "the checkpoint written"),
        ("GET|POST", f"/threads/{_T}/history", list_of(history_entry), "a list of thread checkpoints"),
        ("POST", f"/threads/{_T}/runs", RUN, "a run"),
        ("GET", f"/threads/{_T}/runs", list_of(RUN), "a list of runs"),
        ("GET", f"/threads/{_T}/runs/{_T}", obj({"run_id": ID, "status": TEXT}, {"metadata": OBJECT}), "a run"),
    ]
]
"""(method, path, shape, what it should be) per route the playbook reads; the first match is used."""


def require_fields(base: str, what: str, records: list[Any], fields: Collection[str]) -> None:
    """A `BadAnswer` unless every record has each of ``fields`` (what a projection asked for)."""
    for i, record in enumerate(records):
        missing = [f for f in fields if f not in record]
        if missing:
            raise BadAnswer(
                f"server {base} answered {what} with a record without {', '.join(map(repr, missing))} (the answer[{i}])"
            )


def shape_of(method: str, path: str) -> tuple[Check, str] | None:
    for methods, pattern, check, what in ROUTES:
        if method in methods.split("|") and pattern.match(path):
            return check, what
    return None


def _excerpt(body: bytes) -> str:
    if not body:
        return "an empty body"
    text = " ".join(body[:200].decode("utf-8", "replace").split())
    return repr(text[:80] + ("..." if len(text) > 80 or len(body) > 200 else ""))


def _describe(who: str, method: str, path: str, response: httpx.Response | None, body: bytes, problem: str) -> str:
    status = f"{response.status_code} {response.headers.get('content-type', 'no content type')}" if response else "?"
    return f"{who} answered {method} {path} with {status} {_excerpt(body)}: {problem}"


def check_answer(base: str, method: str, path: str, response: httpx.Response | None, body: bytes) -> Any:
    """The decoded body of a 2xx answer, checked against its route's shape; a `BadAnswer` otherwise."""
    shape = shape_of(method, path)
    try:
        value = orjson.loads(body) if body else None
    except orjson.JSONDecodeError:
        expected = shape[1] if shape else "JSON"
        raise BadAnswer(_describe(f"server {base}", method, path, response, body, f"not JSON (expected {expected})")) from None
    if shape is not None:
        check, what = shape
        try:
            check(value, "the answer")
        except Wrong as exc:
            raise BadAnswer(_describe(f"server {base}", method, path, response, body, f"{exc} (expected {what})")) from None
    return value


class CheckedHttp(HttpClient):
    """langgraph-sdk's HTTP layer, with every answer checked (`check_answer`) and every event stream's data parsed;
    with a ``deadline``, every request and every part of a stream runs within what is left of it (`Deadline.within`)."""

    def __init__(self, client: httpx.AsyncClient, deadline: Deadline | None = None) -> None:
        super().__init__(client)
        self.deadline = deadline

    @property
    def base(self) -> str:
        return str(self.client.base_url).rstrip("/")

    def _within(self, method: str, path: str) -> contextlib.AbstractAsyncContextManager[None]:
        if self.deadline is None:
            return contextlib.nullcontext()
        return self.deadline.within(f"server {self.base}", f"{method} {path}")

    async def _checked(self, method: str, path: str, send: Callable[..., Any], **kwargs: Any) -> Any:
        seen: list[httpx.Response] = []
        hook = kwargs.pop("on_response", None)

        def on_response(response: httpx.Response) -> None:
            seen.append(response)
            if hook is not None:
                hook(response)

        try:
            async with self._within(method, path):
                decoded = await send(path, on_response=on_response, **kwargs)
        except orjson.JSONDecodeError as exc:
            if not seen:  # no response to show: say what the SDK could not read
                raise BadAnswer(f"server {self.base} answered {method} {path} with a body that is not JSON: {exc}") from None
            decoded = None  # the body is checked below, with what came back
        if not seen:  # the SDK did not hand the response over (no hook on this path): its own decoding stands
            return decoded
        response = seen[-1]
        return check_answer(self.base, method, path, response, response.content)

    async def get(self, path: str, **kwargs: Any) -> Any:
        return await self._checked("GET", path, super().get, **kwargs)

    async def post(self, path: str, **kwargs: Any) -> Any:
        return await self._checked("POST", path, super().post, **kwargs)

    async def put(self, path: str, **kwargs: Any) -> Any:
        return await self._checked("PUT", path, super().put, **kwargs)

    async def patch(self, path: str, **kwargs: Any) -> Any:
        return await self._checked("PATCH", path, super().patch, **kwargs)

    async def delete(self, path: str, **kwargs: Any) -> None:
        async with self._within("DELETE", path):
            await super().delete(path, **kwargs)

    async def request_reconnect(self, path: str, method: str, **kwargs: Any) -> Any:
        try:
            async with self._within(method, path):
                value = await super().request_reconnect(path, method, **kwargs)
        except orjson.JSONDecodeError as exc:
            raise BadAnswer(f"server {self.base} answered {method} {path} with a body that is not JSON: {exc}") from None
        return value

    async def stream(self, path: str, method: str, **kwargs: Any) -> AsyncIterator[StreamPart]:
        parts = cast(AsyncGenerator[StreamPart, None], super().stream(path, method, **kwargs))  # an async generator
        try:
            while True:
                async with self._within(method, path):
                    try:
                        part = await anext(parts)
                    except StopAsyncIteration:
                        return
                    except orjson.JSONDecodeError as exc:
                        raise BadAnswer(
                            f"server {self.base} answered {method} {path} with an event stream whose data is not JSON: {exc}"
                        ) from None
                if not isinstance(part.event, str):
                    raise BadAnswer(f"server {self.base} answered {method} {path} with an event without a name")
                yield part
        finally:
            await parts.aclose()


def checked(client: LangGraphClient, deadline: Deadline | None = None) -> LangGraphClient:
    """``client`` with every answer checked (`CheckedHttp`), on the same httpx client, within ``deadline``."""
    if isinstance(client.http, CheckedHttp):
        client.http.deadline = deadline or client.http.deadline
        return client
    http = CheckedHttp(client.http.client, deadline)
    client.http = http
    for part in (client.assistants, client.threads, client.runs, client.crons, client.store):
        part.http = http
    return client


# -- LangSmith (playbook activity) ----------------------------------------------------------------


class LastAnswer:
    """An httpx response hook that keeps what the last answer was (status, content type, first bytes), so a
    generated client's answer that cannot be read (LangSmith's) is named as `check_answer` names one; its
    `sent` (a request hook) keeps the last request, which the deadline's message names."""

    def __init__(self) -> None:
        self.response: httpx.Response | None = None
        self.body = b""
        self.request = "its first request"
        """``METHOD /path`` of the last request sent."""

    def sent(self, request: httpx.Request) -> None:
        self.request = f"{request.method} {request.url.path}"

    def __call__(self, response: httpx.Response) -> None:
        self.response = response
        try:
            self.body = response.read()[:400]
        except httpx.HTTPError:
            self.body = b""

    def bad(self, who: str, problem: str) -> BadAnswer:
        response = self.response
        if response is None:
            return BadAnswer(f"{who} answered with something that cannot be read: {problem}")
        return BadAnswer(_describe(who, response.request.method, response.request.url.path, response, self.body, problem))


LANGSMITH_RUN = obj(
    {},
    {"name": TEXT, "metadata": OBJECT, "tags": list_of(anything), "outputs": anything, "trace_id": ID, "start_time": TEXT},
)
"""A run of LangSmith's run query, as `playbook activity` counts it."""


def check_value(value: Any, shape: Check, what: str) -> str | None:
    """Why ``value`` is not of ``shape`` (None when it is)."""
    try:
        shape(value, what)
    except Wrong as exc:
        return str(exc)
    return None
