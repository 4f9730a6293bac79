"""Issue 12, defects 3 and 4: what no request may write into a thread, on a real `langgraph dev`.

Before the fix, ``command.update = {"messages": 5}``, a tool message without
``tool_call_id``, a ``[5]`` content list or ``update_state`` with
``{"messages": 5}`` broke the thread for good (every later ``get_state`` a 500),
and limits docs/runs-and-bad-input.md lists were not applied. Each case sends the request raw
(``httpx``, so the server's ``detail`` is read whatever the SDK does with it),
checks the 4xx and its message, and that the thread record, state, history and
runs are exactly as before (`tests/integration/refusal.py`). The threads are made
once per module: a refused request changes nothing, so they serve every case.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from migrations_playbook.staging.server import DevServer
from tests.integration.refusal import thread_snapshot

REFUND = "Please refund the double charge on my invoice, it is urgent"
APPROVE = {"kind": "plan_approval", "answer": "approve"}
UNKNOWN_CHECKPOINT = "1f0c0000-0000-6000-8000-000000000000"
GRAPH_OF = {"chat": "recycling_guide", "campus": "campus_supervisor", "room": "fan_room", "ticket": "ticket_triage"}


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


@pytest.fixture(scope="module")
def threads(dev_server: DevServer) -> dict[str, str]:
    """One thread per graph with history (the ticket answered), made once."""

    async def make() -> dict[str, str]:
        client = get_client(url=dev_server.url)
        made = {name: (await client.threads.create(graph_id=graph))["thread_id"] for name, graph in GRAPH_OF.items()}
        await client.runs.wait(made["chat"], "recycling_guide", input={"messages": [_user("페트병 어떻게 버려?")]})
        await client.threads.update_state(  # seeded: the campus thread needs history, not a turn
            made["campus"],
            {"messages": [_user("학식 메뉴 뭐야?"), {"role": "assistant", "content": "오늘은 비빔밥"}]},
            as_node="end_turn",
        )
        await client.runs.wait(made["room"], "fan_room", input={"messages": [_user("LG 어때?")]}, context={"team_name": "LG"})
        await client.runs.wait(made["ticket"], "ticket_triage", input={"messages": [_user(REFUND)]})
        await client.runs.wait(made["ticket"], "ticket_triage", command={"resume": APPROVE})
        await client.aclose()
        return made

    return asyncio.run(make())


@pytest.fixture
async def http(dev_server: DevServer) -> AsyncIterator[httpx.AsyncClient]:
    """Raw requests: the server's status and ``detail`` as sent."""
    async with httpx.AsyncClient(base_url=dev_server.url, timeout=120) as raw:
        yield raw


async def _refused_and_unchanged(
    client: LangGraphClient, http: httpx.AsyncClient, thread_id: str, method: str, path: str, body: Any = None
) -> tuple[int, str]:
    """Send the request; return its (status, detail) after checking it changed nothing on the thread."""
    before = await thread_snapshot(client, thread_id)
    response = await http.request(method, path.format(thread_id=thread_id), json=body)
    assert 400 <= response.status_code < 500, response.text[:300]
    after = await thread_snapshot(client, thread_id)
    assert after == before
    return response.status_code, str(response.json().get("detail"))


def _run(thread: str, **body: Any) -> tuple[str, str, dict[str, Any]]:
    context = {"context": {"team_name": "LG"}} if thread == "room" else {}
    return "POST", "/threads/{thread_id}/runs/wait", {"assistant_id": GRAPH_OF[thread], **context, **body}


def _update_state(values: Any, **more: Any) -> tuple[str, str, dict[str, Any]]:
    return "POST", "/threads/{thread_id}/state", {"values": values, **more}


BIG = "x" * 1_000_000
IMAGE = {"type": "image_url", "image_url": {"url": "data:image/png;base64," + "A" * 1_000_000}}

