"""Requests the runtime cannot handle get a 4xx that names the problem, and change nothing.

Each case here was a 5xx on a real `langgraph dev` (found by `tests/integration/api_fuzz.py`):
out-of-range integers (history ``limit`` past 64 bits, a store ``limit`` of 10**30, a run's
``after_seconds`` that also left its thread busy with no run), a store search without
``namespace_prefix``, a ``values`` thread filter, ``/ui/...`` without a UI bundle (no token
needed), an update_state naming no subgraph; and (issue 37) a body nesting JSON thousands of
levels deep on any route, a checkpoint id that is not a string on a run. The refusals come from
`server/body_depth.py`, `server/request_limits.py` and `server/payload_middleware.py`, on a
token-mode server (the ``/ui`` case is the one a caller without a token could reach).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from migrations_playbook.staging.server import DevServer
from server.body_depth import MAX_JSON_DEPTH
from tests.integration.token_mode import TOKENS, token_server

ALICE = {"Authorization": f"Bearer {TOKENS['alice']}"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    with token_server(tmp_path_factory.mktemp("request-limits")) as started:
        yield started


@pytest.fixture(scope="module")
def http(server: DevServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, headers=ALICE, timeout=60) as client:
        yield client


def _thread_with_run(http: httpx.Client, graph: str, text: str) -> str:
    thread_id: str = http.post("/threads", json={}).json()["thread_id"]
    done = http.post(
        f"/threads/{thread_id}/runs/wait",
        json={"assistant_id": graph, "input": {"messages": [{"role": "user", "content": text}]}},
    )
    assert done.status_code == 200, done.text
    return thread_id


@pytest.fixture(scope="module")
def thread_id(http: httpx.Client) -> str:
    """Alice's recycling_guide thread with one run (a graph without subgraphs)."""
    return _thread_with_run(http, "recycling_guide", "캔은 어떻게 버려?")


def _everything(http: httpx.Client) -> dict[str, Any]:
    """Alice's threads, their histories and her store, to compare before and after a refusal."""
    threads = http.post("/threads/search", json={"limit": 1000}).json()
    return {
        "threads": threads,
        "histories": {
            t["thread_id"]: http.post(f"/threads/{t['thread_id']}/history", json={"limit": 1000}).json() for t in threads
        },
        "store": http.post("/store/items/search", json={"namespace_prefix": [], "limit": 1000}).json(),
    }


def _refused(response: httpx.Response, status: int, *words: str) -> None:
    assert response.status_code == status, (response.status_code, response.text)
    detail = response.json()["detail"]
    for word in words:
        assert word in detail, detail


@pytest.mark.parametrize(
    ("method", "path", "params", "body", "field"),
    [
        pytest.param("GET", "/threads/{thread}/history", {"limit": str(2**63)}, None, "limit", id="history-limit-2**63"),
        pytest.param("POST", "/threads/{thread}/history", None, {"limit": 2**63}, "limit", id="history-body-limit-2**63"),
        pytest.param("POST", "/store/namespaces", None, {"limit": 10**30}, "limit", id="namespaces-limit-10**30"),
        pytest.param("POST", "/store/namespaces", None, {"max_depth": 2**64}, "max_depth", id="namespaces-max_depth"),
        pytest.param("POST", "/threads/search", None, {"offset": 2**64}, "offset", id="threads-offset-2**64"),
        pytest.param("POST", "/assistants/search", None, {"limit": 1.5}, "limit", id="assistants-limit-fraction"),
        pytest.param(
            "PUT", "/store/items", None, {"namespace": ["n"], "key": "k", "value": {}, "ttl": 1e30}, "ttl", id="store-ttl"
        ),
    ],
)
def test_an_integer_out_of_range_is_a_422_naming_it(
    http: httpx.Client, thread_id: str, method: str, path: str, params: Any, body: Any, field: str
) -> None:
    before = _everything(http)
    response = http.request(method, path.format(thread=thread_id), params=params, json=body)
    _refused(response, 422, repr(field), "from 0 to")
    assert _everything(http) == before


def test_the_largest_integer_sqlite_holds_is_still_served(http: httpx.Client, thread_id: str) -> None:
    history = http.get(f"/threads/{thread_id}/history", params={"limit": str(2**63 - 1)})
    assert history.status_code == 200, history.text
    assert history.json()


