"""Duplicate runs, cancel and bad input on a real `langgraph dev` (server/serving.py).

The repo's graphs run on the session server. To hold a thread busy for a known
time without test branches in graph code, the real-graph tests use the API's
own ``after_seconds`` (the run is queued, the thread is busy until it runs);
the tests that must catch a run *while it executes* serve deliberately slow
stand-in graphs (tests/fixtures/slow_project) with the same auth module.
"""

from __future__ import annotations

import asyncio
import shutil
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from migrations_playbook.staging.server import DevServer
from tests.integration.refusal import refusal, thread_snapshot

SLOW_PROJECT = Path(__file__).parents[1] / "fixtures" / "slow_project"
REFUND = "Please refund the double charge on my invoice, it is urgent"
APPROVE = {"kind": "plan_approval", "answer": "approve"}


def _user(text: str) -> dict:
    return {"messages": [{"role": "user", "content": text}]}


async def _paused_ticket(client: LangGraphClient) -> str:
    thread_id = (await client.threads.create())["thread_id"]
    await client.runs.wait(thread_id, "ticket_triage", input=_user(REFUND))
    return thread_id


async def _wait_for(predicate: Any, timeout: float = 20.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not await predicate():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.05)


async def _running(client: LangGraphClient, thread_id: str, run_id: str) -> None:
    async def started() -> bool:
        return (await client.runs.get(thread_id, run_id))["status"] == "running"

    await _wait_for(started)


# -- bad input --------------------------------------------------------------------------------

BAD_INPUTS = [
    # (graph, thread, request, status, message)
    pytest.param("recycling_guide", "chat", {"input": {}}, 422, "input needs 'messages'", id="missing-messages"),
    pytest.param(
        "recycling_guide",
        "chat",
        {"input": {"msgs": [{"role": "user", "content": "hi"}]}},
        422,
        "unknown field(s) msgs; it accepts: messages",
        id="unknown-field",
    ),
    pytest.param(
        "recycling_guide",
        "chat",
        {"input": {"messages": "페트병"}},
        422,
        "input.messages must be a list of messages, got str",
        id="messages-a-string",
    ),
    pytest.param(
        "recycling_guide",
        "chat",
        {"input": {"messages": 5}},
        422,
        "input.messages must be a list of messages, got int",
        id="messages-a-number",
    ),
    pytest.param("recycling_guide", "chat", {"input": {"messages": []}}, 422, "input.messages is empty", id="empty-list"),
    pytest.param(
        "recycling_guide",
        "chat",
        {"input": {"messages": [{"role": "user"}]}},
        422,
        "input.messages[0] has no 'content'",
        id="message-without-content",
    ),
    pytest.param(
        "recycling_guide",
        "chat",
        {"input": {"messages": [{"role": "user", "content": 42}]}},
        422,
        "input.messages[0].content must be a string",
        id="content-a-number",
    ),
    pytest.param(
        "recycling_guide",
        "chat",
        {"input": {"messages": [{"role": "boss", "content": "hi"}]}},
        422,
        "input.messages[0] needs a 'role'",
        id="unknown-role",
    ),
    pytest.param(
        "recycling_guide",
        "chat",
        {"input": _user("페트병 " * 2001)},
        413,
        "input.messages[0] has 8004 characters; the limit is 8000 (MAX_MESSAGE_CHARS)",
        id="oversized-message",
    ),
    pytest.param(
        "campus_supervisor",
        "campus",
        {"input": {"messages": [[1, 2]]}},
        422,
        "input.messages[0] must be a message object",
        id="message-a-list",
    ),
    pytest.param(
        "fan_room",
        "room",
        {"input": _user("LG 어때?"), "context": {"team_name": "LG"}, "multitask_strategy": "rollback"},
        422,
        "multitask_strategy 'rollback' is not served here",
        id="rollback-strategy",
    ),
    pytest.param(
        "fan_room",
        "room",
        {"input": _user("LG 어때?"), "context": {"team_name": "LG"}, "multitask_strategy": "interrupt"},
        422,
        "multitask_strategy 'interrupt' is not served here",
        id="interrupt-strategy",
    ),
    pytest.param(
        "ticket_triage",
        "paused",
        {"command": {"resume": {"kind": "report_choice", "answer": "summary"}}},
        422,
        "this thread waits for plan_approval; the resume answers 'report_choice'",
        id="wrong-approval-kind",
    ),
    pytest.param(
        "ticket_triage",
        "paused",
        {"command": {"resume": {"kind": "plan_approval", "answer": "perhaps"}}},
        422,
        "'perhaps' is not an answer to 'plan_approval'; allowed: approve, reject",
        id="answer-not-an-option",
    ),
    pytest.param(
        "ticket_triage",
        "paused",
        {"command": {"resume": {"answer": "approve"}}},
        422,
        "resume must name the approval it answers",
        id="approval-kind-missing",
    ),
    pytest.param("ticket_triage", "paused", {"command": {"resume": 5}}, 422, "malformed resume 5", id="malformed-resume"),
    pytest.param("ticket_triage", "paused", {"input": _user("x" * 8001)}, 413, "the limit is 8000", id="oversized-ticket"),
    pytest.param(
        "ticket_triage",
        "done",
        {"command": {"resume": APPROVE}},
        409,
        "is not waiting for an answer: there is nothing to resume",
        id="resume-with-nothing-pending",
    ),
]


