"""Chat turns <-> checkpoint ranges (migrations_playbook/turns.py), on histories of the real graphs.

The histories are made here, in-process, by the real compiled graphs with an
in-memory checkpointer, and put in the shape `threads.get_history` returns
(tests/integration/test_turns_server.py checks the same on a real server).
"""

from __future__ import annotations

import itertools
import uuid
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from graphs.recycling_guide.graph import builder as guide_builder
from graphs.ticket_triage.graph import builder as triage_builder
from migrations_playbook.sources.api import turns

QUESTIONS = ["페트병 어떻게 버려?", "라벨은?", "지금까지 뭐 물어봤지?"]


def _api_history(graph: Any, config: dict) -> list[dict[str, Any]]:
    """`get_state_history` as the Agent Server API serializes it (newest first)."""
    entries = []
    for snapshot in graph.get_state_history(config):
        values = dict(snapshot.values)
        if "messages" in values:
            values["messages"] = [m.model_dump() for m in values["messages"]]
        parent = snapshot.parent_config["configurable"]["checkpoint_id"] if snapshot.parent_config else None
        entries.append(
            {
                "values": values,
                "next": list(snapshot.next),
                "checkpoint": {"checkpoint_id": snapshot.config["configurable"]["checkpoint_id"]},
                "parent_checkpoint": {"checkpoint_id": parent} if parent else None,
                "metadata": {**snapshot.metadata, "run_id": f"run-{snapshot.metadata.get('step')}"},
            }
        )
    return entries


def _user(text: str) -> dict:
    return {"messages": [{"role": "user", "content": text}]}


@pytest.fixture
def guide_thread() -> tuple[Any, dict]:
    graph = guide_builder.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    for text in QUESTIONS:
        graph.invoke(_user(text), config)
    return graph, config


def test_each_human_message_opens_one_turn_with_its_checkpoint_range(guide_thread: tuple[Any, dict]) -> None:
    graph, config = guide_thread
    history = _api_history(graph, config)
    mapped = turns.turns_from_history(history)
    assert [t.text for t in mapped] == QUESTIONS
    assert [t.index for t in mapped] == [1, 2, 3]
    assert sum(t.checkpoints for t in mapped) == len(history)
    assert all(t.complete for t in mapped)
    assert mapped[0].first_step == -1
    for before, after in itertools.pairwise(mapped):
        assert after.first_step == before.last_step + 1, "no gap and no overlap between turns"
        assert after.fork_from == before.last_checkpoint_id, "a turn forks from the end of the previous one"


def test_the_input_checkpoint_belongs_to_the_turn_it_opens(guide_thread: tuple[Any, dict]) -> None:
    graph, config = guide_thread
    history = _api_history(graph, config)
    by_id = {e["checkpoint"]["checkpoint_id"]: e for e in history}
    for t in turns.turns_from_history(history):
        assert by_id[t.first_checkpoint_id]["metadata"]["source"] == "input"
        assert by_id[t.last_checkpoint_id]["next"] == []


def test_turn_one_forks_from_the_empty_opening_checkpoint(guide_thread: tuple[Any, dict]) -> None:
    graph, config = guide_thread
    first = turns.turns_from_history(_api_history(graph, config))[0]
    assert first.fork_from == first.first_checkpoint_id


def test_a_rerun_fork_gets_its_own_branch_and_the_original_keeps_its_turns(guide_thread: tuple[Any, dict]) -> None:
    graph, config = guide_thread
    history = _api_history(graph, config)
    original_head = history[0]["checkpoint"]["checkpoint_id"]
    second = turns.turns_from_history(history)[1]

    fork = {"configurable": {**config["configurable"], "checkpoint_id": second.fork_from}}
    graph.invoke(_user("뚜껑은?"), fork)

    after = _api_history(graph, config)
    new_branch = turns.turns_from_history(after)  # newest head: the fork
    assert [t.text for t in new_branch] == [QUESTIONS[0], "뚜껑은?"]
    old_branch = turns.turns_from_history(after, head=original_head)
    assert [t.text for t in old_branch] == QUESTIONS
    assert [t.first_checkpoint_id for t in old_branch] == [t.first_checkpoint_id for t in turns.turns_from_history(history)]


def test_a_paused_approval_is_one_pending_turn_until_its_resume_completes_it() -> None:
    graph = triage_builder.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    graph.invoke(_user("Please refund the double charge"), config)
    (paused,) = turns.turns_from_history(_api_history(graph, config))
    assert not paused.complete

    graph.invoke(Command(resume={"kind": "plan_approval", "answer": "approve"}), config)
    (done,) = turns.turns_from_history(_api_history(graph, config))
    assert done.complete
    assert done.first_checkpoint_id == paused.first_checkpoint_id
    assert done.checkpoints > paused.checkpoints


def test_an_empty_history_has_no_turns() -> None:
    assert turns.turns_from_history([]) == []


def test_a_thread_seeded_without_an_input_cannot_rerun_its_first_turn() -> None:
    entry = {
        "values": {"messages": [{"type": "human", "id": "h1", "content": "seeded"}]},
        "next": [],
        "checkpoint": {"checkpoint_id": "c1"},
        "parent_checkpoint": None,
        "metadata": {"step": 0, "source": "update"},
    }
    (only,) = turns.turns_from_history([entry])
    assert only.fork_from is None


@pytest.mark.parametrize("number", [0, 4, -1])
def test_a_turn_number_out_of_range_names_the_range(guide_thread: tuple[Any, dict], number: int) -> None:
    mapped = turns.turns_from_history(_api_history(*guide_thread))
    with pytest.raises(turns.TurnsError, match="the thread has 3 turn"):
        turns.turn(mapped, number)


def test_an_unknown_head_checkpoint_is_an_error(guide_thread: tuple[Any, dict]) -> None:
    with pytest.raises(turns.TurnsError, match="not in the thread's history"):
        turns.turns_from_history(_api_history(*guide_thread), head="nope")


def test_table_and_json_show_every_turn(guide_thread: tuple[Any, dict]) -> None:
    mapped = turns.turns_from_history(_api_history(*guide_thread))
    table = turns.render_table(mapped).splitlines()
    assert table[0].split()[:4] == ["turn", "steps", "checkpoints", "status"]
    assert len(table) == 1 + len(QUESTIONS)
    data = turns.to_json("t-1", "head", mapped)
    assert data["turns_result_version"] == "1"
    assert [t["text"] for t in data["turns"]] == QUESTIONS