def test_a_run_delayed_past_what_the_runtime_holds_is_refused_and_leaves_the_thread_idle(http: httpx.Client) -> None:
    """It was a 500 after the runtime had marked the thread busy: busy for good, with no run."""
    thread_id = http.post("/threads", json={}).json()["thread_id"]
    response = http.post(f"/threads/{thread_id}/runs", json={"assistant_id": "recycling_guide", "after_seconds": 10**30})
    _refused(response, 422, "'after_seconds'", "from 0 to 31536000")
    assert http.get(f"/threads/{thread_id}").json()["status"] == "idle"
    assert http.get(f"/threads/{thread_id}/runs").json() == []
    stateless = http.post("/runs", json={"assistant_id": "recycling_guide", "after_seconds": -1})
    _refused(stateless, 422, "'after_seconds'")
    assert http.post("/threads/search", json={"status": "busy"}).json() == []


def test_a_store_search_without_namespace_prefix_is_a_422(http: httpx.Client) -> None:
    _refused(http.post("/store/items/search", json={}), 422, "'namespace_prefix' is required")
    _refused(http.post("/store/items/search", json={"namespace_prefix": None}), 422, "'namespace_prefix'")
    assert http.post("/store/items/search", json={"namespace_prefix": []}).status_code == 200


@pytest.mark.parametrize("route", ["/threads/count", "/threads/search"])
@pytest.mark.parametrize("values", [{"messages": None}, {"topic": "cans"}], ids=["null", "string"])
def test_a_values_filter_is_a_422_naming_what_to_filter_by(
    http: httpx.Client, thread_id: str, route: str, values: dict[str, Any]
) -> None:
    """The runtime compared the filter with every thread's values and failed on a thread with none."""
    http.post("/threads", json={})  # a thread with no values yet
    before = _everything(http)
    _refused(http.post(route, json={"values": values}), 422, "'values'", "'metadata'")
    assert _everything(http) == before
    assert http.post(route, json={"values": {}, "metadata": {"x": None}}).status_code == 200


@pytest.mark.parametrize("method", ["GET", "HEAD", "PUT", "PATCH", "DELETE", "OPTIONS"])
@pytest.mark.parametrize("path", ["/ui/x", "/ui/recycling_guide/entry.js", "/ui"])
@pytest.mark.parametrize("headers", [{}, ALICE], ids=["no-token", "token"])
def test_ui_without_a_bundle_is_a_404(server: DevServer, method: str, path: str, headers: dict[str, str]) -> None:
    response = httpx.request(method, f"{server.url}{path}", headers=headers, timeout=30)
    assert response.status_code == 404, (response.status_code, response.text)
    if method != "HEAD":
        assert "no UI components" in response.json()["detail"]


def test_an_update_state_naming_no_subgraph_is_refused_and_changes_nothing(http: httpx.Client, thread_id: str) -> None:
    before = _everything(http)
    for body in (
        {"values": {"zzz": [1, None]}, "checkpoint": {"checkpoint_ns": "nope:1"}},
        {"values": None, "as_node": "x", "checkpoint": {"checkpoint_ns": "nope"}},
        {"values": [{"a": 1}], "checkpoint": {"checkpoint_ns": "a|b"}},
    ):
        _refused(http.post(f"/threads/{thread_id}/state", json=body), 400, "names no subgraph of recycling_guide")
    assert _everything(http) == before


def test_an_update_state_naming_a_subgraph_reaches_the_server(http: httpx.Client) -> None:
    """A namespace the graph has is not refused here: the server resolves the subgraph."""
    thread_id = _thread_with_run(http, "campus_supervisor", "도서관 몇 시에 닫아?")
    response = http.post(f"/threads/{thread_id}/state", json={"values": {}, "checkpoint": {"checkpoint_ns": "library"}})
    assert response.status_code < 500, response.text
    assert "names no subgraph" not in response.text


