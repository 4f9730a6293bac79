"""Custom routes Agent Server serves next to its own API (``http.app`` in langgraph.json).

``POST /visible/{graph_id}/stream`` runs a graph on a thread and answers with an
SSE stream of the text a user should see, nothing else::

    event: token
    data: {"text": "3층 "}

    event: done
    data: {"thread_id": "...", "run_id": "..."}

``GET /playbook/contract`` serves this deployment's contract locks, so that
`playbook gate` can compare reducers against the code that is live
(`migrations_playbook.contract_route`).

Request body of the stream route (JSON): ``message`` (required, the user's text), ``thread_id``
(optional; a new thread is created when absent, and its id comes back in
``done``), ``context`` (optional, the run context, e.g. ``{"model": "offline"}``).
Bad input is a 4xx JSON error (``{"error": ..., "message": ...}``) before any
run starts; a run that fails midway ends the stream with ``event: error``.

The route runs the graph through `langgraph-sdk`'s ``get_client()`` with no URL,
which inside Agent Server talks to the server itself (in-process ASGI), and
filters the stream with `graphs.common.visible`. That client bypasses the
server's auth, so the route authenticates the caller itself (the same
``AUTH_TOKENS`` rules: 401 without a valid token in token mode), refuses another
user's thread with 404, applies the same run checks as the API
(`server.auth.admit_run`), and stamps the caller as the owner of a new thread.
It checks the context against the graph's ``context_schema`` first (422), so a run
the graph would fail at its start (an unknown fan_room team) leaves no thread behind.

The app's middleware, outermost first: `server.body_depth` (a body nesting JSON deeper than
`MAX_JSON_DEPTH` is a 422 on every route, this one and the in-process client's requests
included, before anything parses it), `server.outage` (the checkpoint store unreachable: a
503 on every route), `server.route_access` (token mode: the routes the
server's auth does not cover, an operator's copy, runs-list paging),
`server.request_limits` (requests the runtime cannot handle: out-of-range
integers, missing keys, a ``values`` thread filter, ``/ui`` without a bundle: a 4xx),
`server.payload_middleware` (state updates and checkpoint reads) and
`server.webhooks` (run webhooks: off unless configured, never to an internal
address).

Importing this module inside the server also makes the server refuse to start on a
stored file it cannot read (`server.persistence.refuse_to_start_on_unreadable_data`):
the server imports its custom app before its runtime loads the stored records, and
nothing of ours runs earlier.
"""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.errors import APIStatusError
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from graphs.common.visible import RunStreamError, VisibleTextFilter, avisible_text, open_run_stream
from migrations_playbook.contract_route import routes as contract_routes
from server import access, persistence, serving
from server.auth import admit_run, run_admission
from server.body_depth import BodyDepthMiddleware
from server.guarding import GRAPHS, deployment_guard
from server.outage import OutageMiddleware
from server.payload_middleware import PayloadMiddleware
from server.request_limits import RequestLimitsMiddleware
from server.route_access import RouteAccessMiddleware
from server.serving import RunRefused
from server.webhooks import WebhookMiddleware

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


class BadRequest(Exception):
    """A request the route refuses before starting a run."""

    def __init__(self, status: int, error: str, message: str) -> None:
        super().__init__(message)
        self.status, self.error, self.message = status, error, message

    def response(self) -> JSONResponse:
        return JSONResponse({"error": self.error, "message": self.message}, status_code=self.status)


def sse(event: str, data: dict[str, Any]) -> str:
    """One server-sent event."""
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


async def _body(request: Request) -> dict[str, Any]:
    try:
        body = await request.json()
    except ValueError as exc:
        raise BadRequest(400, "invalid_json", f"the request body is not JSON: {exc}") from exc
    if not isinstance(body, dict):
        raise BadRequest(422, "invalid_body", "the request body must be a JSON object")
    message = body.get("message")
    if not isinstance(message, str) or not message.strip():
        raise BadRequest(422, "missing_message", "'message' must be a non-empty string")
    if body.get("thread_id") is not None and not isinstance(body["thread_id"], str):
        raise BadRequest(422, "invalid_thread_id", "'thread_id' must be a string")
    if body.get("context") is not None and not isinstance(body["context"], dict):
        raise BadRequest(422, "invalid_context", "'context' must be a JSON object")
    return body


async def _check_graph(client: LangGraphClient, graph_id: str) -> None:
    try:
        found = await client.assistants.search(graph_id=graph_id, limit=1)
    except APIStatusError as exc:
        if exc.status_code != 404:
            raise
        found = []
    if not found:
        raise BadRequest(404, "unknown_graph", f"this server has no graph {graph_id!r}")


def _check_context(graph_id: str, context: dict[str, Any] | None) -> None:
    """The run context must be one the graph's ``context_schema`` accepts (fan_room's
    team, for one), before the route creates a thread for the run: otherwise a refused
    context would leave a new thread behind, in status ``error``."""
    path = GRAPHS.get(graph_id)
    schema: type | None = getattr(serving.load(path), "context_schema", None) if path else None
    if schema is None or not dataclasses.is_dataclass(schema):
        return
    known = {f.name for f in dataclasses.fields(schema) if f.init}
    try:
        schema(**{k: v for k, v in (context or {}).items() if k in known})
    except (TypeError, ValueError) as exc:
        raise BadRequest(422, "invalid_context", str(exc)) from exc


