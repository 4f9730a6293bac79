"""Run deletion, and a thread's record after operations that write checkpoints without a run (issue 26, items 1-2).

One `langgraph dev` in token mode for the module (alice, bob, an operator).

* ``DELETE /threads/{id}/runs/{run_id}`` answered 500 for the owner (the server asks the
  checkpointer for ``adelete_for_runs``, which the SQLite checkpointer lacked), and
  another user's run id sent on one's own thread reached that deletion before any
  ownership check. Now: another user's run is a 404 before anything is read or
  changed; one's own finished run is deleted, and its checkpoints with it when nothing
  stands on them (the latest run, started from new input: the thread is back where it
  was before it), kept otherwise (server/persistence/saver.py, ``adelete_for_runs``).
* A copy of a paused ticket held the pending approval in its checkpoints, but its record
  said ``idle`` with no interrupts, so ``threads.search(status="interrupted")`` missed it.
  Every operation that writes checkpoints without a run (a copy, an update at an earlier
  checkpoint, a deleted run) now leaves the record as its head checkpoint says.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest
from langgraph_sdk.client import LangGraphClient

from migrations_playbook.staging.server import DevServer
from tests.integration import token_mode
from tests.integration.refusal import refusal, thread_snapshot

REFUND = {"messages": [{"role": "user", "content": "Please refund the double charge, it is urgent"}]}
APPROVE = {"resume": {"kind": "plan_approval", "answer": "approve"}}


def _user(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


@pytest.fixture(scope="module")
def token_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    with token_mode.token_server(tmp_path_factory.mktemp("records-server")) as server:
        yield server


@pytest.fixture
async def clients(token_server: DevServer) -> AsyncIterator[Callable[..., LangGraphClient]]:
    async for make in token_mode.token_clients(token_server):
        yield make


async def _record_agrees_with_head(client: LangGraphClient, thread_id: str) -> dict[str, Any]:
    """The thread's record holds what its head checkpoint holds: values, interrupts, status."""
    thread = await client.threads.get(thread_id)
    state = await client.threads.get_state(thread_id)
    pending = {task["id"]: task["interrupts"] for task in state["tasks"] if task["interrupts"]}
    assert thread["values"] == state["values"]
    assert {tid: [i["id"] for i in items] for tid, items in (thread["interrupts"] or {}).items()} == {
        tid: [i["id"] for i in items] for tid, items in pending.items()
    }
    assert thread["status"] == ("interrupted" if state["next"] else "idle")
    return thread


# -- item 1: deleting a run ---------------------------------------------------------------------


async def test_deleting_ones_latest_run_deletes_it_and_its_checkpoints(clients: Callable[..., LangGraphClient]) -> None:
    alice = clients("alice")
    chat = (await alice.threads.create())["thread_id"]
    await alice.runs.wait(chat, "recycling_guide", input=_user("페트병 어떻게 버려?"))
    after_turn_one = await thread_snapshot(alice, chat)
    await alice.runs.wait(chat, "recycling_guide", input=_user("라벨은?"))
    latest = (await alice.runs.list(chat, limit=1))[0]["run_id"]

    await alice.runs.delete(chat, latest)

    assert [r["run_id"] for r in await alice.runs.list(chat)] == after_turn_one["runs"]
    assert await alice.threads.get_history(chat, limit=200) == after_turn_one["history"], "its checkpoints are gone"
    assert (await alice.threads.get_state(chat))["values"] == after_turn_one["state"]["values"]
    await _record_agrees_with_head(alice, chat)
    await alice.runs.wait(chat, "recycling_guide", input=_user("라벨은?"))
    turn = (await alice.threads.get_state(chat))["values"]["turn"]  # not in the run's output (record 0010)
    assert turn == 2, "the thread goes on from the turn before the deleted run"


async def test_deleting_a_run_that_later_runs_build_on_keeps_its_checkpoints(
    clients: Callable[..., LangGraphClient],
) -> None:
    alice = clients("alice")
    ticket = (await alice.threads.create())["thread_id"]
    await alice.runs.wait(ticket, "ticket_triage", input=REFUND)
    await alice.runs.wait(ticket, "ticket_triage", command=APPROVE)
    resume, first = [r["run_id"] for r in await alice.runs.list(ticket)]
    before = await thread_snapshot(alice, ticket)

    await alice.runs.delete(ticket, first)  # the resume stands on its checkpoints
    await alice.runs.delete(ticket, resume)  # its answer is stored on the first run's checkpoint

    assert await alice.runs.list(ticket) == []
    after = await thread_snapshot(alice, ticket)
    assert (after["history"], after["state"]) == (before["history"], before["state"])
    assert (await _record_agrees_with_head(alice, ticket))["status"] == "idle"
    status, message = await refusal(alice.runs.wait(ticket, "ticket_triage", command=APPROVE))
    assert status == 409, f"the approval stays answered, it cannot be answered again: {message}"


