"""Each graph's async twins do what its sync bodies do (graphs.common.dual, issue 29).

The server runs the async bodies (``ainvoke``/``astream``); scripts and most tests run the
sync ones (``invoke``), and the playbook's lock is read from the sync ones. The same
conversations are played both ways on InMemorySaver and must leave the same state
(message ids, timestamps and generated ids aside); a ticket paused by one body is resumed
by the other without asking the model again (the classification task has one name).
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any
from uuid import UUID

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import BaseMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from graphs.campus_supervisor.graph import builder as campus_builder
from graphs.common.dual import SyncAndAsyncNode, both
from graphs.fan_room.graph import builder as fan_builder
from graphs.recycling_guide.graph import builder as recycling_builder
from graphs.ticket_triage.graph import builder as ticket_builder

VOLATILE = ("id", "requested_at", "answered_at", "answer_id")
"""Keys whose values differ between two runs of the same conversation (generated ids, clocks)."""


def _human(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


APPROVE = Command(resume={"kind": "plan_approval", "answer": "approve"})

CONVERSATIONS: dict[str, tuple[Any, list[tuple[Any, dict[str, Any] | None]]]] = {
    "campus_supervisor": (
        campus_builder,
        [(_human("도서관 몇 시까지 열어요?"), None), (_human("3층 좌석 남았어?"), None), (_human("오늘 학식 메뉴 뭐야?"), None)],
    ),
    "ticket_triage": (ticket_builder, [(_human("요금이 두 번 청구됐어요. 환불해 주세요"), None), (APPROVE, None)]),
    "fan_room": (fan_builder, [(_human("오늘 경기 어땠어?"), {"team_name": "LG"}), (_human("내일은?"), {"team_name": "KIA"})]),
    "recycling_guide": (
        recycling_builder,
        [(_human("페트병은 어떻게 버려요?"), None), (_human("라벨은?"), None), (_human("요약해줘"), None)],
    ),
}


def _plain(value: Any) -> Any:
    """The value with `VOLATILE` keys dropped, messages as their dicts."""
    if isinstance(value, BaseMessage):
        value = value.model_dump()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _sync(builder: Any, turns: list[tuple[Any, dict[str, Any] | None]]) -> Any:
    graph = builder.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    for value, context in turns:
        graph.invoke(value, config, context=context)
    return graph.get_state(config).values


async def _async(builder: Any, turns: list[tuple[Any, dict[str, Any] | None]]) -> Any:
    graph = builder.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    for value, context in turns:
        await graph.ainvoke(value, config, context=context)
    return (await graph.aget_state(config)).values


@pytest.mark.parametrize("graph_id", list(CONVERSATIONS))
def test_async_bodies_leave_the_state_the_sync_bodies_leave(graph_id: str) -> None:
    builder, turns = CONVERSATIONS[graph_id]
    sync_state = _sync(builder, turns)
    async_state = asyncio.run(_async(builder, turns))
    assert _plain(async_state) == _plain(sync_state)
    assert sync_state["messages"], "the conversation wrote nothing"


class ChatModelCalls(BaseCallbackHandler):
    """Counts chat model calls."""

    run_inline = True

    def __init__(self) -> None:
        self.calls = 0

    def on_chat_model_start(self, serialized: Any, messages: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self.calls += 1


@pytest.mark.parametrize("pause_with", ["sync", "async"])
def test_a_ticket_paused_by_one_body_resumes_in_the_other_without_classifying_again(pause_with: str) -> None:
    graph = ticket_builder.compile(checkpointer=InMemorySaver())
    counter = ChatModelCalls()
    config: dict[str, Any] = {"configurable": {"thread_id": str(uuid.uuid4())}, "callbacks": [counter]}
    ticket = _human("요금이 두 번 청구됐어요. 환불해 주세요")
    if pause_with == "sync":
        graph.invoke(ticket, config)
        assert counter.calls == 1  # the classification
        result = asyncio.run(graph.ainvoke(APPROVE, config))
    else:
        asyncio.run(graph.ainvoke(ticket, config))
        assert counter.calls == 1
        result = graph.invoke(APPROVE, config)
    assert counter.calls == 2, "the resume asked the model to classify again (only respond should call it)"
    assert result["approval"]["answer"] == "approve"
    assert result["response"]


def _state_node(state: dict[str, Any]) -> dict[str, Any]:
    return state


async def _astate_node(state: dict[str, Any]) -> dict[str, Any]:
    return state


async def _other(state: dict[str, Any], runtime: Any) -> dict[str, Any]:
    return state


@pytest.mark.parametrize(
    ("func", "afunc", "message"),
    [
        pytest.param(_astate_node, _astate_node, "must be a plain function", id="async-sync-body"),
        pytest.param(_state_node, _state_node, "must be an async function", id="sync-async-body"),
        pytest.param(_state_node, _other, "take different parameters", id="different-parameters"),
    ],
)
def test_a_node_whose_two_bodies_do_not_match_is_refused_when_the_graph_is_built(func: Any, afunc: Any, message: str) -> None:
    with pytest.raises(TypeError, match=message):
        both(func, afunc)


def test_a_node_is_named_after_its_sync_body_and_keeps_both_bodies() -> None:
    node = both(_state_node, _astate_node)
    assert isinstance(node, SyncAndAsyncNode)
    assert (node.name, node.func, node.afunc) == ("_state_node", _state_node, _astate_node)
