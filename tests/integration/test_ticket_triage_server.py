"""ticket_triage on a real `langgraph dev`, through langgraph-sdk."""

from __future__ import annotations

import uuid

import httpx
import pytest
from langgraph_sdk.client import LangGraphClient

GRAPH = "ticket_triage"
REFUND = "Please refund the double charge on my invoice, it is urgent"


async def _paused_thread(client: LangGraphClient, text: str = REFUND) -> tuple[str, dict]:
    tag = str(uuid.uuid4())
    thread = await client.threads.create(metadata={"test_tag": tag})
    result = await client.runs.wait(thread["thread_id"], GRAPH, input={"messages": [{"role": "user", "content": text}]})
    return thread["thread_id"], {"tag": tag, "result": result}


async def test_thread_reaches_typed_approval_and_is_found_by_status_search(client: LangGraphClient) -> None:
    thread_id, info = await _paused_thread(client)
    (interrupt,) = info["result"]["__interrupt__"]
    assert interrupt["value"]["kind"] == "plan_approval"
    assert interrupt["value"]["options"] == ["approve", "reject"]
    assert interrupt["value"]["resume_at"] == "triage"

    found = await client.threads.search(status="interrupted", metadata={"test_tag": info["tag"]})
    assert [t["thread_id"] for t in found] == [thread_id]
    state = await client.threads.get_state(thread_id)
    assert state["next"] == ["triage"]
    assert state["values"]["flow_version"] == 2
    assert state["tasks"][0]["interrupts"][0]["value"]["kind"] == "plan_approval"


async def test_history_lists_checkpoints_in_order(client: LangGraphClient) -> None:
    thread_id, _ = await _paused_thread(client)
    history = await client.threads.get_history(thread_id, limit=20)
    steps = [h["metadata"]["step"] for h in history]  # newest first
    assert steps == sorted(steps, reverse=True)
    assert steps[-1] == -1
    assert [h["next"] for h in reversed(history)] == [["__start__"], ["intake"], ["triage"]]


async def test_correct_resume_finishes_with_a_response_reflecting_the_approval(client: LangGraphClient) -> None:
    thread_id, _ = await _paused_thread(client)
    result = await client.runs.wait(thread_id, GRAPH, command={"resume": {"kind": "plan_approval", "answer": "approve"}})
    assert "__interrupt__" not in result
    assert result["approval"]["answer"] == "approve"
    assert result["policy"]["allowed"] is True
    assert "Decision on the plan approval: approved" in result["response"]
    thread = await client.threads.get(thread_id)
    assert thread["status"] == "idle"


@pytest.mark.parametrize(
    ("resume", "message"),
    [
        pytest.param({"kind": "report_choice", "answer": "summary"}, "the resume answers 'report_choice'", id="wrong-kind"),
        pytest.param({"kind": "plan_approval", "answer": "perhaps"}, "'perhaps' is not an answer", id="not-an-option"),
        pytest.param({"answer": "approve"}, "must name the approval", id="kind-missing"),
    ],
)
async def test_wrong_resume_is_refused_and_leaves_the_thread_as_it_was(client: LangGraphClient, resume, message) -> None:
    """Refused by the server (422) before any run starts: state and history untouched."""
    thread_id, _ = await _paused_thread(client)
    before = (await client.threads.get_state(thread_id), await client.threads.get_history(thread_id))
    with pytest.raises(httpx.HTTPStatusError) as refused:
        await client.runs.wait(thread_id, GRAPH, command={"resume": resume})
    assert refused.value.response.status_code == 422
    assert message in refused.value.response.json()["detail"]
    assert (await client.threads.get_state(thread_id), await client.threads.get_history(thread_id)) == before
    assert (await client.threads.get(thread_id))["status"] == "interrupted"


async def test_thread_from_before_flow_version_skips_policy_check(client: LangGraphClient) -> None:
    """Old-shaped checkpoint: past intake with no flow_version stamp (what v1 code left)."""
    thread = await client.threads.create(graph_id=GRAPH)
    thread_id = thread["thread_id"]
    await client.threads.update_state(thread_id, {"messages": [{"role": "user", "content": REFUND}]}, as_node="intake")
    paused = await client.runs.wait(thread_id, GRAPH, input=None)
    assert paused["__interrupt__"][0]["value"]["next_step"] == "respond"
    result = await client.runs.wait(thread_id, GRAPH, command={"resume": "approve"})
    assert "flow_version" not in result
    assert "policy" not in result
    assert result["current_step"] == "respond"