async def _check_thread(client: LangGraphClient, thread_id: str) -> None:
    try:
        await client.threads.get(thread_id)
    except APIStatusError as exc:
        if exc.status_code not in (404, 422):
            raise
        raise BadRequest(404, "unknown_thread", f"no thread {thread_id!r}") from exc


def _caller(request: Request) -> tuple[str, bool]:
    """Who calls, and whether their ownership must be checked (token mode).

    The route starts runs with the in-process client, which bypasses the server's
    auth, so it authenticates the caller itself, exactly as `server.auth` does.
    """
    config = access.access_config()
    try:
        user = access.authenticate(request.headers.get("authorization"), config)
    except access.Unauthenticated as exc:
        raise BadRequest(401, "unauthenticated", str(exc)) from exc
    return access.owner_identity(user["identity"], studio=False, config=config), not config.dev_mode


async def _admit(
    client: LangGraphClient, owner: str, check_owner: bool, graph_id: str, thread_id: str | None, run_input: Any
) -> dict[str, Any]:
    """The same ownership and run checks as the API's own run creation; the run's metadata."""
    try:
        return await admit_run(
            client,
            owner=owner,
            check_owner=check_owner,
            graph_id=graph_id,
            thread_id=thread_id,
            input=run_input,
            guard=deployment_guard(),
        )
    except RunRefused as exc:
        raise BadRequest(exc.status, "run_refused", exc.message) from exc


async def _first_part(parts: AsyncIterator[Any]) -> Any:
    """Start the run; a refusal by the server (busy thread, bad context) becomes a 4xx."""
    try:
        return await anext(parts)
    except APIStatusError as exc:
        status = exc.status_code if 400 <= exc.status_code < 500 else 502
        raise BadRequest(status, "run_refused", exc.message) from exc


async def _then(first: Any, rest: AsyncIterator[Any]) -> AsyncIterator[Any]:
    yield first
    async for part in rest:
        yield part


def create_app(client_factory: Callable[[], LangGraphClient] = get_client) -> Starlette:
    """The custom-route app; ``client_factory`` is called once per request."""

    async def visible_stream(request: Request) -> Response:
        graph_id = request.path_params["graph_id"]
        client: LangGraphClient | None = None
        try:
            body = await _body(request)
            owner, check_owner = _caller(request)
            client = client_factory()
            await _check_graph(client, graph_id)
            _check_context(graph_id, body.get("context"))
            thread_id = body.get("thread_id")
            if thread_id is not None:
                await _check_thread(client, thread_id)
            run_input = {"messages": [{"role": "user", "content": body["message"]}]}
            async with run_admission(thread_id):  # until the run is inserted: two requests cannot both pass
                metadata = await _admit(client, owner, check_owner, graph_id, thread_id, run_input)
                if thread_id is None:  # created with the run, so a refused run leaves no empty thread behind
                    thread_id = str(uuid.uuid4())
                parts = open_run_stream(
                    client,
                    thread_id,
                    graph_id,
                    input=run_input,
                    context=body.get("context"),
                    metadata=metadata,
                    if_not_exists="create",
                    multitask_strategy=serving.policy_for(graph_id).multitask_strategy,
                )
                first = await _first_part(parts)
        except BadRequest as exc:
            if client is not None:
                await client.aclose()
            return exc.response()

        async def events(client: LangGraphClient) -> AsyncIterator[str]:
            text_filter = VisibleTextFilter()
            try:
                async for token in avisible_text(_then(first, parts), text_filter):
                    yield sse("token", {"text": token})
            except RunStreamError as exc:
                yield sse("error", {"thread_id": thread_id, "run_id": text_filter.run_id, "message": str(exc)})
                return
            finally:
                await client.aclose()
            yield sse("done", {"thread_id": thread_id, "run_id": text_filter.run_id})

        return StreamingResponse(events(client), media_type="text/event-stream", headers=SSE_HEADERS)

    return Starlette(
        routes=[Route("/visible/{graph_id}/stream", visible_stream, methods=["POST"]), *contract_routes],
        middleware=[
            Middleware(BodyDepthMiddleware),  # first: every body's nesting is bounded before anything parses it
            Middleware(OutageMiddleware),  # the checkpoint store unreachable: a 503 from everything below
            Middleware(RouteAccessMiddleware, client_factory=client_factory),  # token mode: routes the server leaves open
            Middleware(RequestLimitsMiddleware),  # integers, required keys, filters, /ui: a 4xx, not the runtime's 500
            Middleware(PayloadMiddleware),  # update_state bodies, checkpoint reads
            Middleware(WebhookMiddleware),  # run webhooks, before any run, thread or cron is made
        ],
    )


persistence.refuse_to_start_on_unreadable_data()  # a no-op outside the server

app = create_app()
"""Registered in langgraph.json as ``"http": {"app": "server.webapp:app"}``."""