def test_history_before_a_checkpoint_pages_back_and_one_without_an_id_is_a_422(http: httpx.Client, thread_id: str) -> None:
    """``before`` as the API and langgraph-sdk send it (a checkpoint) was a 500 on every request."""
    history = http.post(f"/threads/{thread_id}/history", json={"limit": 100}).json()
    assert len(history) >= 3
    newest, second = history[0]["checkpoint"], history[1]["checkpoint"]
    older = http.post(f"/threads/{thread_id}/history", json={"limit": 100, "before": newest})
    assert older.status_code == 200, older.text
    assert [c["checkpoint"]["checkpoint_id"] for c in older.json()] == [c["checkpoint"]["checkpoint_id"] for c in history[1:]]
    one = http.post(f"/threads/{thread_id}/history", json={"limit": 1, "before": {"checkpoint_id": second["checkpoint_id"]}})
    assert [c["checkpoint"]["checkpoint_id"] for c in one.json()] == [history[2]["checkpoint"]["checkpoint_id"]]
    before = _everything(http)
    for bad in ({}, {"checkpoint_ns": ""}, {"checkpoint_id": ""}):
        _refused(http.post(f"/threads/{thread_id}/history", json={"before": bad}), 422, "'before' must name a checkpoint")
    assert _everything(http) == before


def test_a_store_namespace_with_a_nul_byte_is_a_422(http: httpx.Client) -> None:
    """The store refuses the label; the namespace check before a read then failed with a 500."""
    before = _everything(http)
    _refused(http.get("/store/items", params={"namespace": "a\x00b", "key": "k"}), 422, "NUL")
    _refused(http.request("DELETE", "/store/items", json={"namespace": ["a\x00b"], "key": "k"}), 422, "NUL")
    _refused(http.put("/store/items", json={"namespace": ["a\x00b"], "key": "k", "value": {}}), 422, "NUL")
    _refused(http.post("/store/items/search", json={"namespace_prefix": ["a\x00"]}), 422, "NUL")
    _refused(http.post("/store/namespaces", json={"prefix": ["\x00"]}), 422, "NUL")
    assert _everything(http) == before


# -- issue 37: deep bodies, checkpoint ids of the wrong type ------------------------------------

MESSAGE = {"messages": [{"role": "user", "content": "캔은 어떻게 버려?"}]}
DEEP = "__deep__"
"""Where `_spliced` puts the deep value (Python's encoder stops near 1,000 levels: it is spliced in as text)."""


def _spliced(body: Any, depth: int) -> bytes:
    """``body`` as JSON, with `DEEP` replaced by arrays nested ``depth`` levels deep."""
    return json.dumps(body, ensure_ascii=False).replace(json.dumps(DEEP), "[" * depth + "]" * depth).encode()


BODIES: dict[str, Any] = {
    "thread-metadata": {"metadata": {"x": DEEP}},
    "run-input": {"assistant_id": "recycling_guide", "input": {"messages": DEEP}},
    "run-metadata": {"assistant_id": "recycling_guide", "input": MESSAGE, "metadata": {"x": DEEP}},
    "state-values": {"values": {"messages": [{"role": "ai", "content": "x", "additional_kwargs": {"x": DEEP}}]}},
    "store-value": {"namespace": ["deep"], "key": "k", "value": {"x": DEEP}},
    "visible-context": {"message": "캔은?", "context": {"x": DEEP}},
    "assistant-config": {"graph_id": "recycling_guide", "config": {"configurable": {"x": DEEP}}},
}
"""A value nested deep, in each place the issue names."""

DEEP_ROUTES = [
    ("POST", "/threads", "thread-metadata", 5000),
    ("PATCH", "/threads/{thread}", "thread-metadata", 5000),
    ("POST", "/threads/{thread}/runs", "run-input", 5000),
    ("POST", "/threads/{thread}/runs/wait", "run-input", 5000),
    ("POST", "/threads/{thread}/runs/stream", "run-input", 5000),
    ("POST", "/runs/wait", "run-input", 5000),
    ("POST", "/runs/stream", "run-input", 5000),
    ("POST", "/threads/{thread}/runs/wait", "run-metadata", 1000),
    ("POST", "/threads/{thread}/state", "state-values", 5000),
    ("PUT", "/store/items", "store-value", 5000),
    ("POST", "/assistants", "assistant-config", 5000),
    ("POST", "/visible/recycling_guide/stream", "visible-context", 400),
    ("PATCH", "/threads/{thread}", "thread-metadata", 250),  # stored, then every read of the user's threads failed
]


