"""The state-route middleware (server/payload_middleware.py) in front of a stand-in server.

The stand-in answers the few routes the middleware reads or guards, records what
reaches it, and is driven in-process through httpx's ASGI transport (no sockets).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from server import payload_middleware
from server.payload_middleware import PayloadMiddleware

KNOWN = "thread-1"
REAL_CHECKPOINT = "cp-real"
FOUND = {
    "values": {"messages": []},
    "created_at": "2026-12-01T00:00:00Z",
    "metadata": {"step": 1},
    "checkpoint": {"checkpoint_id": REAL_CHECKPOINT},
}
MISSING = {"values": {}, "created_at": None, "metadata": None, "checkpoint": None}


class StandIn:
    """The server below the middleware: what reached it, and the headers of its thread reads."""

    def __init__(self) -> None:
        self.reached: list[tuple[str, str, Any]] = []
        self.read_headers: list[str | None] = []

    def app(self) -> Starlette:
        async def get_thread(request: Request) -> JSONResponse:
            self.read_headers.append(request.headers.get("authorization"))
            if request.path_params["thread_id"] != KNOWN:
                return JSONResponse({"detail": "Thread not found"}, status_code=404)
            return JSONResponse({"thread_id": KNOWN, "metadata": {"graph_id": "recycling_guide"}})

        async def state_at(request: Request) -> JSONResponse:
            if request.method == "POST":
                checkpoint_id = (await request.json())["checkpoint"]["checkpoint_id"]
            else:
                checkpoint_id = request.path_params["checkpoint_id"]
            return JSONResponse(FOUND if checkpoint_id == REAL_CHECKPOINT else MISSING)

        async def search_assistants(request: Request) -> JSONResponse:
            if request.headers.get("authorization") is None:
                return JSONResponse({"detail": "Missing authentication"}, status_code=401)
            graphs = ("ticket_triage", "recycling_guide")
            return JSONResponse([{"graph_id": g, "metadata": {"created_by": "system"}} for g in graphs])

        async def record(request: Request) -> JSONResponse:
            body = await request.body()
            self.reached.append((request.method, request.url.path, body))
            return JSONResponse({"written": True})

        return Starlette(
            routes=[
                Route("/threads", record, methods=["POST"]),
                Route("/assistants/search", search_assistants, methods=["POST"]),
                Route("/threads/{thread_id}", get_thread, methods=["GET"]),
                Route("/threads/{thread_id}/state", record, methods=["POST"]),
                Route("/threads/{thread_id}/state/checkpoint", state_at, methods=["POST"]),
                Route("/threads/{thread_id}/state/{checkpoint_id}", state_at, methods=["GET"]),
            ]
        )


@pytest.fixture
def server() -> StandIn:
    return StandIn()


@pytest.fixture
async def http(server: StandIn) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=PayloadMiddleware(server.app()))  # type: ignore[arg-type]  # an ASGI app
    async with httpx.AsyncClient(transport=transport, base_url="http://api", headers={"Authorization": "Bearer t-1"}) as client:
        yield client


@pytest.mark.parametrize(
    ("body", "status", "says"),
    [
        pytest.param({"values": {"messages": 5}}, 422, "values.messages must be a list of messages", id="messages-a-number"),
        pytest.param({"values": {"turn": "x"}}, 422, "values.turn", id="wrong-type"),
        pytest.param({"values": None, "as_node": "nope"}, 422, "as_node names node 'nope'", id="unknown-node"),
        pytest.param(
            {"values": {"turn": 1}, "checkpoint_id": "cp-gone"},
            404,
            f"thread {KNOWN} has no checkpoint cp-gone",
            id="unknown-checkpoint",
        ),
        pytest.param(
            {"values": None, "checkpoint": {"checkpoint_id": "cp-gone"}},
            404,
            "has no checkpoint cp-gone",
            id="unknown-checkpoint-in-config",
        ),
    ],
)
async def test_a_refused_state_update_never_reaches_the_server(
    http: httpx.AsyncClient, server: StandIn, body: dict, status: int, says: str
) -> None:
    response = await http.post(f"/threads/{KNOWN}/state", json=body)
    assert (response.status_code, says in response.json()["detail"]) == (status, True), response.text
    assert response.json()["detail"].startswith("update_state refused, the thread was left as it was: ")
    assert server.reached == []


@pytest.mark.parametrize(
    ("thread_id", "body"),
    [
        pytest.param(KNOWN, {"values": {"turn": 2}, "checkpoint_id": REAL_CHECKPOINT}, id="valid-at-a-real-checkpoint"),
        pytest.param(KNOWN, {"values": None, "as_node": "__copy__", "checkpoint": {"checkpoint_id": REAL_CHECKPOINT}}, id="copy"),
        pytest.param("someone-elses", {"values": {"messages": 5}}, id="thread-the-caller-cannot-see"),
    ],
)
async def test_other_state_updates_reach_the_server_unchanged(
    http: httpx.AsyncClient, server: StandIn, thread_id: str, body: dict
) -> None:
    response = await http.post(f"/threads/{thread_id}/state", json=body)
    assert response.status_code == 200, response.text
    assert [(m, p) for m, p, _ in server.reached] == [("POST", f"/threads/{thread_id}/state")]
    assert httpx.Response(200, content=server.reached[0][2]).json() == body


async def test_a_body_that_is_not_json_is_left_to_the_server(http: httpx.AsyncClient, server: StandIn) -> None:
    response = await http.post(f"/threads/{KNOWN}/state", content=b"{not json")
    assert response.status_code == 200
    assert server.reached[0][2] == b"{not json"


async def test_the_thread_is_read_with_the_callers_own_credentials(http: httpx.AsyncClient, server: StandIn) -> None:
    await http.post(f"/threads/{KNOWN}/state", json={"values": {"turn": 1}})
    assert server.read_headers == ["Bearer t-1"]


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        pytest.param("GET", f"/threads/{KNOWN}/state/cp-gone", None, id="get"),
        pytest.param("POST", f"/threads/{KNOWN}/state/checkpoint", {"checkpoint": {"checkpoint_id": "cp-gone"}}, id="post"),
    ],
)
async def test_reading_a_checkpoint_the_thread_does_not_have_is_a_404(
    http: httpx.AsyncClient, method: str, path: str, body: Any
) -> None:
    response = await http.request(method, path, json=body)
    assert response.status_code == 404
    assert "has no checkpoint cp-gone. List its checkpoints with get_history" in response.json()["detail"]


async def test_reading_a_real_checkpoint_answers_as_the_server_does(http: httpx.AsyncClient) -> None:
    response = await http.get(f"/threads/{KNOWN}/state/{REAL_CHECKPOINT}")
    assert (response.status_code, response.json()) == (200, FOUND)


async def test_a_new_thread_with_supersteps_the_graph_cannot_store_is_not_created(
    http: httpx.AsyncClient, server: StandIn
) -> None:
    body = {
        "metadata": {"graph_id": "recycling_guide"},
        "supersteps": [{"updates": [{"values": {"messages": 5}, "as_node": "intake"}]}],
    }
    response = await http.post("/threads", json=body)
    assert response.status_code == 422
    assert response.json()["detail"].startswith("thread not created: supersteps[0].updates[0].values.messages")
    assert server.reached == []
    plain = await http.post("/threads", json={"metadata": {"graph_id": "recycling_guide"}})
    assert plain.status_code == 200
    assert len(server.reached) == 1


SEED = [{"updates": [{"values": {"messages": [{"role": "user", "content": "hi"}]}, "as_node": "__input__"}]}]


@pytest.mark.parametrize(
    ("metadata", "says"),
    [
        pytest.param(None, "no metadata.graph_id", id="no-metadata"),
        pytest.param({"x": 1}, "no metadata.graph_id", id="no-graph_id"),
        pytest.param({"graph_id": "fan_room"}, "metadata.graph_id 'fan_room', no graph of this server", id="not-served"),
        pytest.param({"graph_id": ["x"]}, "metadata.graph_id ['x'], no graph of this server", id="not-a-string"),
    ],
)
async def test_supersteps_without_a_graph_the_server_serves_create_no_thread(
    http: httpx.AsyncClient, server: StandIn, metadata: dict | None, says: str
) -> None:
    """The server created the thread before it looked for the graph (a 201 "was created, but there
    were problems"): refused before it, naming the graphs the server serves (its system assistants)."""
    body: dict[str, Any] = {"supersteps": SEED} | ({"metadata": metadata} if metadata is not None else {})
    response = await http.post("/threads", json=body)
    detail = response.json()["detail"]
    assert (response.status_code, says in detail, "one of: recycling_guide, ticket_triage" in detail) == (422, True, True)
    assert detail.startswith("thread not created: ")
    assert server.reached == []
    served = await http.post("/threads", json={**body, "metadata": {"graph_id": "recycling_guide"}})
    assert served.status_code == 200 and len(server.reached) == 1


async def test_supersteps_onto_a_thread_that_exists_are_refused_and_empty_ones_pass(
    http: httpx.AsyncClient, server: StandIn
) -> None:
    body = {"thread_id": KNOWN, "if_exists": "do_nothing", "metadata": {"graph_id": "recycling_guide"}, "supersteps": SEED}
    refused = await http.post("/threads", json=body)
    assert refused.status_code == 409 and "update_state" in refused.json()["detail"]
    for passed in ({**body, "thread_id": "thread-new"}, {**body, "if_exists": "raise"}, {**body, "supersteps": []}):
        assert (await http.post("/threads", json=passed)).status_code == 200  # the server answers these
    assert len(server.reached) == 3


async def test_supersteps_of_a_caller_who_cannot_read_the_graphs_are_left_to_the_server(server: StandIn) -> None:
    transport = httpx.ASGITransport(app=PayloadMiddleware(server.app()))  # type: ignore[arg-type]  # an ASGI app
    async with httpx.AsyncClient(transport=transport, base_url="http://api") as anonymous:
        response = await anonymous.post("/threads", json={"supersteps": SEED})
    assert response.status_code == 200 and len(server.reached) == 1  # the server's auth answers them


async def test_an_update_naming_no_subgraph_of_the_threads_graph_is_refused_before_the_server(
    http: httpx.AsyncClient, server: StandIn
) -> None:
    """The stand-in's thread is a recycling_guide one, which has no subgraph ``library`` (campus_supervisor's
    does: tests/integration/test_request_limits_server.py shows a real subgraph update reaching the server)."""
    body = {"values": {"remaining_steps": 3}, "checkpoint": {"checkpoint_id": "cp-sub", "checkpoint_ns": "library:1"}}
    response = await http.post(f"/threads/{KNOWN}/state", json=body)
    assert response.status_code == 400
    assert "names no subgraph of recycling_guide" in response.json()["detail"]
    assert server.reached == []


def test_a_checkpoint_namespace_loses_its_task_ids() -> None:
    assert payload_middleware.subgraph_path("library:1|tools:7") == "library|tools"
    assert payload_middleware.subgraph_path("library") == "library"