CASES = [
    # defect 3: one request broke a thread for good
    *[
        pytest.param(
            thread,
            *_run(thread, command={"update": {"messages": 5}}),
            422,
            "command.update.messages must be a list of messages, got int",
            id=f"d3-command-update-messages-5-{thread}",
        )
        for thread in ("chat", "ticket")
    ],
    *[
        pytest.param(
            thread,
            *_run(thread, input={"messages": [{"role": "tool", "content": "x"}]}),
            422,
            "input.messages[0] is a tool message: it needs 'tool_call_id'",
            id=f"d3-tool-without-call-id-{thread}",
        )
        for thread in ("chat", "ticket")
    ],
    *[
        pytest.param(
            thread,
            *_run(thread, input={"messages": [{"role": "user", "content": [5]}]}),
            422,
            "input.messages[0].content[0] is not text ('int')",
            id=f"d3-number-content-block-{thread}",
        )
        for thread in ("chat", "ticket")
    ],
    *[
        pytest.param(
            thread,
            *_update_state({"messages": 5}),
            422,
            "update_state refused, the thread was left as it was: values.messages must be a list of messages",
            id=f"d3-update-state-messages-5-{thread}",
        )
        for thread in GRAPH_OF
    ],
    pytest.param(
        "chat",
        *_update_state({"messages": [{"role": "tool", "content": "x"}]}),
        422,
        "values.messages[0] is a tool message",
        id="d3-update-state-tool-without-call-id",
    ),
    pytest.param(
        "chat",
        *_update_state({"turn": "three"}),
        422,
        "values.turn: Input should be a valid integer",
        id="d3-update-state-wrong-type",
    ),
    pytest.param(
        "chat",
        *_update_state({"bogus": 1}),
        422,
        "values has unknown field(s) bogus; the recycling_guide state has:",
        id="d3-update-state-unknown-field",
    ),
    pytest.param(
        "chat",
        *_update_state(None, as_node="nope"),
        422,
        "as_node names node 'nope', which recycling_guide does not have",
        id="d3-update-state-unknown-node",
    ),
    # defect 4: limits docs/runs-and-bad-input.md lists
    pytest.param(
        "chat",
        *_run("chat", command={"update": {"messages": [_user(BIG)]}}),
        413,
        "command.update.messages[0] has 1000000 characters; the limit is 8000",
        id="d4-huge-message-command-update",
    ),
    pytest.param(
        "ticket",
        *_update_state({"messages": [_user(BIG)]}),
        413,
        "values.messages[0] has 1000000 characters; the limit is 8000",
        id="d4-huge-message-update-state",
    ),
    pytest.param(
        "chat",
        *_run("chat", input={"messages": [{"role": "user", "content": [IMAGE]}]}),
        422,
        "input.messages[0].content[0] is not text ('image_url'); this deployment serves text only",
        id="d4-image-block-input",
    ),
    pytest.param(
        "campus",
        *_update_state({"messages": [{"role": "user", "content": [IMAGE]}]}),
        422,
        "values.messages[0].content[0] is not text ('image_url')",
        id="d4-image-block-update-state",
    ),
    *[
        pytest.param(
            thread,
            *_run(thread, command={"resume": "yes"}),
            409,
            "thread is not waiting for an answer: there is nothing to resume",
            id=f"d4-resume-idle-{thread}",
        )
        for thread in ("chat", "campus", "room")
    ],
    *[
        pytest.param(
            thread,
            *_run(thread, command={"goto": "nope"}),
            422,
            f"command.goto names node 'nope', which {GRAPH_OF[thread]} does not have; its nodes are:",
            id=f"d4-goto-unknown-node-{thread}",
        )
        for thread in ("chat", "ticket")
    ],
    pytest.param(
        "ticket",
        *_update_state({"response": "replaced"}, checkpoint_id=UNKNOWN_CHECKPOINT),
        404,
        f"has no checkpoint {UNKNOWN_CHECKPOINT}. List its checkpoints with get_history",
        id="d4-update-state-unknown-checkpoint",
    ),
    pytest.param(
        "chat",
        "GET",
        f"/threads/{{thread_id}}/state/{UNKNOWN_CHECKPOINT}",
        None,
        404,
        f"has no checkpoint {UNKNOWN_CHECKPOINT}",
        id="d4-state-at-unknown-checkpoint",
    ),
    pytest.param(
        "chat",
        *_run("chat", input={"messages": [_user("y" * 8000)] * 120}),
        413,
        "this request carries 120 messages; one request may write at most 100 (MAX_REQUEST_MESSAGES)",
        id="d4-120-messages-in-one-run",
    ),
    pytest.param(
        "chat",
        *_run("chat", input={"messages": [_user("y" * 8000)] * 5}),
        413,
        "this request carries 40000 characters of message text; one request may write at most 32000",
        id="d4-request-text-bound",
    ),
    pytest.param(
        "room",
        *_update_state({"messages": [_user("y" * 8000)] * 120}),
        413,
        "this request carries 120 messages",
        id="d4-120-messages-in-one-update-state",
    ),
]