@pytest.mark.parametrize(
    ("method", "path", "place", "depth"), [pytest.param(*r, id=f"{r[0]} {r[1]} {r[2]} {r[3]}") for r in DEEP_ROUTES]
)
def test_a_body_nested_past_the_limit_is_a_422_naming_it_and_changes_nothing(
    http: httpx.Client, thread_id: str, method: str, path: str, place: str, depth: int
) -> None:
    """Each was a 500 (a RecursionError where the body was parsed; the in-process client's encoder
    for ``/visible``), or was stored and then failed every read that wrapped it (250 levels)."""
    before = _everything(http)
    response = http.request(
        method,
        path.format(thread=thread_id),
        content=_spliced(BODIES[place], depth),
        headers={"Content-Type": "application/json"},
    )
    _refused(response, 422, f"at most {MAX_JSON_DEPTH} levels", "MAX_JSON_DEPTH", "nothing was read or changed")
    if path.startswith("/visible/"):
        assert response.json()["error"] == "too_deep"  # the route's own error shape too
    assert _everything(http) == before


def test_a_body_just_within_the_limit_is_served(http: httpx.Client) -> None:
    """A run whose body nests exactly `MAX_JSON_DEPTH` levels runs, and the thread reads back; one level more is refused."""
    thread = http.post("/threads", json={}).json()["thread_id"]

    def run_nesting(total: int) -> httpx.Response:
        # body{input{messages[{additional_kwargs{...}}]}}: 5 levels before the nested value
        message = {"role": "user", "content": "캔은?", "additional_kwargs": {"x": DEEP}}
        body = _spliced({"assistant_id": "recycling_guide", "input": {"messages": [message]}}, total - 5)
        return http.post(f"/threads/{thread}/runs/wait", content=body, headers={"Content-Type": "application/json"})

    served = run_nesting(MAX_JSON_DEPTH)
    assert served.status_code == 200, served.text[:300]
    _refused(run_nesting(MAX_JSON_DEPTH + 1), 422, f"nests JSON {MAX_JSON_DEPTH + 1} levels deep")
    assert http.post("/threads/search", json={"limit": 1000}).status_code == 200
    assert http.post(f"/threads/{thread}/history", json={"limit": 100}).status_code == 200


BAD_CHECKPOINT_IDS = [5, ["x"], {"a": 1}, True]
RUN_ROUTES = ["/threads/{thread}/runs", "/threads/{thread}/runs/wait", "/threads/{thread}/runs/stream", "/runs/wait", "/runs"]


@pytest.mark.parametrize("route", RUN_ROUTES)
@pytest.mark.parametrize(
    ("place", "field"),
    [
        pytest.param(lambda v: {"checkpoint_id": v}, "'checkpoint_id'", id="checkpoint_id"),
        pytest.param(lambda v: {"checkpoint": {"checkpoint_id": v}}, "'checkpoint.checkpoint_id'", id="checkpoint"),
        pytest.param(
            lambda v: {"config": {"configurable": {"checkpoint_id": v}}}, "'config.configurable.checkpoint_id'", id="config"
        ),
    ],
)
def test_a_checkpoint_id_that_is_not_a_string_is_a_422_naming_the_field(
    http: httpx.Client, thread_id: str, route: str, place: Any, field: str
) -> None:
    """``checkpoint_id: 5`` (or ``["x"]``) on a run was a 500 (the runtime reads it as a UUID string)."""
    before = _everything(http)
    for value in BAD_CHECKPOINT_IDS:
        body = {"assistant_id": "recycling_guide", "input": MESSAGE, **place(value)}
        _refused(http.post(route.format(thread=thread_id), json=body), 422, field, "must be a string or null")
    _refused(http.post("/runs/batch", json=[{"assistant_id": "recycling_guide", **place(5)}]), 422, field)
    assert _everything(http) == before


@pytest.mark.parametrize("checkpoint", [5, ["x"], {"checkpoint_map": 5}], ids=["int", "list", "map-int"])
def test_a_stateless_run_checks_its_checkpoint_as_the_thread_routes_do(http: httpx.Client, checkpoint: Any) -> None:
    """The stateless routes do not apply the API's ``Checkpoint`` schema: ``checkpoint: 5`` was a 500,
    ``{"checkpoint_map": 5}`` a run that failed on it."""
    before = _everything(http)
    body = {"assistant_id": "recycling_guide", "input": MESSAGE, "checkpoint": checkpoint}
    _refused(http.post("/runs/wait", json=body), 422, "'checkpoint", "or null")
    assert _everything(http) == before
