"""Regressions for the lifecycle machine's and the fuzzer's findings (issue 26), on a real server.

* a run acknowledged after a crash restart survives the next crash (the records journal's
  ``seq`` counts on from the journal's highest, `server/persistence/thread_records.py`);
* a run (or resume) from a ``checkpoint_id`` the thread does not have is a 404 that changes
  nothing, on every graph and every run-creating route (`server/auth.py`);
* an ``after_seconds`` out of range (negative, past a year, past what a date holds) is a
  422 that changes nothing, also on a stateless run (`server/auth.py`);
* after ``update_state`` on a paused ticket the thread's record agrees with its head
  checkpoint, and a resume and a new message then do what the record says;
* concurrent thread deletes and patches (and stateless runs, whose workers delete their
  temporary threads) each act on their own thread: the runtime held a thread's position in
  its list across an await, so a delete in between made another delete a 500 or removed
  another thread's record (`server/persistence/index_lock.py` ``_HOLD_AN_INDEX``).
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.errors import NotFoundError

from migrations_playbook.staging.server import DevServer
from tests.conftest import REPO_ROOT
from tests.integration.crashing import crash_and_restart as _crash_and_restart
from tests.integration.crashing import run_with_client as _run
from tests.integration.refusal import refusal, thread_snapshot

REFUND = "Please refund the double charge on my invoice"
APPROVE = {"kind": "plan_approval", "answer": "approve"}
CHAT_GRAPHS = ("recycling_guide", "fan_room", "campus_supervisor")
CONTEXTS = {"fan_room": {"team_name": "LG"}}
"""The run context a graph needs."""


def _user(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def _kinds(state: dict[str, Any]) -> list[str]:
    return [i["value"]["kind"] for task in state["tasks"] for i in task["interrupts"]]


def _record_kinds(thread: dict[str, Any]) -> list[str]:
    return [i["value"]["kind"] for interrupts in (thread.get("interrupts") or {}).values() for i in interrupts]


# -- 1. a run acknowledged after a crash restart survives the next crash ------------------


def test_a_run_acknowledged_after_a_crash_restart_survives_the_next_crash(
    server_factory: type[DevServer], tmp_path: Path
) -> None:
    server = server_factory(REPO_ROOT / "langgraph.json", tmp_path, env={"MODEL": "offline"}).start()

    async def first(client: LangGraphClient) -> str:
        chat = (await client.threads.create())["thread_id"]
        for text in ("캔은 어떻게 버려?", "라벨은?"):  # several journal rows: a seq above the next process's first ones
            await client.runs.wait(chat, "recycling_guide", input=_user(text))
            await client.threads.get_state(chat)
        return str(chat)

    chat = _run(server, first)
    _crash_and_restart(server)

    async def second(client: LangGraphClient) -> dict[str, Any]:
        answer = await client.runs.wait(chat, "recycling_guide", input=_user("페트병은?"))
        assert len(answer["intent_history"]) == 3
        return await thread_snapshot(client, chat)

    acknowledged = _run(server, second)
    assert len(acknowledged["runs"]) == 3
    _crash_and_restart(server)

    async def after(client: LangGraphClient) -> None:
        now = await thread_snapshot(client, chat)
        assert len(now["thread"]["values"]["intent_history"]) == 3, "the record acknowledged, not the one before"
        assert now == acknowledged, "record, state, history and runs as acknowledged after the restart"
        fourth = await client.runs.wait(chat, "recycling_guide", input=_user("지금까지 뭐 물어봤지?"))
        assert len(fourth["intent_history"]) == 4

    _run(server, after)
    _crash_and_restart(server)  # and once more: the third process counts on from the second's rows too

    async def again(client: LangGraphClient) -> None:
        assert len((await client.threads.get(chat))["values"]["intent_history"]) == 4
        assert len(await client.runs.list(chat, limit=100)) == 4

    _run(server, again)


# -- 2. a run from a checkpoint the thread does not have ----------------------------------


async def _paused_ticket(client: LangGraphClient) -> str:
    ticket = str((await client.threads.create())["thread_id"])
    await client.runs.wait(ticket, "ticket_triage", input=_user(REFUND))
    assert _kinds(await client.threads.get_state(ticket)) == ["plan_approval"]
    return ticket


async def _stream_status(client: LangGraphClient, thread_id: str | None, assistant: str, body: dict[str, Any]) -> int:
    """POST .../runs/stream (thread_id None: the stateless route); the status, and the body read to the end."""
    path = f"/threads/{thread_id}/runs/stream" if thread_id else "/runs/stream"
    async with client.http.client.stream("POST", path, json={"assistant_id": assistant, **body}) as response:
        text = (await response.aread()).decode()
        if response.status_code < 400:
            return response.status_code
        assert "has no checkpoint" in text or "after_seconds" in text, text
        return response.status_code


def _made_up_requests(client: LangGraphClient, thread_id: str, graph: str, made_up: str) -> dict[str, Any]:
    """Every way a run on the thread can name ``made_up``: what each must refuse with a 404."""
    extra: dict[str, Any] = {"context": CONTEXTS[graph]} if graph in CONTEXTS else {}
    requests: dict[str, Any] = {
        "create": client.runs.create(thread_id, graph, input=_user(REFUND), checkpoint_id=made_up, **extra),
        "wait": client.runs.wait(thread_id, graph, input=_user(REFUND), checkpoint_id=made_up, **extra),
    }
    if not extra:  # the server refuses configurable and context together (400)
        requests["wait, in config"] = client.runs.wait(
            thread_id, graph, input=_user(REFUND), config={"configurable": {"checkpoint_id": made_up}}
        )
    if graph == "ticket_triage":
        requests["resume"] = client.runs.wait(thread_id, graph, command={"resume": APPROVE}, checkpoint_id=made_up)
    return requests


async def test_a_run_from_a_made_up_checkpoint_is_a_404_on_every_graph_and_route(client: LangGraphClient) -> None:
    made_up = str(uuid.uuid4())
    ticket = await _paused_ticket(client)
    threads = {"ticket_triage": ticket}
    for graph in CHAT_GRAPHS:
        chat = str((await client.threads.create())["thread_id"])
        extra: dict[str, Any] = {"context": CONTEXTS[graph]} if graph in CONTEXTS else {}
        await client.runs.wait(chat, graph, input=_user("캔은 어떻게 버려?"), **extra)
        threads[graph] = chat
    for graph, thread_id in threads.items():
        before = await thread_snapshot(client, thread_id)
        for route, request in _made_up_requests(client, thread_id, graph, made_up).items():
            status, message = await refusal(request)
            assert status == 404, f"{graph} {route}: {status} {message}"
            assert made_up in message and "get_history" in message, message
        body = {"input": _user(REFUND), "checkpoint_id": made_up, **({"context": CONTEXTS[graph]} if graph in CONTEXTS else {})}
        assert await _stream_status(client, thread_id, graph, body) == 404, f"{graph} stream"
        assert await thread_snapshot(client, thread_id) == before, f"{graph}: a refused run changed the thread"
    # a checkpoint the thread has still works: the chat continues from its head
    chat = threads["recycling_guide"]
    head = (await client.threads.get_state(chat))["checkpoint"]["checkpoint_id"]
    answer = await client.runs.wait(chat, "recycling_guide", input=_user("라벨은?"), checkpoint_id=head)
    assert answer["intent_history"] == ["waste", "waste"], "the second turn sees the first"
    # a stateless run has no checkpoints at all
    status, message = await refusal(client.runs.wait(None, "recycling_guide", input=_user("라벨은?"), checkpoint_id=made_up))
    assert status == 404 and made_up in message, message


# -- 3. after_seconds out of range --------------------------------------------------------


@pytest.mark.parametrize("after_seconds", [-1, 2 * 365 * 24 * 3600, 1e30], ids=["negative", "two-years", "overflow"])
async def test_an_after_seconds_out_of_range_is_a_422_that_leaves_the_thread_free(
    client: LangGraphClient, after_seconds: float
) -> None:
    ticket = await _paused_ticket(client)
    before = await thread_snapshot(client, ticket)
    status, message = await refusal(
        client.runs.create(ticket, "ticket_triage", command={"resume": APPROVE}, after_seconds=after_seconds)
    )
    assert status == 422 and "after_seconds" in message, f"{status} {message}"
    stream = await _stream_status(
        client, ticket, "ticket_triage", {"command": {"resume": APPROVE}, "after_seconds": after_seconds}
    )
    assert stream == 422
    assert await thread_snapshot(client, ticket) == before, "a refused run changed the thread"
    assert (await client.threads.get(ticket))["status"] == "interrupted"
    answered = await client.runs.wait(ticket, "ticket_triage", command={"resume": APPROVE})  # not wedged busy
    assert answered["approval"]["answer"] == "approve"
    # stateless: no busy thread left behind
    threads_before = {t["thread_id"] for t in await client.threads.search(limit=1000)}
    status, message = await refusal(
        client.runs.create(None, "recycling_guide", input=_user("라벨은?"), after_seconds=after_seconds)
    )
    assert status == 422 and "after_seconds" in message, f"{status} {message}"
    left = [t for t in await client.threads.search(limit=1000) if t["thread_id"] not in threads_before]
    assert left == [], f"a refused stateless run left threads: {[(t['thread_id'], t['status']) for t in left]}"


async def test_a_short_after_seconds_still_runs(client: LangGraphClient) -> None:
    chat = str((await client.threads.create())["thread_id"])
    run = await client.runs.create(chat, "recycling_guide", input=_user("라벨은?"), after_seconds=1)
    await client.runs.join(chat, run["run_id"])
    assert len((await client.threads.get(chat))["values"]["intent_history"]) == 1


# -- 4. update_state on a paused ticket ---------------------------------------------------


async def test_update_state_on_a_paused_ticket_leaves_a_record_that_agrees_with_the_head(client: LangGraphClient) -> None:
    ticket = await _paused_ticket(client)
    note = {"messages": [{"role": "user", "content": "a note added by update_state", "id": str(uuid.uuid4())}]}
    await client.threads.update_state(ticket, note)
    record, state = await client.threads.get(ticket), await client.threads.get_state(ticket)
    assert _kinds(state) == [] and state["next"] == ["triage"], "the update re-schedules triage, with no interrupt yet"
    assert _record_kinds(record) == [], f"the record keeps the superseded interrupt: {record['interrupts']}"
    assert record["status"] == "interrupted", "work is scheduled (next=['triage']), as the runtime's records say"
    assert record["values"] == state["values"]
    # nothing waits for an answer: a resume is a 409 that says so, and changes nothing
    before = await thread_snapshot(client, ticket)
    status, message = await refusal(client.runs.wait(ticket, "ticket_triage", command={"resume": APPROVE}))
    assert status == 409 and "nothing to resume" in message, f"{status} {message}"
    assert await thread_snapshot(client, ticket) == before
    # a new message is a new request: triage runs and asks again, and that question is answerable
    await client.runs.wait(ticket, "ticket_triage", input=_user(REFUND))
    record, state = await client.threads.get(ticket), await client.threads.get_state(ticket)
    assert _kinds(state) == ["plan_approval"] and _record_kinds(record) == ["plan_approval"]
    assert record["status"] == "interrupted"
    answered = await client.runs.wait(ticket, "ticket_triage", command={"resume": APPROVE})
    assert answered["approval"]["answer"] == "approve"
    assert (await client.threads.get(ticket))["status"] == "idle"


def test_update_state_on_a_paused_ticket_after_a_crash_restart_survives_the_next_crash(
    server_factory: type[DevServer], tmp_path: Path
) -> None:
    """The lifecycle machine's sequence: pause, kill -9, update_state, kill -9. The second crash
    brought back the record from before the update: interrupted, with the superseded approval."""
    server = server_factory(REPO_ROOT / "langgraph.json", tmp_path, env={"MODEL": "offline"}).start()
    ticket = _run(server, _paused_ticket)
    _crash_and_restart(server)

    async def update(client: LangGraphClient) -> dict[str, Any]:
        await client.threads.update_state(ticket, {"messages": [{"role": "user", "content": "a note", "id": "note-1"}]})
        return await thread_snapshot(client, ticket)

    acknowledged = _run(server, update)
    assert _record_kinds(acknowledged["thread"]) == [] and _kinds(acknowledged["state"]) == []
    _crash_and_restart(server)

    async def after(client: LangGraphClient) -> None:
        now = await thread_snapshot(client, ticket)
        assert _record_kinds(now["thread"]) == [], f"the superseded approval is back: {now['thread']['interrupts']}"
        assert now == acknowledged, "record, state, history and runs as acknowledged"
        status, message = await refusal(client.runs.wait(ticket, "ticket_triage", command={"resume": APPROVE}))
        assert status == 409 and "nothing to resume" in message, f"{status} {message}"

    _run(server, after)


# -- 5. concurrent deletes and patches ----------------------------------------------------


async def test_concurrent_deletes_and_patches_each_act_on_their_own_thread(client: LangGraphClient) -> None:
    """24 threads with state; 12 deleted, 12 patched, all at once, with stateless runs beside.
    Before the fix a third of such deletes were 500s and the survivors were the wrong ones."""
    marker = str(uuid.uuid4())

    async def chat(number: int) -> str:
        thread = await client.threads.create(metadata={"batch": marker, "number": number})
        thread_id = str(thread["thread_id"])
        await client.runs.wait(thread_id, "recycling_guide", input=_user("페트병 어떻게 버려?"))
        return thread_id

    threads = await asyncio.gather(*(chat(number) for number in range(24)))
    doomed, kept = threads[::2], threads[1::2]
    states = {thread_id: (await client.threads.get_state(thread_id))["values"] for thread_id in kept}

    answers = await asyncio.gather(
        *(client.threads.delete(thread_id) for thread_id in doomed),
        *(client.threads.update(thread_id, metadata={"patched": thread_id}) for thread_id in kept),
        *(client.runs.wait(None, "recycling_guide", input=_user("유리병은?")) for _ in range(4)),
        return_exceptions=True,
    )
    assert not [a for a in answers if isinstance(a, BaseException)], answers

    left = await client.threads.search(metadata={"batch": marker}, limit=100)
    assert sorted(str(t["thread_id"]) for t in left) == sorted(kept)
    for thread in left:
        thread_id = str(thread["thread_id"])
        assert thread["metadata"]["patched"] == thread_id
        assert thread["metadata"]["number"] == threads.index(thread_id)
        assert (await client.threads.get_state(thread_id))["values"] == states[thread_id]
    for thread_id in doomed:
        with pytest.raises(NotFoundError):
            await client.threads.get(thread_id)
