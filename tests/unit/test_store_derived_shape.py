"""The live shape a checkpointer's own rows show (`store_shape`), for a gate run without ``--live-contract``.

The checkpoints here are built by hand, in the shape the savers store them (`stores.Head`: the
decoded checkpoint tuple and its pending writes with their task paths), one per position the
derivation reads: a thread paused at a node, a finished sibling routing onward, a call paused
inside a subgraph, a waiting edge, a pending `Send`, a Functional API entrypoint. The stand-in
compiled from a derived shape is then asked, through LangGraph's own ``get_state``, where a
thread is paused. The same behaviours on real SQLite and PostgreSQL stores, through the CLI,
are in tests/integration/test_gate_checkpointer_unlocked.py.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import CheckpointTuple
from langgraph.types import Send

from migrations_playbook.errors import UsageError
from migrations_playbook.sources.base import SourceRequest
from migrations_playbook.sources.store.attribution import Attribution
from migrations_playbook.sources.store.reads import HeadsSaver, snapshot
from migrations_playbook.sources.store.shape import NOT_DERIVED, DerivedShape, derive_shapes, is_state_key, shapes_note
from migrations_playbook.sources.store.source import StoreSource
from migrations_playbook.sources.store.standin import UNKNOWN_REDUCER, StandIns, build, keep_stored
from migrations_playbook.sources.store.tables import Head, ThreadHeads, Write

CHECKPOINT_ID = "1f1ee45c-da11-69aa-8000-dd7c3aec35b6"


def _head(
    ns: str = "",
    *,
    versions: dict[str, int],
    seen: dict[str, dict[str, int]] | None = None,
    values: dict[str, Any] | None = None,
    writes: tuple[tuple[str, str, Any], ...] = (),
    metadata: dict[str, Any] | None = None,
) -> Head:
    """One namespace head as a saver stores it; ``writes``: (task path, channel, value)."""
    checkpoint: Any = {
        "v": 4,
        "id": CHECKPOINT_ID,
        "ts": "2026-01-01T00:00:00+00:00",
        "channel_values": values or {},
        "channel_versions": versions,
        "versions_seen": {"__input__": {}, **(seen or {})},
        "updated_channels": None,
    }
    decoded = tuple(Write(task_id=f"task-{i}", task_path=path, channel=ch, value=v) for i, (path, ch, v) in enumerate(writes))
    config: RunnableConfig = {"configurable": {"thread_id": "t", "checkpoint_ns": ns, "checkpoint_id": CHECKPOINT_ID}}
    saved = CheckpointTuple(
        config=config,
        checkpoint=checkpoint,
        metadata=metadata or {},  # type: ignore[arg-type]  # CheckpointMetadata is a total=False TypedDict; a plain dict here
        pending_writes=[(w.task_id, w.channel, w.value) for w in decoded],
    )
    return Head(ns=ns, saved=saved, writes=decoded, metadata=metadata or {})


def _thread(thread_id: str, *heads: Head) -> ThreadHeads:
    return ThreadHeads(thread_id=thread_id, heads={h.ns: h for h in heads})


def _paused_at_triage(thread_id: str = "paused", graph_id: str = "helpdesk") -> ThreadHeads:
    """intake ran, triage is scheduled and waits at an interrupt (helpdesk-triage-0 of the store fixture)."""
    return _thread(
        thread_id,
        _head(
            versions={"__start__": 1, "branch:to:intake": 2, "branch:to:triage": 3, "request": 2, "notes": 3},
            seen={"__start__": {"__start__": 1}, "intake": {"branch:to:intake": 2}},
            values={"branch:to:triage": None, "request": "slow page", "notes": ["intake"]},
            writes=(("~__pregel_pull, triage", "__interrupt__", []),),
            metadata={"graph_id": graph_id, "writes": {"intake": {"notes": ["intake"]}}},
        ),
    )


def test_paused_thread_gives_nodes_from_triggers_seen_nodes_and_its_task_path_and_keys_from_its_channels() -> None:
    shape = DerivedShape("helpdesk")
    shape.add(_paused_at_triage())
    root = shape.levels[""]
    assert root.names() == ["intake", "triage"]
    assert root.fields == {"request", "notes"}  # not __start__, not branch:to:*
    assert not root.functional


@pytest.mark.parametrize(
    ("channel", "state_key"),
    [
        pytest.param("messages", True, id="state-key"),
        pytest.param("__start__", False, id="start"),
        pytest.param("__pregel_tasks", False, id="sends"),
        pytest.param("__previous__", False, id="entrypoint-saved-value"),
        pytest.param("branch:to:triage", False, id="trigger"),
        pytest.param("join:a+b:c", False, id="waiting-edge"),
        pytest.param("branch:triage:route:respond", False, id="old-branch-format"),
        pytest.param("start:intake", False, id="old-start-format"),
    ],
)
def test_only_channels_langgraph_does_not_make_are_state_keys(channel: str, state_key: bool) -> None:
    assert is_state_key(channel) is state_key


def test_finished_siblings_routes_a_waiting_edge_and_a_pending_send_name_their_nodes() -> None:
    thread = _thread(
        "fan",
        _head(
            versions={"__start__": 1, "branch:to:a": 2, "join:a+b:join": 3, "topic": 2, "__pregel_tasks": 3},
            seen={"__start__": {"__start__": 1}, "a": {"branch:to:a": 2}},
            values={"topic": "x", "__pregel_tasks": [Send("worker", {"item": 1})]},
            writes=(
                ("~__pregel_pull, b2", "__interrupt__", []),
                ("~__pregel_pull, side", "branch:to:archive", None),
                ("~__pregel_pull, side", "log", ["side"]),
            ),
        ),
    )
    shape = DerivedShape("fan")
    shape.add(thread)
    assert shape.levels[""].names() == ["a", "archive", "b", "b2", "join", "side", "worker"]
    assert shape.levels[""].fields == {"topic", "log"}  # a pending write's key is a key the live state had


def test_a_subgraph_namespace_makes_its_node_a_subgraph_with_its_own_nodes_and_keys() -> None:
    thread = _thread(
        "esc",
        _head(
            versions={"__start__": 1, "branch:to:review": 2, "case": 2},
            seen={"__start__": {"__start__": 1}},
            values={"branch:to:review": None, "case": "C-7"},
            writes=(("~__pregel_pull, review", "__interrupt__", []),),
        ),
        _head(
            "review:ef226b39-e2ec-ddd9-b67f-44ba11b06e5b",
            versions={"__start__": 1, "branch:to:check": 2, "branch:to:confirm": 3, "case": 1, "level": 3},
            seen={"__start__": {"__start__": 1}, "check": {"branch:to:check": 2}},
            values={"branch:to:confirm": None, "case": "C-7", "level": 2},
            writes=(("~__pregel_pull, confirm", "__interrupt__", []),),
        ),
    )
    shape = DerivedShape("escalation")
    shape.add(thread)
    lock = shape.lock()
    assert lock["nodes"] == ["review", "review:check", "review:confirm"]
    assert set(lock["subgraphs"]) == {"review"}
    assert set(lock["subgraphs"]["review"]["fields"]) == {"case", "level"}
    assert lock["fields"] == {"case": {"reducer": UNKNOWN_REDUCER}}
    assert lock["edges"] == []  # the store shows no edge


def test_nested_subgraph_namespaces_name_every_enclosing_level() -> None:
    thread = _thread(
        "deep",
        _head(versions={"__start__": 1, "branch:to:outer": 2}, seen={"__start__": {"__start__": 1}}),
        _head("outer:1|inner:2", versions={"__start__": 1, "branch:to:leaf": 2, "k": 2}),
    )
    shape = DerivedShape("deep")
    shape.add(thread)
    assert sorted(shape.levels) == ["", "outer", "outer:inner"]
    assert shape.lock()["nodes"] == ["outer", "outer:inner", "outer:inner:leaf"]


@pytest.mark.parametrize(
    "head",
    [
        pytest.param(
            _head(versions={"__start__": 1}, writes=(("~__pregel_pull, two_step", "__interrupt__", []),)),
            id="first-call-paused",
        ),
        pytest.param(
            _head(
                versions={"__start__": 1, "__end__": 2, "__previous__": 2},
                seen={"two_step": {"__start__": 1}, "lookup": {}, "__interrupt__": {"__start__": 1}},
                values={"__previous__": {"done": True}, "__end__": {"done": True}},
            ),
            id="finished",
        ),
    ],
)
def test_an_entrypoint_is_told_from_its_channels_and_its_tasks_are_not_nodes(head: Head) -> None:
    shape = DerivedShape("func_steps")
    shape.add(_thread("f", head))
    lock = shape.lock()
    assert (lock["state_kind"], lock["nodes"], lock["fields"]) == ("functional", ["two_step"], {})


def test_threads_are_attributed_as_the_scan_attributes_them() -> None:
    shapes = derive_shapes(
        [_paused_at_triage("a", "helpdesk"), _paused_at_triage("b", "other"), _thread("c", _head(versions={"x": 1}))],
        Attribution(single="helpdesk"),  # an unlabeled thread belongs to the candidate's one graph
    )
    assert {g: s.threads for g, s in shapes.items()} == {"helpdesk": 2, "other": 1}
    assert shapes["helpdesk"].levels[""].fields == {"request", "notes", "x"}


def test_the_stand_in_of_a_derived_shape_shows_the_thread_paused_at_its_live_node() -> None:
    """LangGraph's own get_state, on the stand-in compiled from the derived shape, schedules the node
    the thread is paused at (what NODE_MISSING reads), with the values as stored."""
    thread = _paused_at_triage()
    shape = DerivedShape("helpdesk")
    shape.add(thread)
    saver = HeadsSaver()
    snap = snapshot(thread, "helpdesk", shape.lock(), StandIns(shape.lock(), saver), saver)
    assert snap.unreadable is None
    assert (snap.next, snap.pending) == (("triage",), ("triage",))
    assert snap.values == {"request": "slow page", "notes": ["intake"]}


def test_an_unknown_reducer_keeps_the_stored_value_and_fills_an_empty_channel() -> None:
    graph = build({"graph_id": "g", "nodes": ["n"], "fields": {"log": {"reducer": UNKNOWN_REDUCER}}})
    channel = graph.channels["log"].from_checkpoint(["stored"])
    channel.update([["pending"]])
    assert channel.get() == ["stored"]
    empty = graph.channels["log"].copy()
    empty.update([["first"], ["second"]])
    assert empty.get() == ["first"]
    assert keep_stored(["a"], ["b"]) == ["a"]


def test_the_note_says_what_was_derived_what_was_not_and_what_gives_the_full_check() -> None:
    shapes = derive_shapes([_paused_at_triage()], Attribution())
    note = shapes_note(shapes, ["helpdesk"])
    assert note.startswith("live shape derived from the store (no --live-contract): helpdesk: nodes intake, triage; ")
    assert "state keys notes, request (from 1 thread(s))" in note
    assert f"; not derived: {NOT_DERIVED[0]}" in note and "reducers" in NOT_DERIVED[0]
    assert note.endswith("; pass --live-contract for the full check")


def test_a_command_without_a_candidate_still_needs_the_live_contract() -> None:
    """inflight and snapshot bring no candidate (no ``owners``): nothing tells them what was not derived."""

    async def ids() -> list[str]:
        async with StoreSource(SourceRequest(checkpointer="sqlite:///nowhere/x.db")) as source:
            return await source.graph_ids([])

    with pytest.raises(UsageError, match="--checkpointer needs --live-contract DIR"):
        asyncio.run(ids())