@pytest.mark.parametrize(("thread", "method", "path", "body", "status", "message"), CASES)
async def test_a_write_the_thread_cannot_take_is_refused_and_changes_nothing(
    client: LangGraphClient,
    http: httpx.AsyncClient,
    threads: dict[str, str],
    thread: str,
    method: str,
    path: str,
    body: Any,
    status: int,
    message: str,
) -> None:
    got = await _refused_and_unchanged(client, http, threads[thread], method, path, body)
    assert (got[0], message in got[1]) == (status, True), got


async def test_after_a_refused_update_the_thread_still_takes_turns(client: LangGraphClient, http: httpx.AsyncClient) -> None:
    """Defect 3: the refusal is all that happens; the next turn runs, and a valid removal lands."""
    thread_id = (await client.threads.create())["thread_id"]
    await client.runs.wait(thread_id, "recycling_guide", input={"messages": [_user("페트병 어떻게 버려?")]})
    method, path, body = _run("chat", command={"update": {"messages": 5}})
    assert (await _refused_and_unchanged(client, http, thread_id, method, path, body))[0] == 422
    await client.runs.wait(thread_id, "recycling_guide", input={"messages": [_user("유리병은?")]})
    messages = (await client.threads.get_state(thread_id))["values"]["messages"]
    assert [m["type"] for m in messages] == ["human", "ai", "human", "ai"]
    removal = {"type": "remove", "id": messages[-1]["id"], "content": ""}
    await client.threads.update_state(thread_id, {"messages": [removal]})
    assert len((await client.threads.get_state(thread_id))["values"]["messages"]) == 3


async def test_valid_writes_through_the_same_doors_still_land(client: LangGraphClient, http: httpx.AsyncClient) -> None:
    """The checks refuse only what the graph cannot store: a typed update, a read of a real
    checkpoint and a copy of it (what `playbook migrate --rollback` sends) all work."""
    thread_id = (await client.threads.create(graph_id="ticket_triage"))["thread_id"]
    seeded = await client.threads.update_state(thread_id, {"messages": [_user(REFUND)]}, as_node="intake")
    first = seeded["checkpoint"]["checkpoint_id"]
    written = await http.post(f"/threads/{thread_id}/state", json={"values": {"sla_hours": 4}, "as_node": "policy_check"})
    assert written.status_code == 200, written.text
    assert (await client.threads.get_state(thread_id))["values"]["sla_hours"] == 4
    at_first = await http.get(f"/threads/{thread_id}/state/{first}")
    assert (at_first.status_code, "sla_hours" in at_first.json()["values"]) == (200, False), at_first.text[:300]
    copied = await http.post(
        f"/threads/{thread_id}/state", json={"values": None, "as_node": "__copy__", "checkpoint": {"checkpoint_id": first}}
    )
    assert copied.status_code == 200, copied.text
    assert "sla_hours" not in (await client.threads.get_state(thread_id))["values"]


