"""A thread's record agrees with its runs and its head checkpoint after a queued run is cancelled (issue 37 item 3).

A paused ticket (``ticket_triage``, waiting for a plan approval) with a queued resume (a run
created with ``after_seconds``): cancelling the queued run, in every way the server has,
left the thread ``idle`` with its approval still pending in state and in the record's
interrupts, so ``threads.search(status="interrupted")`` missed it; a rollback answered 409
("a run in flight cannot be deleted") although the run then disappeared. Now the record
says ``interrupted``, with the head's interrupts, and the approval is answered as usual
(`server/persistence/thread_status.py`). A thread with another run still queued stays
``busy``, and one whose last run failed stays ``error``.

One `langgraph dev` of the module's own: a cancel by status reaches every thread of the server.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import pytest
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from migrations_playbook.staging.server import DevServer
from tests.conftest import REPO_ROOT

REFUND: dict[str, Any] = {"messages": [{"role": "user", "content": "Please refund the double charge on my invoice"}]}
APPROVE = {"kind": "plan_approval", "answer": "approve"}
LATER = 120
"""A queued run's delay: far past the test, so no worker picks it up."""


@pytest.fixture(scope="module")
def status_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    with DevServer(REPO_ROOT / "langgraph.json", tmp_path_factory.mktemp("status"), env={"MODEL": "offline"}) as server:
        yield server


@pytest.fixture
async def client(status_server: DevServer) -> AsyncIterator[LangGraphClient]:
    client = get_client(url=status_server.url)
    try:
        yield client
    finally:
        await client.aclose()


async def _paused_ticket_with_a_queued_resume(client: LangGraphClient, assistant: str = "ticket_triage") -> tuple[str, str]:
    ticket = str((await client.threads.create())["thread_id"])
    await client.runs.wait(ticket, "ticket_triage", input=REFUND)
    run = await client.runs.create(ticket, assistant, command={"resume": APPROVE}, after_seconds=LATER)
    assert (await client.threads.get(ticket))["status"] == "busy"
    return ticket, str(run["run_id"])


async def _record_agrees_with_state(client: LangGraphClient, thread_id: str, status: str) -> None:
    thread = await client.threads.get(thread_id)
    state = await client.threads.get_state(thread_id)
    assert thread["status"] == status, f"record says {thread['status']}, expected {status} (state next {state['next']})"
    assert (thread["values"] or {}) == state["values"]  # a thread with no checkpoint: None and {}
    pending = {task["id"]: [i["id"] for i in task["interrupts"]] for task in state["tasks"] if task["interrupts"]}
    assert {tid: [i["id"] for i in items] for tid, items in (thread.get("interrupts") or {}).items()} == pending
    for each in ("busy", "idle", "interrupted", "error"):
        found = {t["thread_id"] for t in await client.threads.search(status=each, limit=1000)}
        assert (thread_id in found) == (each == status), f"threads.search(status={each!r})"


async def _paused_and_answerable(client: LangGraphClient, ticket: str, run_id: str) -> None:
    await _record_agrees_with_state(client, ticket, "interrupted")
    assert [i["value"]["kind"] for t in (await client.threads.get_state(ticket))["tasks"] for i in t["interrupts"]] == [
        "plan_approval"
    ]
    assert all(r["status"] not in ("pending", "running") for r in await client.runs.list(ticket) if r["run_id"] == run_id)
    answered: Any = await client.runs.wait(ticket, "ticket_triage", command={"resume": APPROVE})
    assert answered["approval"]["answer"] == "approve"
    await _record_agrees_with_state(client, ticket, "idle")


def _cancels(client: LangGraphClient) -> dict[str, Callable[[str, str], Awaitable[Any]]]:
    return {
        "by-run-id": lambda t, r: client.runs.cancel(t, r),
        "by-run-id-wait": lambda t, r: client.runs.cancel(t, r, wait=True),
        "by-run-ids": lambda t, r: client.runs.cancel_many(thread_id=t, run_ids=[r]),
        "by-status-pending": lambda t, r: client.runs.cancel_many(status="pending"),
        "by-status-all": lambda t, r: client.runs.cancel_many(status="all"),
    }


@pytest.mark.parametrize("mode", ["by-run-id", "by-run-id-wait", "by-run-ids", "by-status-pending", "by-status-all"])
async def test_cancelling_a_queued_resume_leaves_the_ticket_interrupted(client: LangGraphClient, mode: str) -> None:
    ticket, run_id = await _paused_ticket_with_a_queued_resume(client)
    await _cancels(client)[mode](ticket, run_id)
    assert [r["status"] for r in await client.runs.list(ticket) if r["run_id"] == run_id] == ["interrupted"]
    await _paused_and_answerable(client, ticket, run_id)


@pytest.mark.parametrize("how", ["one", "wait", "many"])
async def test_rolling_back_a_queued_resume_deletes_it_and_answers_success(client: LangGraphClient, how: str) -> None:
    ticket, run_id = await _paused_ticket_with_a_queued_resume(client)
    if how == "many":
        await client.runs.cancel_many(thread_id=ticket, run_ids=[run_id], action="rollback")
    else:
        await client.runs.cancel(ticket, run_id, action="rollback", wait=how == "wait")  # was a 409
    left = [r["status"] for r in await client.runs.list(ticket) if r["run_id"] == run_id]
    # the runtime deletes a queued run no one listens to; one a waiting cancel listens to is marked interrupted
    assert left == (["interrupted"] if how == "wait" else []), left
    await _paused_and_answerable(client, ticket, run_id)


async def test_deleting_the_assistant_of_a_queued_resume_leaves_the_ticket_interrupted(client: LangGraphClient) -> None:
    assistant = str((await client.assistants.create("ticket_triage", name="queued-resume"))["assistant_id"])
    ticket, run_id = await _paused_ticket_with_a_queued_resume(client, assistant)
    await client.assistants.delete(assistant)  # the runtime cancels the assistant's runs in flight
    assert [r["status"] for r in await client.runs.list(ticket) if r["run_id"] == run_id] == ["interrupted"]
    await _paused_and_answerable(client, ticket, run_id)


async def test_a_thread_with_another_run_queued_stays_busy(client: LangGraphClient) -> None:
    chat = str((await client.threads.create())["thread_id"])
    said: dict[str, Any] = {"messages": [{"role": "user", "content": "라벨은?"}]}
    first = await client.runs.create(chat, "recycling_guide", input=said, after_seconds=LATER)
    second = await client.runs.create(chat, "recycling_guide", input=said, after_seconds=LATER, multitask_strategy="enqueue")
    await client.runs.cancel(chat, first["run_id"])
    await _record_agrees_with_state(client, chat, "busy")  # the runtime said idle with a run still queued
    await client.runs.cancel(chat, second["run_id"], action="rollback")
    await _record_agrees_with_state(client, chat, "idle")


async def test_a_thread_whose_last_run_failed_stays_error(client: LangGraphClient) -> None:
    room = str((await client.threads.create())["thread_id"])
    said: dict[str, Any] = {"messages": [{"role": "user", "content": "Who won?"}]}
    failed = await client.runs.create(room, "fan_room", input=said, context={"team_name": "no such team"})
    await client.runs.join(room, failed["run_id"])
    assert (await client.threads.get(room))["status"] == "error"
    queued = await client.runs.create(room, "fan_room", input=said, context={"team_name": "LG"}, after_seconds=LATER)
    await client.runs.cancel(room, queued["run_id"])
    assert (await client.threads.get(room))["status"] == "error", "the runtime said idle"
    assert room in {t["thread_id"] for t in await client.threads.search(status="error", limit=1000)}
