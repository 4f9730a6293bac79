"""OUTPUT_KEY_DROPPED and OUTPUT_TYPE_CHANGED on small in-process graphs: the deployed code's output schema (as
the server serves it, `get_output_jsonschema`) against the candidate's. Evidence only: `playbook check` settles it
by running the threads (tests/integration/test_check_outputs_server.py); the gate server test serves the fixture variants."""

from __future__ import annotations

from typing import Any, NotRequired

import pytest
from langgraph.func import entrypoint
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.managed import RemainingSteps
from pydantic import BaseModel
from typing_extensions import TypedDict

from migrations_playbook.graphcode.describe import describe
from migrations_playbook.jsonschema_types import output_types_of
from migrations_playbook.model import LiveGraph, ThreadSnapshot
from migrations_playbook.rules.evaluate import Evaluator


class State(TypedDict):
    request: str
    response: NotRequired[str]
    notes: NotRequired[list[str]]


class WithoutResponse(TypedDict):
    request: str
    notes: NotRequired[list[str]]


class Grown(TypedDict):
    request: str
    response: NotRequired[str]
    notes: NotRequired[list[str]]
    summary: NotRequired[str]


class Agent(MessagesState):
    remaining_steps: RemainingSteps
    topic: NotRequired[str]


class Model(BaseModel):
    request: str = ""
    response: str = ""


def _graph(state: Any, **schemas: Any) -> Any:
    builder = StateGraph(state, **schemas)
    builder.add_node("respond", lambda s: {})
    builder.add_edge(START, "respond")
    builder.add_edge("respond", END)
    return builder.compile()


def _findings(live_graph: Any, candidate_graph: Any, *, strict: bool = False, code: str = "OUTPUT_KEY_DROPPED") -> list[dict]:
    live = LiveGraph(
        graph_id="g",
        topology=describe("g", live_graph).topology,
        output_types=output_types_of(live_graph.get_output_jsonschema()),  # what `assistants.get_schemas` serves
    )
    evaluator = Evaluator(live={"g": live}, candidates={"g": describe("g", candidate_graph)}, registered={"g"}, strict=strict)
    for n, status in enumerate(("idle", "interrupted", "error")):
        evaluator.add(ThreadSnapshot(thread_id=f"t{n}", graph_id="g", status=status, values={"request": "r"}))
    return [f.to_json() for f in evaluator.findings() if f.code == code]


@pytest.mark.parametrize(
    ("live", "candidate"),
    [
        pytest.param(_graph(State), _graph(State), id="unchanged"),
        pytest.param(_graph(Agent), _graph(Agent), id="managed-values-in-the-schema"),
        pytest.param(_graph(Model), _graph(Model), id="pydantic"),
        pytest.param(_graph(State), _graph(Grown), id="a-key-added"),
        pytest.param(_graph(State, output_schema=WithoutResponse), _graph(State), id="a-key-returned-again"),
    ],
)
def test_an_output_that_keeps_every_key_is_not_reported(live: Any, candidate: Any) -> None:
    assert _findings(live, candidate) == []


@pytest.mark.parametrize(
    "candidate",
    [
        pytest.param(_graph(State, output_schema=WithoutResponse), id="output-schema-leaves-it-out"),
        pytest.param(_graph(WithoutResponse), id="state-key-removed"),
    ],
)
def test_a_key_the_runs_returned_that_the_candidate_does_not_is_evidence_on_every_thread(candidate: Any) -> None:
    (finding,) = _findings(_graph(State), candidate)
    assert (finding["severity"], finding["field"], finding["thread_count"]) == ("warn", "response", 3)
    assert "unverified" in finding["message"]
    (strict,) = _findings(_graph(State), candidate, strict=True)
    assert strict["severity"] == "block"


def test_an_entrypoint_returns_no_keyed_output_so_nothing_is_judged() -> None:
    @entrypoint()
    def steps(inputs: dict) -> dict:
        return inputs

    assert describe("g", steps).output_types is None
    assert _findings(_graph(State), steps) == []


class Counted(TypedDict):
    request: str
    response: NotRequired[dict]
    notes: NotRequired[int]


class Widened(TypedDict):
    request: str
    response: NotRequired[str | int | None]
    notes: NotRequired[list[str] | None]


class Floats(BaseModel):
    request: str = ""
    response: float = 0.0


class Ints(BaseModel):
    request: str = ""
    response: int = 0


class Loose(TypedDict):
    request: str
    response: NotRequired[Any]
    notes: NotRequired[list[str]]


def test_a_key_returned_as_another_type_is_evidence_on_every_thread() -> None:
    findings = _findings(_graph(State), _graph(Counted), code="OUTPUT_TYPE_CHANGED")
    assert {(f["field"], f["severity"], f["thread_count"]) for f in findings} == {("response", "warn", 3), ("notes", "warn", 3)}
    assert "string" in next(f for f in findings if f["field"] == "response")["message"]
    strict = _findings(_graph(State), _graph(Counted), code="OUTPUT_TYPE_CHANGED", strict=True)
    assert {f["severity"] for f in strict} == {"block"}


@pytest.mark.parametrize(
    ("live", "candidate"),
    [
        pytest.param(_graph(State), _graph(State), id="unchanged"),
        pytest.param(_graph(Agent), _graph(Agent), id="messages-and-managed"),
        pytest.param(_graph(State), _graph(Widened), id="widened-or-made-optional"),
        pytest.param(_graph(Widened), _graph(State), id="narrowed"),
        pytest.param(_graph(Ints), _graph(Floats), id="integer-is-a-number"),
        pytest.param(_graph(State), _graph(Loose), id="a-type-the-schema-does-not-state"),
    ],
)
def test_an_output_whose_types_still_meet_is_not_reported(live: Any, candidate: Any) -> None:
    assert _findings(live, candidate, code="OUTPUT_TYPE_CHANGED") == []