@pytest.mark.parametrize(
    ("values", "status", "message"),
    [
        pytest.param(
            {"messages": 5}, 422, "supersteps[0].updates[0].values.messages must be a list of messages", id="messages-5"
        ),
        pytest.param(
            {"messages": [_user(BIG)]},
            413,
            "supersteps[0].updates[0].values.messages[0] has 1000000 characters",
            id="huge-message",
        ),
    ],
)
async def test_a_new_thread_whose_supersteps_the_graph_cannot_store_is_not_created(
    client: LangGraphClient, http: httpx.AsyncClient, values: dict, status: int, message: str
) -> None:
    """The same family through ``POST /threads`` with ``supersteps``: before, a 500 that left the
    thread behind, or the 1,000,000 characters stored."""
    thread_id = str(uuid.uuid4())
    body = {
        "thread_id": thread_id,
        "metadata": {"graph_id": "recycling_guide"},
        "supersteps": [{"updates": [{"values": values, "as_node": "intake"}]}],
    }
    response = await http.post("/threads", json=body)
    assert (response.status_code, message in response.json()["detail"]) == (status, True), response.text[:300]
    assert (await http.get(f"/threads/{thread_id}")).status_code == 404


SEED_STEPS = [{"updates": [{"values": {"messages": [_user("캔은 어떻게 버려?")]}, "as_node": "intake"}]}]


@pytest.mark.parametrize(
    "metadata",
    [
        pytest.param(None, id="no-metadata"),
        pytest.param({"owner_note": "x"}, id="no-graph_id"),
        pytest.param({"graph_id": "no_such_graph"}, id="unknown-graph"),
        pytest.param({"graph_id": 5}, id="graph_id-5"),
        pytest.param({"graph_id": ""}, id="empty-graph_id"),
    ],
)
@pytest.mark.parametrize("thread_id", [None, "chosen"], ids=["server-id", "client-id"])
async def test_a_new_thread_with_supersteps_and_no_graph_to_write_them_is_not_created(
    http: httpx.AsyncClient, metadata: dict | None, thread_id: str | None
) -> None:
    """Issue 37: the server created the thread, then found no graph to write the supersteps
    through, and answered 201 "Thread ... was created, but there were problems updating the
    state": a new empty thread per request. With a graph id the same body is checked before."""
    count = (await http.post("/threads/count", json={})).json()
    body: dict[str, Any] = {"supersteps": SEED_STEPS}
    if metadata is not None:
        body["metadata"] = metadata
    chosen = str(uuid.uuid4())
    if thread_id is not None:
        body["thread_id"] = chosen
    response = await http.post("/threads", json=body)
    detail = response.json()["detail"]
    assert response.status_code == 422, response.text[:300]
    assert detail.startswith("thread not created") and "metadata.graph_id" in detail and "recycling_guide" in detail, detail
    assert (await http.post("/threads/count", json={})).json() == count
    assert (await http.get(f"/threads/{chosen}")).status_code == 404
    made = await http.post("/threads", json={**body, "metadata": {"graph_id": "recycling_guide"}})  # the same, with a graph
    assert made.status_code == 200, made.text[:300]
    state = (await http.get(f"/threads/{made.json()['thread_id']}/state")).json()
    assert [m["content"] for m in state["values"]["messages"]] == ["캔은 어떻게 버려?"]


async def test_supersteps_with_do_nothing_on_a_thread_that_exists_write_nothing(
    client: LangGraphClient, http: httpx.AsyncClient, threads: dict[str, str]
) -> None:
    """``if_exists: "do_nothing"`` with supersteps wrote them onto the thread that exists (a new
    checkpoint on it) and answered 200: now a 409 that says so, and the thread is as it was."""
    thread_id = threads["chat"]
    before = await thread_snapshot(client, thread_id)
    metadata = {"graph_id": "recycling_guide"}
    body = {"thread_id": thread_id, "if_exists": "do_nothing", "supersteps": SEED_STEPS, "metadata": metadata}
    response = await http.post("/threads", json=body)
    assert response.status_code == 409 and "update_state" in response.json()["detail"], response.text[:300]
    assert await thread_snapshot(client, thread_id) == before
    plain = await http.post("/threads", json={"thread_id": thread_id, "if_exists": "do_nothing"})
    assert plain.status_code == 200 and await thread_snapshot(client, thread_id) == before
