"""Run requests a hostile client sends, on a real `langgraph dev` (issue 12, defects 1, 2 and 5).

* **1** a thread belongs to the graph it first ran: a run on it through another
  graph's assistant is a 409 that names the thread's graph (and its ``graph_id``
  cannot be patched away), so the thread's own policy applies to every run on it;
* **2** two concurrent runs on a `ticket_triage` thread: exactly one runs and the
  other is a 409, whatever strategy the client sent (50 concurrent pairs of each
  kind, through the API and through the SSE route);
* **5** a new message on a paused ticket (or a ``goto``, a run without input, a fork
  from an earlier checkpoint) is a 409 that names the pending approval, never a
  silent replacement of it.

Every refusal leaves the thread exactly as it was (`tests/integration/refusal.py`).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import httpx
import pytest
from langgraph_sdk.client import LangGraphClient

from migrations_playbook.staging.server import DevServer
from tests.integration.refusal import refusal, thread_snapshot

REFUND = "Please refund the double charge on my invoice, it is urgent"
APPROVE = {"kind": "plan_approval", "answer": "approve"}
REJECT = {"kind": "plan_approval", "answer": "reject"}
PAIRS = 50
"""Concurrent double-run pairs per kind of request (new ticket, racing answers)."""
STRATEGIES = (None, "enqueue", "reject")
"""What the clients of a pair send, in turn: the outcome must not depend on it."""


def _user(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


async def _paused_ticket(client: LangGraphClient, assistant: str = "ticket_triage") -> str:
    thread_id = (await client.threads.create())["thread_id"]
    await client.runs.wait(thread_id, assistant, input=_user(REFUND))
    return thread_id


async def _thread_of(client: LangGraphClient, kind: str) -> str:
    thread_id = (await client.threads.create())["thread_id"]
    if kind == "chat":
        await client.runs.wait(thread_id, "recycling_guide", input=_user("페트병 어떻게 버려?"))
        return thread_id
    await client.runs.wait(thread_id, "ticket_triage", input=_user(REFUND))
    if kind == "done":
        await client.runs.wait(thread_id, "ticket_triage", command={"resume": APPROVE})
    return thread_id


# -- defect 1: a thread belongs to the graph it first ran ---------------------------------------

FOREIGN_RUNS = [
    # (thread kind, thread's graph, graph of the run, request)
    pytest.param(
        "paused", "ticket_triage", "recycling_guide", {"command": {"resume": "banana"}}, id="resume-a-ticket-as-recycling"
    ),
    pytest.param(
        "paused",
        "ticket_triage",
        "campus_supervisor",
        {"input": _user("학식 메뉴 뭐야?")},
        id="message-a-paused-ticket-as-campus",
    ),
    pytest.param(
        "done",
        "ticket_triage",
        "fan_room",
        {"input": _user("LG 어때?"), "context": {"team_name": "LG"}},
        id="message-a-done-ticket-as-fan-room",
    ),
    pytest.param("chat", "recycling_guide", "ticket_triage", {"input": _user(REFUND)}, id="file-a-ticket-on-a-chat"),
]


@pytest.mark.parametrize(("kind", "owner_graph", "graph", "request_"), FOREIGN_RUNS)
async def test_a_run_through_another_graph_is_refused_naming_the_threads_graph(
    client: LangGraphClient, kind: str, owner_graph: str, graph: str, request_: dict[str, Any]
) -> None:
    thread_id = await _thread_of(client, kind)
    before = await thread_snapshot(client, thread_id)
    status, message = await refusal(client.runs.wait(thread_id, graph, **request_))
    assert status == 409, message
    assert f"thread {thread_id} belongs to {owner_graph} (the graph it first ran)" in message
    assert f"Run it with a {owner_graph} assistant" in message, "the refusal says what to do"
    assert await thread_snapshot(client, thread_id) == before


async def test_a_threads_graph_cannot_be_patched_to_let_another_graph_run_on_it(client: LangGraphClient) -> None:
    thread_id = await _paused_ticket(client)
    status, message = await refusal(client.threads.update(thread_id, metadata={"graph_id": "recycling_guide"}))
    assert (status, "belongs to ticket_triage (the graph it first ran); its graph_id cannot be changed" in message) == (403, True)
    assert (await client.threads.get(thread_id))["metadata"]["graph_id"] == "ticket_triage"
    status, message = await refusal(client.runs.wait(thread_id, "recycling_guide", command={"resume": "banana"}))
    assert (status, "belongs to ticket_triage" in message) == (409, True), message
    await client.threads.update(thread_id, metadata={"graph_id": "ticket_triage", "note": "kept"})  # no change: allowed


async def test_a_busy_ticket_refuses_a_second_run_through_another_graph(client: LangGraphClient) -> None:
    """The ticket's own policy (reject) applies, not the chat graph's (enqueue)."""
    thread_id = await _paused_ticket(client)
    first = await client.runs.create(thread_id, "ticket_triage", command={"resume": APPROVE}, after_seconds=2)
    status, message = await refusal(client.runs.create(thread_id, "campus_supervisor", input=_user("학식 메뉴 뭐야?")))
    assert status == 409, message
    assert "belongs to ticket_triage" in message
    await client.runs.join(thread_id, first["run_id"])
    assert len(await client.runs.list(thread_id, limit=20)) == 2, "the ticket run and its resume, nothing else"
    values = (await client.threads.get_state(thread_id))["values"]
    assert values["approval"]["answer"] == "approve"
    assert "intent_history" not in values, "no other graph wrote to the ticket"


# -- defect 2: two concurrent runs on a ticket, whatever the strategy ------------------------------


async def _raise_again(task: asyncio.Future[Any]) -> Any:
    raise task.exception()  # the request's own error, for `refusal` to read


async def _pair(first: Any, second: Any) -> list[tuple[str, Any]]:
    tasks = [asyncio.ensure_future(first), asyncio.ensure_future(second)]
    await asyncio.wait(tasks)
    outcomes = []
    for task in tasks:
        if task.exception() is None:
            outcomes.append(("ran", task.result()))
        else:
            outcomes.append(("refused", await refusal(_raise_again(task))))
    return outcomes


def _why(message: str) -> str:
    if "refuses a second run while one is in flight" in message or "already running" in message:
        return "busy"
    if "waits for an answer to" in message:
        return "pending approval"
    if "nothing to resume" in message:
        return "already answered"
    return message


async def _new_ticket_pair(client: LangGraphClient, assistant: str, strategy: str | None, figures: Counter[str]) -> None:
    thread_id = (await client.threads.create())["thread_id"]
    outcomes = await _pair(
        *(client.runs.create(thread_id, assistant, input=_user(REFUND), multitask_strategy=strategy) for _ in range(2))
    )
    ran = [value for outcome, value in outcomes if outcome == "ran"]
    refused = [value for outcome, value in outcomes if outcome == "refused"]
    assert (len(ran), [status for status, _ in refused]) == (1, [409]), (strategy, outcomes)
    figures[f"new ticket, strategy {strategy}: one ran, other 409 ({_why(refused[0][1])})"] += 1
    await client.runs.join(thread_id, ran[0]["run_id"])
    assert [r["run_id"] for r in await client.runs.list(thread_id, limit=10)] == [ran[0]["run_id"]]
    state = await client.threads.get_state(thread_id)
    assert [m["type"] for m in state["values"]["messages"]] == ["human"], "one ticket, filed once"
    assert [i["value"]["kind"] for t in state["tasks"] for i in t["interrupts"]] == ["plan_approval"]


async def _racing_answers_pair(client: LangGraphClient, assistant: str, strategy: str | None, figures: Counter[str]) -> None:
    thread_id = await _paused_ticket(client, assistant)
    answers = (APPROVE, REJECT)
    outcomes = await _pair(
        *(client.runs.wait(thread_id, assistant, command={"resume": a}, multitask_strategy=strategy) for a in answers)
    )
    ran = [(answer, value) for answer, (outcome, value) in zip(answers, outcomes, strict=True) if outcome == "ran"]
    refused = [value for outcome, value in outcomes if outcome == "refused"]
    assert (len(ran), [status for status, _ in refused]) == (1, [409]), (strategy, outcomes)
    figures[f"approve vs reject, strategy {strategy}: one ran, other 409 ({_why(refused[0][1])})"] += 1
    ((winner, result),) = ran
    assert result["approval"]["answer"] == winner["answer"], "the answer that got 200 is the one recorded"
    assert len(await client.runs.list(thread_id, limit=10)) == 2, "the ticket run and one resume"
    values = (await client.threads.get_state(thread_id))["values"]
    assert values["approval"]["answer"] == winner["answer"]
    assert sum(m["type"] == "ai" for m in values["messages"]) == 1, "answered once"


async def test_two_concurrent_runs_on_a_ticket_one_runs_the_other_is_a_409_whatever_the_strategy(
    client: LangGraphClient,
) -> None:
    """50 pairs of the same new ticket and 50 pairs of racing approve/reject answers, ten
    pairs in flight at a time, every other pair through an assistant the user made (the
    server reads it with one more auth handler before the insert): in every pair exactly
    one run is inserted and executes, the other gets a 409 saying why; nothing is
    dropped without an answer."""
    own = (await client.assistants.create("ticket_triage", name="double-run pairs"))["assistant_id"]
    figures: Counter[str] = Counter()
    slots = asyncio.Semaphore(10)

    async def one(index: int) -> None:
        strategy = STRATEGIES[index % len(STRATEGIES)]
        assistant = own if index % 2 else "ticket_triage"
        pair = _new_ticket_pair if index < PAIRS else _racing_answers_pair
        async with slots:
            await pair(client, assistant, strategy, figures)

    await asyncio.gather(*(one(index) for index in range(2 * PAIRS)))
    print("\ndouble-run pairs:", *(f"  {count:3d}  {what}" for what, count in sorted(figures.items())), sep="\n")
    assert sum(figures.values()) == 2 * PAIRS


async def test_two_concurrent_visible_streams_on_a_ticket_one_runs_the_other_is_a_409(
    client: LangGraphClient, dev_server: DevServer
) -> None:
    """The SSE route starts its runs with the in-process client, past the run handler: it
    takes the same per-thread admission and sends the graph's own strategy."""
    async with httpx.AsyncClient(base_url=dev_server.url, timeout=60) as http:

        async def pair() -> None:
            thread_id = (await client.threads.create())["thread_id"]
            body = {"message": REFUND, "thread_id": thread_id}
            answers = await asyncio.gather(*(http.post("/visible/ticket_triage/stream", json=body) for _ in range(2)))
            assert sorted(a.status_code for a in answers) == [200, 409], [a.text[:300] for a in answers]
            refused = next(a for a in answers if a.status_code == 409).json()["message"]
            assert "refuses a second run while one is in flight" in refused or "waits for an answer" in refused
            assert len(await client.runs.list(thread_id, limit=10)) == 1

        await asyncio.gather(*(pair() for _ in range(10)))


