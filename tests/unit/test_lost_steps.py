"""A lost step is a node the serving code no longer has, matched by node, not by task id (issue 25).

`sources.api.state.lost_steps` is the one implementation the gate (`iter_threads`), migrate's reads
(`sources.api.views`) and the runtime guard use. The records and states here are shaped like Agent
Server's: the record's ``interrupts`` keyed by task id, the state's tasks with ids and names.
"""

from __future__ import annotations

from typing import Any

from migrations_playbook.sources.api.state import (
    LOST_STEP,
    MIGRATED_STATE_KEY,
    lost_nodes,
    lost_steps,
    record_is_stale,
)

NODES = {"intake", "enrich", "triage", "respond"}
"""The serving code's nodes: `triage` is still there."""
RENAMED = {"intake", "enrich", "assess", "respond"}
"""The serving code's nodes after `triage` was renamed `assess`."""
LOCK = {"interrupt_nodes": ["triage"]}


def _record(*task_ids: str) -> dict[str, Any]:
    return {"interrupts": {t: [{"id": f"i-{t}", "value": {"kind": "plan_approval"}}] for t in task_ids}}


def _task(task_id: str, name: str, **extra: Any) -> dict[str, Any]:
    return {"id": task_id, "name": name, "interrupts": [], "result": None, "error": None, **extra}


def test_the_same_node_scheduled_again_under_a_new_task_id_is_not_lost() -> None:
    """A value-only repair (`update_state`): the record keeps the old task id, the state has a new one."""
    state = {"next": ["triage"], "tasks": [_task("task-new", "triage")]}
    assert lost_steps(_record("task-old"), state, lock=LOCK, nodes=NODES) == []
    assert lost_steps(_record("task-old"), state, lock=None, nodes=NODES) == []  # no lock: matched by the scheduled node


def test_a_node_the_serving_code_no_longer_has_is_lost_and_named_from_the_lock() -> None:
    state = {"next": [], "tasks": []}  # the candidate derives nothing pending at the renamed node
    (lost,) = lost_steps(_record("task-old"), state, lock=LOCK, nodes=RENAMED)
    assert (lost.path, lost.id, lost.value) == ("triage", "i-task-old", {"kind": "plan_approval"})
    (unnamed,) = lost_steps(_record("task-old"), state, lock=None, nodes=RENAMED)
    assert unnamed.path == LOST_STEP


def test_with_a_lock_whose_interrupt_nodes_the_serving_code_all_has_nothing_is_lost() -> None:
    """The thread moved on by an update (`as_node=triage`): the record still holds the interrupt."""
    state = {"next": ["respond"], "tasks": [_task("task-r", "respond")]}
    assert lost_steps(_record("task-old"), state, lock=LOCK, nodes=NODES) == []


def test_a_task_matched_by_id_is_never_lost() -> None:
    state = {"next": ["assess"], "tasks": [_task("task-1", "assess", interrupts=[{"id": "i-task-1", "value": 1}])]}
    assert lost_steps(_record("task-1"), state, lock=LOCK, nodes=RENAMED) == []


def test_a_rescheduled_node_answers_for_one_recorded_interrupt_only_and_only_if_it_can_pause() -> None:
    """Two paused parallel branches, `a` removed: the `b` rescheduled accounts for one; `a`'s is lost.
    A finished task, or a node the live lock never pauses in, accounts for none."""
    lock = {"interrupt_nodes": ["a", "b"]}
    state = {"tasks": [_task("b-new", "b")]}
    assert lost_nodes(lost_steps(_record("a-old", "b-old"), state, lock=lock, nodes={"b", "c"})) == ["a"]
    finished = {"tasks": [_task("b-new", "b", result={"x": 1})]}
    assert len(lost_steps(_record("a-old"), finished, lock=None, nodes={"b"})) == 1
    not_pausing = {"tasks": [_task("c-new", "c")]}
    assert lost_nodes(lost_steps(_record("a-old"), not_pausing, lock=lock, nodes={"b", "c"})) == ["a"]


def test_the_node_a_record_names_decides_without_a_lock() -> None:
    """Older servers' interrupts carry ``ns`` (``node:task id``): that node is the interrupt's."""
    record = {"interrupts": {"task-old": [{"id": "i-1", "value": 1, "ns": ["triage:task-old"]}]}}
    assert lost_nodes(lost_steps(record, {"tasks": []}, lock=None, nodes=RENAMED)) == ["triage"]
    assert lost_steps(record, {"tasks": []}, lock=None, nodes=NODES) == []


def test_the_plans_from_node_picks_the_name_among_several_gone() -> None:
    lock = {"interrupt_nodes": ["triage", "review"]}
    lost = lost_steps(_record("t"), {"tasks": []}, lock=lock, nodes={"assess"}, moved_from=["triage"])
    assert lost_nodes(lost) == ["triage"]
    lost = lost_steps(_record("t"), {"tasks": []}, lock=lock, nodes={"assess"})
    assert lost_nodes(lost) == ["(one of review, triage)"]


def test_a_record_is_stale_while_the_migrations_write_is_its_last_state_write() -> None:
    at = "2026-01-01T00:00:00+00:00"
    assert not record_is_stale({"metadata": {}, "state_updated_at": at})
    assert record_is_stale({"metadata": {MIGRATED_STATE_KEY: at}, "state_updated_at": at})
    assert not record_is_stale({"metadata": {MIGRATED_STATE_KEY: at}, "state_updated_at": "2026-01-02T00:00:00+00:00"})
    assert record_is_stale({"metadata": {MIGRATED_STATE_KEY: at}})  # a server that does not say: read the state