@pytest.fixture(scope="module")
def threads(dev_server: DevServer) -> dict[str, str]:
    """One thread per graph, each with history, made once for the bad-input cases (which change nothing)."""

    async def make() -> dict[str, str]:
        client = get_client(url=dev_server.url)
        made = {name: (await client.threads.create())["thread_id"] for name in ("chat", "campus", "room", "paused", "done")}
        await client.runs.wait(made["chat"], "recycling_guide", input=_user("페트병 어떻게 버려?"))
        await client.runs.wait(made["campus"], "campus_supervisor", input=_user("학식 메뉴 뭐야?"))
        await client.runs.wait(made["room"], "fan_room", input=_user("LG 어때?"), context={"team_name": "LG"})
        for name in ("paused", "done"):
            await client.runs.wait(made[name], "ticket_triage", input=_user(REFUND))
        await client.runs.wait(made["done"], "ticket_triage", command={"resume": APPROVE})
        await client.aclose()
        return made

    return asyncio.run(make())


@pytest.mark.parametrize(("graph", "thread", "request_", "status", "message"), BAD_INPUTS)
async def test_bad_input_is_refused_with_a_clear_error_and_the_thread_is_left_as_it_was(
    client: LangGraphClient, threads: dict[str, str], graph: str, thread: str, request_: dict, status: int, message: str
) -> None:
    thread_id = threads[thread]
    before = await thread_snapshot(client, thread_id)
    got_status, got_message = await refusal(client.runs.wait(thread_id, graph, **request_))
    assert (got_status, message in got_message) == (status, True), got_message
    assert await thread_snapshot(client, thread_id) == before


async def test_a_refused_run_that_would_create_its_thread_creates_nothing(client: LangGraphClient) -> None:
    thread_id = str(uuid.uuid4())
    status, _ = await refusal(client.runs.create(thread_id, "recycling_guide", input={"messages": []}, if_not_exists="create"))
    assert status == 422
    assert (await refusal(client.threads.get(thread_id)))[0] == 404


async def test_an_unknown_graph_is_refused_by_the_server(client: LangGraphClient, threads: dict[str, str]) -> None:
    before = await thread_snapshot(client, threads["chat"])
    status, message = await refusal(client.runs.wait(threads["chat"], "no_such_graph", input=_user("hi")))
    assert (status, "Invalid assistant: 'no_such_graph'" in message) == (422, True), message
    assert await thread_snapshot(client, threads["chat"]) == before


async def test_an_unknown_persona_fails_its_run_and_leaves_state_and_history_as_they_were(client: LangGraphClient) -> None:
    """fan_room validates the team when the run starts, before any checkpoint (graphs/fan_room/context.py):
    the run is accepted and fails; state and history do not change, the thread's status says `error`."""
    thread_id = (await client.threads.create())["thread_id"]
    await client.runs.wait(thread_id, "fan_room", input=_user("LG 어때?"), context={"team_name": "LG"})
    state, history = await client.threads.get_state(thread_id), await client.threads.get_history(thread_id, limit=200)
    run = await client.runs.create(thread_id, "fan_room", input=_user("안녕"), context={"team_name": "Yankees"})
    await client.runs.join(thread_id, run["run_id"])
    thread = await client.threads.get(thread_id)
    assert (await client.runs.get(thread_id, run["run_id"]))["status"] == "error"
    assert thread["status"] == "error"
    assert "unknown team 'Yankees'" in thread["error"]["message"]
    assert await client.threads.get_state(thread_id) == state
    assert await client.threads.get_history(thread_id, limit=200) == history


# -- duplicate runs and cancel, real graphs ----------------------------------------------------


async def test_an_approval_thread_refuses_a_second_run_while_one_is_queued(client: LangGraphClient) -> None:
    thread_id = await _paused_ticket(client)
    first = await client.runs.create(thread_id, "ticket_triage", command={"resume": APPROVE}, after_seconds=2)
    for strategy in (None, "enqueue", "reject"):
        status, message = await refusal(
            client.runs.create(thread_id, "ticket_triage", command={"resume": APPROVE}, multitask_strategy=strategy)
        )
        assert status == 409, (strategy, message)
        assert "refuses a second run while one is in flight" in message or "already running" in message
    await client.runs.join(thread_id, first["run_id"])
    runs = await client.runs.list(thread_id, limit=20)
    assert len(runs) == 2, "the first ticket run and one resume: nothing else was inserted"
    state = await client.threads.get_state(thread_id)
    assert state["values"]["approval"]["answer"] == "approve"
    assert sum(m["type"] == "ai" for m in state["values"]["messages"]) == 1, "one reply"