async def test_another_users_run_is_not_found_and_nothing_changes(clients: Callable[..., LangGraphClient]) -> None:
    alice, bob, ops = clients("alice"), clients("bob"), clients("ops")
    mine = (await alice.threads.create())["thread_id"]
    await alice.runs.wait(mine, "recycling_guide", input=_user("페트병 어떻게 버려?"))
    theirs = (await bob.threads.create())["thread_id"]
    await bob.runs.wait(theirs, "recycling_guide", input=_user("유리병은?"))
    bobs_run = (await bob.runs.list(theirs))[0]["run_id"]
    alices_run = (await alice.runs.list(mine))[0]["run_id"]
    before = {mine: await thread_snapshot(alice, mine), theirs: await thread_snapshot(bob, theirs)}

    for caller, thread_id, run_id in [
        (alice, mine, bobs_run),  # another user's run id on one's own thread
        (alice, theirs, bobs_run),  # another user's thread
        (ops, mine, alices_run),  # an operator reads every thread, but deletes only on their own
        (alice, mine, "00000000-0000-4000-8000-000000000000"),
    ]:
        status, message = await refusal(caller.runs.delete(thread_id, run_id))
        assert status == 404, message
        assert "not found" in message.lower()

    assert await thread_snapshot(alice, mine) == before[mine]
    assert await thread_snapshot(bob, theirs) == before[theirs], "bob's run and checkpoints are untouched"


async def test_a_run_in_flight_is_not_deleted(clients: Callable[..., LangGraphClient]) -> None:
    alice = clients("alice")
    chat = (await alice.threads.create())["thread_id"]
    waiting = await alice.runs.create(chat, "recycling_guide", input=_user("페트병 어떻게 버려?"), after_seconds=30)

    status, message = await refusal(alice.runs.delete(chat, waiting["run_id"]))

    assert status == 409 and "cancel it" in message.lower(), message
    assert (await alice.runs.get(chat, waiting["run_id"]))["status"] == "pending", "still there, still waiting"
    await alice.runs.cancel(chat, waiting["run_id"])


# -- item 2: records after operations without a run ---------------------------------------------


async def test_a_copy_of_a_paused_ticket_is_interrupted_and_found_by_search(clients: Callable[..., LangGraphClient]) -> None:
    alice = clients("alice")
    ticket = (await alice.threads.create(metadata={"case": "copy-of-paused"}))["thread_id"]
    await alice.runs.wait(ticket, "ticket_triage", input=REFUND)
    original = await alice.threads.get(ticket)
    assert original["status"] == "interrupted"

    copy = (await alice.threads.copy(ticket))["thread_id"]

    record = await _record_agrees_with_head(alice, copy)
    assert record["status"] == "interrupted" and record["interrupts"] == original["interrupts"]
    assert record["values"] == original["values"]
    found = await alice.threads.search(status="interrupted", metadata={"case": "copy-of-paused"}, limit=10)
    assert {t["thread_id"] for t in found} == {ticket, copy}
    resumed = await alice.runs.wait(copy, "ticket_triage", command=APPROVE)
    assert resumed["approval"]["answer"] == "approve"
    await _record_agrees_with_head(alice, copy)
    assert (await alice.threads.get(ticket))["status"] == "interrupted", "the original still waits"


async def test_an_update_at_an_earlier_checkpoint_sets_the_record_from_the_head_it_wrote(
    clients: Callable[..., LangGraphClient],
) -> None:
    alice = clients("alice")
    chat = (await alice.threads.create())["thread_id"]
    await alice.runs.wait(chat, "recycling_guide", input=_user("페트병 어떻게 버려?"))
    turn_one = (await alice.threads.get_state(chat))["checkpoint"]["checkpoint_id"]
    await alice.runs.wait(chat, "recycling_guide", input=_user("라벨은?"))

    await alice.threads.update_state(chat, {"turn": 7}, checkpoint_id=turn_one)

    assert (await alice.threads.get_state(chat))["values"]["turn"] == 7
    assert (await _record_agrees_with_head(alice, chat))["values"]["turn"] == 7
