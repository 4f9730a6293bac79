"""A Functional API thread's saved value (``previous``) is state: the gate checks the candidate
entrypoint's reads of it and its declared type against the thread's values (issue 25).

Through the Agent Server API (and a checkpointer's `values`) an entrypoint thread's values are its
last return, which is what it saved unless it returns ``entrypoint.final(save=...)``; checked on
`langgraph dev` (tests/integration/test_gate_classes_server.py, func-previous-key-*).
"""

from __future__ import annotations

from typing import Any

from langgraph.func import entrypoint
from pydantic import BaseModel
from typing_extensions import TypedDict

from migrations_playbook.graphcode import codeinfo
from migrations_playbook.graphcode.contract import lock_document
from migrations_playbook.graphcode.describe import contract_of, describe
from migrations_playbook.model import LiveGraph, ThreadSnapshot
from migrations_playbook.rules.evaluate import Evaluator

SAVED = {"found": "looked:delta", "first": "A1", "second": "A2"}


def _findings(live_graph: Any, candidate_graph: Any, values: Any = SAVED, status: str = "idle") -> list[dict]:
    live = LiveGraph(graph_id="g", topology=describe("g", live_graph).topology, lock=lock_document(contract_of("g", live_graph)))
    evaluator = Evaluator(live={"g": live}, candidates={"g": describe("g", candidate_graph)}, registered={"g"})
    evaluator.add(ThreadSnapshot(thread_id="t1", graph_id="g", status=status, values=values))
    return [f.to_json() for f in evaluator.findings()]


def _codes(findings: list[dict]) -> set[tuple]:
    return {(f["code"], f["severity"], f["node"], f["field"]) for f in findings}


@entrypoint()
def steps(inputs: dict) -> dict:
    return {"found": inputs["item"], "first": "A1", "second": "A2"}


def test_a_key_read_from_previous_that_saved_values_lack_blocks() -> None:
    @entrypoint()
    def steps(inputs: dict, previous: dict | None = None) -> dict:
        count = previous["count"] + 1 if previous is not None else 1
        return {"found": inputs["item"], "count": count}

    found = _findings(globals()["steps"], steps)
    assert _codes(found) == {("FIELD_REQUIRED_MISSING", "block", "steps", "count")}
    assert found[0]["thread_ids"] == ["t1"]


def test_reads_through_a_defaulted_alias_and_attribute_reads_count() -> None:
    @entrypoint()
    def steps(inputs: dict, previous: Any = None) -> dict:
        prev = previous or {}
        return {"total": prev["total"], "seen": previous.seen}

    assert _codes(_findings(globals()["steps"], steps)) == {
        ("FIELD_REQUIRED_MISSING", "block", "steps", "seen"),
        ("FIELD_REQUIRED_MISSING", "block", "steps", "total"),
    }


def test_a_guarded_read_or_a_key_the_saved_values_hold_passes() -> None:
    @entrypoint()
    def steps(inputs: dict, previous: dict | None = None) -> dict:
        count = previous.get("count", 0) + 1 if previous is not None else 1
        return {"found": previous["found"] if previous else inputs["item"], "count": count}

    assert _findings(globals()["steps"], steps) == []


def test_nothing_saved_yet_is_not_checked() -> None:
    """A paused first invocation: values are null through the API (`previous` is None there)."""

    @entrypoint()
    def steps(inputs: dict, previous: dict | None = None) -> dict:
        return {"count": previous["count"] if previous is not None else 0}

    assert _findings(globals()["steps"], steps, values={}, status="interrupted") == []


class Saved(TypedDict):
    found: str
    first: int


class SavedModel(BaseModel):
    found: str
    second: list[str]


def test_a_narrowed_type_of_previous_blocks_key_by_key() -> None:
    @entrypoint()
    def typed(inputs: dict, previous: Saved | None = None) -> dict:
        return {"found": previous.get("found") if previous else None}

    @entrypoint()
    def modelled(inputs: dict, previous: SavedModel | None = None) -> dict:
        return {"found": getattr(previous, "found", None)}

    assert _codes(_findings(steps, typed)) == {("FIELD_TYPE_MISMATCH", "block", "typed", "first")}
    assert _codes(_findings(steps, modelled)) == {("FIELD_TYPE_MISMATCH", "block", "modelled", "second")}


def test_a_type_the_saved_values_fit_passes_and_a_scalar_type_is_judged_whole() -> None:
    class Loose(TypedDict, total=False):
        found: str
        first: str

    @entrypoint()
    def loose(inputs: dict, previous: Loose | None = None) -> dict:
        return {}

    @entrypoint()
    def scalar(inputs: dict, previous: list[str] | None = None) -> dict:
        return {}

    assert _findings(steps, loose) == []
    found = _findings(steps, scalar)
    assert _codes(found) == {("FIELD_TYPE_MISMATCH", "block", "scalar", None)}
    assert "previous: list[str] | None" in found[0]["message"]


def test_an_entrypoint_without_previous_reads_no_stored_value() -> None:
    """Its values are its last return, never handed back: nothing to check, and not unchecked."""
    assert _findings(steps, steps) == []


def test_a_saved_value_the_api_does_not_show_is_unchecked() -> None:
    @entrypoint()
    def saving(inputs: dict, previous: dict | None = None) -> Any:
        return entrypoint.final(value={"shown": 1}, save={"count": (previous or {}).get("count", 0) + 1})

    assert _codes(_findings(steps, saving, values={"shown": 1})) == {("STATE_UNCHECKED", "warn", "saving", None)}


def test_saved_value_facts_stay_out_of_the_lock() -> None:
    @entrypoint()
    def steps(inputs: dict, previous: Saved | None = None) -> dict:
        return {"n": previous["first"]}

    facts = codeinfo.saved_value(steps.nodes["steps"].bound)
    assert facts is not None and facts.reads == {"first"}
    assert contract_of("g", steps)["node_details"] == contract_of("g", globals()["steps"])["node_details"]