async def test_a_chat_thread_queues_a_second_message_and_answers_both_in_order(client: LangGraphClient) -> None:
    thread_id = (await client.threads.create())["thread_id"]
    first = await client.runs.create(thread_id, "recycling_guide", input=_user("페트병 어떻게 버려?"), after_seconds=1)
    assert (await client.threads.get(thread_id))["status"] == "busy"
    second = await client.runs.create(thread_id, "recycling_guide", input=_user("라벨은?"), after_seconds=1)
    assert second["status"] == "pending"
    await client.runs.join(thread_id, first["run_id"])
    await client.runs.join(thread_id, second["run_id"])
    values = (await client.threads.get_state(thread_id))["values"]
    assert [m["type"] for m in values["messages"]] == ["human", "ai", "human", "ai"]
    assert [m["content"] for m in values["messages"] if m["type"] == "human"] == ["페트병 어떻게 버려?", "라벨은?"]
    assert values["intent_history"] == ["waste", "waste"]


async def test_cancelling_a_queued_resume_keeps_the_approval_pending_and_answerable(client: LangGraphClient) -> None:
    thread_id = await _paused_ticket(client)
    before = await client.threads.get_state(thread_id)
    queued = await client.runs.create(thread_id, "ticket_triage", command={"resume": APPROVE}, after_seconds=30)
    await client.runs.cancel(thread_id, queued["run_id"], wait=True)
    assert (await client.runs.get(thread_id, queued["run_id"]))["status"] == "interrupted"
    after = await client.threads.get_state(thread_id)
    assert (after["values"], after["next"], after["tasks"][0]["interrupts"]) == (
        before["values"],
        before["next"],
        before["tasks"][0]["interrupts"],
    )
    result = await client.runs.wait(thread_id, "ticket_triage", command={"resume": APPROVE})
    assert result["approval"]["answer"] == "approve"


# -- duplicate runs and cancel, slow stand-in graphs ------------------------------------------


@pytest.fixture(scope="module")
def slow_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    project = tmp_path_factory.mktemp("slow") / "project"
    shutil.copytree(SLOW_PROJECT, project, ignore=shutil.ignore_patterns("__pycache__"))
    with DevServer(project / "langgraph.json", project) as server:
        yield server


@pytest.fixture
async def slow(slow_server: DevServer) -> AsyncIterator[LangGraphClient]:
    client = get_client(url=slow_server.url)
    yield client
    await client.aclose()


async def test_cancel_mid_run_leaves_the_thread_resumable_from_its_last_checkpoint(slow: LangGraphClient) -> None:
    thread_id = (await slow.threads.create())["thread_id"]
    run = await slow.runs.create(thread_id, "slow_chat", input=_user("A"))

    async def past_think() -> bool:
        return (await slow.threads.get_state(thread_id))["next"] == ["reflect"]

    await _wait_for(past_think)
    await slow.runs.cancel(thread_id, run["run_id"], wait=True)
    assert (await slow.runs.get(thread_id, run["run_id"]))["status"] == "interrupted"
    state = await slow.threads.get_state(thread_id)
    assert (state["next"], state["values"]["steps"]) == (["reflect"], ["think"])

    resumed = await slow.runs.wait(thread_id, "slow_chat", input=None)
    assert [m["content"] for m in resumed["messages"]] == ["A", "echo: A"], "no message lost or duplicated"
    assert resumed["steps"] == ["think", "reflect", "answer"], "think did not run again"


async def test_a_message_sent_while_a_run_executes_is_queued_not_lost(slow: LangGraphClient) -> None:
    thread_id = (await slow.threads.create())["thread_id"]
    first = await slow.runs.create(thread_id, "slow_chat", input=_user("B"))
    await _running(slow, thread_id, first["run_id"])
    second = await slow.runs.create(thread_id, "slow_chat", input=_user("C"))
    assert second["status"] == "pending"
    await slow.runs.join(thread_id, second["run_id"])
    values = (await slow.threads.get_state(thread_id))["values"]
    assert [m["content"] for m in values["messages"]] == ["B", "echo: B", "C", "echo: C"]


async def test_an_approval_thread_refuses_a_second_run_while_one_executes(slow: LangGraphClient) -> None:
    thread_id = (await slow.threads.create())["thread_id"]
    first = await slow.runs.create(thread_id, "slow_approval", input=_user("X"))
    await _running(slow, thread_id, first["run_id"])
    status, message = await refusal(slow.runs.create(thread_id, "slow_approval", input=_user("Y")))
    assert status == 409
    assert "slow_approval refuses a second run while one is in flight" in message
    await slow.runs.join(thread_id, first["run_id"])
    state = await slow.threads.get_state(thread_id)
    assert [m["content"] for m in state["values"]["messages"]] == ["X"]
    assert state["next"] == ["approve"]
