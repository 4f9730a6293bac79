"""Every graph registered in langgraph.json is served: schemas and topology answer."""

from __future__ import annotations

import json

import pytest
from langgraph_sdk.client import LangGraphClient

from tests.conftest import REPO_ROOT

GRAPH_IDS = sorted(json.loads((REPO_ROOT / "langgraph.json").read_text())["graphs"])


@pytest.mark.parametrize("graph_id", GRAPH_IDS)
async def test_schemas_and_graph_answer_for_every_graph(client: LangGraphClient, graph_id: str) -> None:
    (assistant,) = await client.assistants.search(graph_id=graph_id, limit=1)
    schemas = await client.assistants.get_schemas(assistant["assistant_id"])
    assert "flow_version" in schemas["state_schema"]["properties"]
    assert "model" in schemas["context_schema"]["properties"]
    drawn = await client.assistants.get_graph(assistant["assistant_id"], xray=True)
    node_ids = {node["id"] for node in drawn["nodes"]}
    assert {"__start__", "__end__"} <= node_ids
    assert len(node_ids) > 2


async def test_assistant_can_pick_the_model_through_context(client: LangGraphClient) -> None:
    assistant = await client.assistants.create("ticket_triage", context={"model": "offline"}, name="offline-triage")
    thread = await client.threads.create()
    result = await client.runs.wait(
        thread["thread_id"],
        assistant["assistant_id"],
        input={"messages": [{"role": "user", "content": "Please send a statement report"}]},
    )
    assert result["__interrupt__"][0]["value"]["kind"] == "report_choice"


async def test_unknown_model_in_context_fails_the_run_with_a_clear_error(client: LangGraphClient) -> None:
    assistant = await client.assistants.create("ticket_triage", context={"model": "llama:7b"})
    thread = await client.threads.create()
    run = await client.runs.create(
        thread["thread_id"],
        assistant["assistant_id"],
        input={"messages": [{"role": "user", "content": "refund please"}]},
    )
    await client.runs.join(thread["thread_id"], run["run_id"])
    finished = await client.runs.get(thread["thread_id"], run["run_id"])
    assert finished["status"] == "error"
    state = await client.threads.get(thread["thread_id"])
    assert "unknown model spec" in json.dumps(state.get("error") or finished)