# -- defect 5: a paused ticket accepts only an answer --------------------------------------------

NOT_AN_ANSWER = [
    pytest.param({"input": _user("Also, my password does not work")}, id="new-message"),
    pytest.param({"command": {"goto": "respond"}}, id="goto-past-the-approval"),
    pytest.param({"input": None}, id="rerun-without-an-answer"),
]


@pytest.mark.parametrize("request_", NOT_AN_ANSWER)
async def test_a_paused_ticket_refuses_a_run_that_does_not_answer_it_and_names_the_pending_kind(
    client: LangGraphClient, request_: dict[str, Any]
) -> None:
    thread_id = await _paused_ticket(client)
    before = await thread_snapshot(client, thread_id)
    status, message = await refusal(client.runs.wait(thread_id, "ticket_triage", **request_))
    assert status == 409, message
    assert f"thread {thread_id} waits for an answer to plan_approval" in message
    assert "command={'resume': {'kind': 'plan_approval', 'answer': 'approve'}}" in message, "says what to send"
    assert await thread_snapshot(client, thread_id) == before, "the approval is still pending, unchanged"
    result = await client.runs.wait(thread_id, "ticket_triage", command={"resume": APPROVE})
    assert result["approval"]["answer"] == "approve"


async def test_an_answered_ticket_takes_a_new_message(client: LangGraphClient) -> None:
    """The rule is about a pending approval only: once answered, the thread takes a new turn."""
    thread_id = await _thread_of(client, "done")
    result = await client.runs.wait(thread_id, "ticket_triage", input=_user("One more: my password does not work"))
    assert [m["type"] for m in result["messages"]][-1] == "human"
    assert result["__interrupt__"][0]["value"]["kind"] in {"plan_approval", "report_choice", "clarification"}


async def test_a_paused_ticket_refuses_a_new_message_forked_from_an_earlier_checkpoint(client: LangGraphClient) -> None:
    """A fork would supersede the pending approval at the head just as silently."""
    thread_id = await _paused_ticket(client)
    before = await thread_snapshot(client, thread_id)
    earliest = before["history"][-1]["checkpoint_id"]
    status, message = await refusal(
        client.runs.wait(thread_id, "ticket_triage", input=_user("A different ticket"), checkpoint_id=earliest)
    )
    assert (status, "waits for an answer to plan_approval" in message) == (409, True), message
    assert await thread_snapshot(client, thread_id) == before
