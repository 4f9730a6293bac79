"""The DeltaChannel message history behaves like `add_messages`, whatever form its writes come back in."""

from __future__ import annotations

from typing import Annotated

import pytest
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    HumanMessage,
    RemoveMessage,
    ToolMessage,
)
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict

from graphs.common.history import SNAPSHOT_FREQUENCY, MessageHistory, add_messages_batch

CALL = {"name": "lookup", "args": {"q": "x"}, "id": "call-1", "type": "tool_call"}
WRITES = [
    [HumanMessage("q1", id="h1")],
    [AIMessage("", id="a1", tool_calls=[CALL])],
    [ToolMessage("result", tool_call_id="call-1", id="t1")],
    [AIMessage("answer", id="a2")],
    [AIMessage("[LG 팬] answer", id="a2")],  # replace by id
    [HumanMessage("q2", id="h2"), RemoveMessage(id="t1")],
]


def _fold(writes: list) -> list:
    state: list = []
    for write in writes:
        state = add_messages(state, write)
    return state


@pytest.mark.parametrize("split", range(len(WRITES) + 1), ids=lambda n: f"split-at-{n}")
def test_batch_reducer_is_batching_invariant_and_equals_add_messages(split: int) -> None:
    in_two = add_messages_batch(add_messages_batch([], WRITES[:split]), WRITES[split:])
    assert in_two == add_messages_batch([], WRITES) == _fold(WRITES)


def test_writes_read_back_as_dumped_dicts_replay_to_the_same_messages() -> None:
    """Agent Server's API reads checkpoints with a JSON-only hook: messages arrive as dicts."""
    dumped = [[message.model_dump() for message in write] for write in WRITES]
    assert add_messages_batch([], dumped) == _fold(WRITES)
    assert add_messages_batch([m.model_dump() for m in _fold(WRITES[:2])], dumped[2:]) == _fold(WRITES)


def test_plain_role_dicts_still_convert_like_add_messages() -> None:
    write = [{"role": "user", "content": "hi", "id": "u1"}]
    assert add_messages_batch([], [write]) == add_messages([], write)


class _Delta(TypedDict):
    messages: MessageHistory


class _Plain(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def _echo(state: dict) -> dict:
    last = state["messages"][-1]
    return {"messages": [AIMessage(f"echo {last.content}", id=f"ai-{last.id}")]}


def _graph(schema: type):
    builder = StateGraph(schema)
    builder.add_node("echo", _echo)
    builder.add_edge(START, "echo")
    return builder.compile(checkpointer=InMemorySaver())


def test_thread_longer_than_a_snapshot_reads_back_like_add_messages() -> None:
    turns = SNAPSHOT_FREQUENCY  # two writes a turn: crosses at least one snapshot
    graphs = {"delta": _graph(_Delta), "plain": _graph(_Plain)}
    config = {"configurable": {"thread_id": "t"}}
    for number in range(turns):
        for graph in graphs.values():
            graph.invoke({"messages": [HumanMessage(f"q{number}", id=f"h{number}")]}, config)
    delta, plain = (g.get_state(config).values["messages"] for g in graphs.values())
    assert delta == plain and len(delta) == 2 * turns
    delta_history = [s.values.get("messages") for s in graphs["delta"].get_state_history(config)]
    plain_history = [s.values.get("messages") for s in graphs["plain"].get_state_history(config)]
    assert delta_history == plain_history


@pytest.mark.parametrize(
    "write",
    [
        pytest.param(["plain string"], id="string"),
        pytest.param([{"role": "user", "content": "a dict without id"}], id="dict"),
        pytest.param([("user", "a tuple")], id="tuple"),
        pytest.param("a bare string", id="bare-string"),
    ],
)
def test_a_message_written_without_an_id_gets_the_same_id_at_every_replay(write) -> None:
    """Issue 12 defect 8: DeltaChannel replays the stored writes on every read."""
    from graphs.common.history import add_messages_batch

    first = add_messages_batch([], [write, [{"role": "user", "content": "second"}]])
    again = add_messages_batch([], [write, [{"role": "user", "content": "second"}]])
    stepwise = add_messages_batch(add_messages_batch([], [write]), [[{"role": "user", "content": "second"}]])
    assert [m.id for m in first] == [m.id for m in again] == [m.id for m in stepwise]
    assert len({m.id for m in first}) == 2 and all(first_id for first_id in (m.id for m in first))


def test_the_same_text_twice_is_two_messages() -> None:
    from graphs.common.history import add_messages_batch

    messages = add_messages_batch([], [["같은 말", "같은 말"], ["같은 말"]])
    assert len(messages) == 3 and len({m.id for m in messages}) == 3
