"""`playbook migrate`'s plan: the format, its checks against a candidate, and one thread's change.

Pure: `parse_plan` on documents, `check_against` on a candidate described from a graph
compiled here (the candidate of tests/fixtures/migrate_plans, in miniature), `compute_change`
on thread values, the fixture plan's transforms, and the engine's pure helpers (which
values replace a reducer channel, which interrupts a server running the candidate hides).
The server side is tests/integration/test_migrate_server.py.
"""

from __future__ import annotations

import copy
import operator
from pathlib import Path
from typing import Annotated, Any, Literal, NotRequired

import pytest
from langchain_core.messages import AnyMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import interrupt
from typing_extensions import TypedDict

from migrations_playbook import cli
from migrations_playbook.graphcode.describe import describe
from migrations_playbook.repair.change import ABSENT, DROPPED, compute_change
from migrations_playbook.repair.engine import encode_writes
from migrations_playbook.repair.plan import PlanError, check_against, load_plan, parse_plan, resolve_functions
from migrations_playbook.repair.report import MigrateReport
from migrations_playbook.sources.api.state import LOST_STEP, lost_steps
from migrations_playbook.sources.repair_model import ThreadInfo, ThreadOutcome
from tests.fixtures.migrate_plans import PLAN, PLANS
from tests.fixtures.migrate_plans.helpdesk_transforms import priority_v2, stamp_flow_version, summary_from_request

TRANSFORMS = "tests.fixtures.migrate_plans.helpdesk_transforms"


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    request: str
    flow_version: NotRequired[int]
    priority: NotRequired[Literal["high", "low"]]
    notes: Annotated[NotRequired[list[str]], operator.add]
    reply: NotRequired[str]
    summary: str


def _node(state: State) -> dict:
    return {}


def _assess(state: State) -> dict:
    return {"notes": [f"triage:{interrupt({'kind': 'plan_approval'})}"]}


def _candidate() -> Any:
    """The fixture candidate's helpdesk in miniature: intake -> enrich -> assess (interrupt) -> respond."""
    builder = StateGraph(State)
    for name in ("intake", "enrich", "respond"):
        builder.add_node(name, _node)
    builder.add_node("assess", _assess)
    builder.add_edge(START, "intake")
    builder.add_edge("intake", "enrich")
    builder.add_edge("enrich", "assess")
    builder.add_edge("assess", "respond")
    builder.add_edge("respond", END)
    return describe("helpdesk", builder.compile())


@pytest.fixture(scope="module")
def candidate() -> Any:
    return _candidate()


def _doc(*steps: dict[str, Any], **top: Any) -> dict[str, Any]:
    return {"plan_version": 1, "migration": "0006-test", "graphs": ["helpdesk"], "steps": list(steps), **top}


def _ready(doc: dict[str, Any], candidate: Any) -> Any:
    return resolve_functions(check_against(parse_plan(doc), {"helpdesk": candidate}, {"helpdesk"}))


# -- the format ------------------------------------------------------------------------------


def test_the_fixture_plan_parses_with_defaults_filled_in() -> None:
    plan = load_plan(PLAN)
    assert (plan.migration, plan.graphs) == ("0006-helpdesk-assess", ("helpdesk",))
    assert [s.op for s in plan.steps] == ["move_node", "rename_key", "set_default", "transform"]
    assert all(s.graph == "helpdesk" and s.select == "blocked" for s in plan.steps)
    assert plan.steps[1].get("old") == "drop"
    assert plan.steps[0].label == "step 1 (move_node triage -> assess)"


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        pytest.param([], "must be a JSON object", id="not-an-object"),
        pytest.param(_doc({"op": "python", "function": "m:f"}, extra=1), "unknown key(s) extra", id="unknown-top-key"),
        pytest.param({**_doc({"op": "python", "function": "m:f"}), "plan_version": 2}, "'plan_version' must be 1", id="version"),
        pytest.param(_doc({"op": "python", "function": "m:f"}, migration="no spaces"), "'migration' 'no spaces'", id="bad-id"),
        pytest.param(_doc({"op": "python", "function": "m:f"}, graphs=[]), "'graphs' must be a non-empty list", id="no-graphs"),
        pytest.param(_doc(), "'steps' must be a non-empty list", id="no-steps"),
        pytest.param(_doc({"op": "rename_node"}), 'step 1: unknown op "rename_node"', id="unknown-op"),
        pytest.param(_doc({"op": "rename_key", "from": "a"}), "step 1 (rename_key): missing 'to'", id="missing-key"),
        pytest.param(
            _doc({"op": "rename_key", "from": "a", "to": "b", "too": 1}),
            "step 1 (rename_key): unknown key(s) too",
            id="unknown-step-key",
        ),
        pytest.param(
            _doc({"op": "set_default", "key": "a"}),
            "step 1 (set_default): give exactly one of 'value'",
            id="default-without-value",
        ),
        pytest.param(
            _doc({"op": "transform", "key": "a", "map": {}}),
            "step 1 (transform): 'map' must be a non-empty object",
            id="transform-empty-map",
        ),
        pytest.param(
            _doc({"op": "transform", "key": "a", "function": "nomodule"}),
            "'function' must look like 'package.module:attr'",
            id="bad-function-spec",
        ),
        pytest.param(
            _doc({"op": "move_node", "from": "review:confirm", "to": "review:approve"}),
            "a node inside a subgraph",
            id="subgraph-node",
        ),
        pytest.param(_doc({"op": "move_node", "from": "a", "to": "a"}), "'from' and 'to' are both 'a'", id="move-to-itself"),
        pytest.param(
            _doc({"op": "rename_key", "from": "a", "to": "b", "old": "delete"}), "'old' must be one of drop, keep", id="bad-old"
        ),
        pytest.param(
            _doc({"op": "rename_key", "from": "a", "to": "b", "select": "some"}), "'select' must be 'blocked'", id="bad-select"
        ),
        pytest.param(
            _doc({"op": "rename_key", "from": "a", "to": "b", "graph": "other"}),
            "graph 'other' is not among",
            id="graph-not-in-plan",
        ),
        pytest.param(
            _doc({"op": "rename_key", "from": "a", "to": "b"}, graphs=["helpdesk", "notes"]),
            "say which one with 'graph'",
            id="ambiguous-graph",
        ),
        pytest.param(
            _doc({"op": "move_node", "from": "a", "to": "b"}, {"op": "move_node", "from": "a", "to": "c"}),
            "step 2 (move_node a -> c) moves threads away from 'a' again",
            id="two-moves-from-one-node",
        ),
        pytest.param(
            _doc({"op": "rename_key", "from": "a", "to": "b"}, {"op": "transform", "key": "a", "map": {"x": "y"}}),
            "step 2 (transform a) reads 'a', which step 1 (rename_key a -> b) renamed away",
            id="reads-a-renamed-key",
        ),
    ],
)
def test_a_malformed_plan_is_refused_naming_the_step(doc: Any, message: str) -> None:
    with pytest.raises(PlanError) as caught:
        parse_plan(doc)
    assert message in str(caught.value)


def test_a_plan_file_that_is_not_json_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "bad.plan.json"
    path.write_text("{not json")
    with pytest.raises(PlanError, match="not JSON"):
        load_plan(path)


@pytest.mark.parametrize(
    ("function", "message"),
    [
        pytest.param("no_such_module_here:f", "cannot import 'no_such_module_here'", id="unknown-module"),
        pytest.param(f"{TRANSFORMS}:nope", "has no 'nope'", id="unknown-attr"),
        pytest.param(f"{TRANSFORMS}:summary_from_request", "must take 2 argument(s): f(value, values)", id="wrong-arity"),
    ],
)
def test_a_function_that_cannot_be_used_is_refused_naming_the_step(function: str, message: str) -> None:
    plan = parse_plan(_doc({"op": "transform", "key": "priority", "function": function}))
    with pytest.raises(PlanError) as caught:
        resolve_functions(plan)
    assert caught.value.args[0].startswith("step 1 (transform priority): ") and message in str(caught.value)


def test_functions_beside_the_plan_are_found_by_module_name() -> None:
    plan = resolve_functions(load_plan(PLAN))
    assert plan.steps[3].function("normal", {}) == "low"
    assert str(PLANS) in __import__("sys").path


# -- against the candidate ----------------------------------------------------------------------


def test_a_move_is_written_as_the_only_node_with_a_plain_edge_into_the_target(candidate: Any) -> None:
    plan = check_against(
        parse_plan(_doc({"op": "move_node", "from": "triage", "to": "assess"})), {"helpdesk": candidate}, {"helpdesk"}
    )
    assert plan.steps[0].get("as_node") == "enrich"


@pytest.mark.parametrize(
    ("step", "message"),
    [
        pytest.param(
            {"op": "move_node", "from": "triage", "to": "review"}, "has no node 'review'", id="target-the-candidate-lacks"
        ),
        pytest.param({"op": "move_node", "from": "enrich", "to": "assess"}, "still has node 'enrich'", id="source-still-there"),
        pytest.param(
            {"op": "move_node", "from": "triage", "to": "assess", "as_node": "intake"},
            "'as_node' 'intake' has no plain edge",
            id="as-node-without-edge",
        ),
        pytest.param(
            {"op": "rename_key", "from": "response", "to": "answer"}, "declares no state key 'answer'", id="rename-to-undeclared"
        ),
        pytest.param(
            {"op": "rename_key", "from": "request", "to": "reply"}, "still declares 'request'", id="drop-a-declared-key"
        ),
        pytest.param(
            {"op": "rename_key", "from": "response", "to": "reply", "old": "keep"},
            "needs the candidate to declare 'response'",
            id="keep-an-undeclared-key",
        ),
        pytest.param(
            {"op": "set_default", "key": "priority", "value": "medium"},
            "does not fit the candidate's type of 'priority'",
            id="default-of-wrong-type",
        ),
        pytest.param(
            {"op": "transform", "key": "priority", "map": {"normal": "medium"}},
            "map 'normal' -> \"medium\" does not fit",
            id="map-to-wrong-type",
        ),
        pytest.param({"op": "context", "function": "m:f"}, "has no context_schema", id="context-without-schema"),
    ],
)
def test_a_step_the_candidate_cannot_take_is_refused_naming_it(candidate: Any, step: dict[str, Any], message: str) -> None:
    with pytest.raises(PlanError) as caught:
        check_against(parse_plan(_doc(step)), {"helpdesk": candidate}, {"helpdesk"})
    assert caught.value.args[0].startswith("step 1 (") and message in str(caught.value)


def test_a_graph_the_candidate_does_not_register_is_refused(candidate: Any) -> None:
    plan = parse_plan(_doc({"op": "python", "function": "m:f"}, graphs=["gone"]))
    with pytest.raises(PlanError, match="graph 'gone' is not in the candidate"):
        check_against(plan, {"helpdesk": candidate}, {"helpdesk"})


# -- one thread's change ----------------------------------------------------------------------------

V1_IDLE = {
    "messages": [],
    "request": "reset my password",
    "flow_version": 1,
    "priority": "normal",
    "notes": ["intake", "enrich", "triage:approved", "respond"],
    "response": "done: reset my password",
}
V1_PAUSED = {"messages": [], "request": "slow page", "flow_version": 1, "priority": "normal", "notes": ["intake", "enrich"]}


def _info(pending: tuple[str, ...] = (), status: str = "idle") -> ThreadInfo:
    return ThreadInfo("t-1", "helpdesk", status, pending, {})


def _fixture_plan(candidate: Any) -> Any:
    plan = load_plan(PLAN)
    return resolve_functions(check_against(plan, {"helpdesk": candidate}, {"helpdesk"}))


def test_an_idle_v1_thread_gets_the_renamed_key_the_default_and_the_narrowed_value(candidate: Any) -> None:
    change = compute_change(_fixture_plan(candidate), _info(), V1_IDLE, blocked=True, candidate=candidate)
    assert change.move is None
    assert change.writes == {"reply": "done: reset my password", "summary": "reset my password", "priority": "low"}
    assert [(d.key, d.before, d.after) for d in change.diff] == [
        ("reply", ABSENT, "done: reset my password"),
        ("response", "done: reset my password", DROPPED),
        ("summary", ABSENT, "reset my password"),
        ("priority", "normal", "low"),
    ]
    assert change.steps == [2, 3, 4]


def test_a_thread_paused_at_the_renamed_node_is_moved_through_the_node_before_the_new_one(candidate: Any) -> None:
    change = compute_change(
        _fixture_plan(candidate), _info(("triage",), "interrupted"), V1_PAUSED, blocked=True, candidate=candidate
    )
    assert (change.move.from_node, change.move.to_node, change.move.as_node) == ("triage", "assess", "enrich")
    assert change.writes == {"summary": "slow page", "priority": "low"}


def test_a_thread_the_gate_does_not_block_is_left_alone_unless_a_step_selects_all(candidate: Any) -> None:
    plan = _fixture_plan(candidate)
    assert compute_change(plan, _info(), V1_IDLE, blocked=False, candidate=candidate).empty
    everywhere = _ready(_doc({"op": "rename_key", "from": "response", "to": "reply", "select": "all"}), candidate)
    assert compute_change(everywhere, _info(), V1_IDLE, blocked=False, candidate=candidate).writes == {
        "reply": "done: reset my password"
    }


def test_a_repaired_thread_has_nothing_left_to_change(candidate: Any) -> None:
    plan = _fixture_plan(candidate)
    first = compute_change(plan, _info(), V1_IDLE, blocked=True, candidate=candidate)
    repaired = {k: v for k, v in {**V1_IDLE, **first.writes}.items() if k != "response"}
    assert compute_change(plan, _info(), repaired, blocked=True, candidate=candidate).empty


def test_a_transform_that_raises_names_the_step_and_the_thread(candidate: Any) -> None:
    plan = _ready(_doc({"op": "transform", "key": "priority", "function": f"{TRANSFORMS}:explode"}), candidate)
    with pytest.raises(PlanError) as caught:
        compute_change(plan, _info(), V1_IDLE, blocked=True, candidate=candidate)
    assert str(caught.value) == (
        f"step 1 (transform priority): {TRANSFORMS}:explode raised ValueError: cannot transform 'normal'"
    )


def test_a_transformed_value_the_candidate_rejects_is_refused(candidate: Any) -> None:
    plan = _ready(_doc({"op": "transform", "key": "flow_version", "function": f"{TRANSFORMS}:priority_v2"}), candidate)
    wrong = {**V1_IDLE, "flow_version": "normal"}
    with pytest.raises(PlanError, match="the new value of 'flow_version' does not fit the candidate's type"):
        compute_change(plan, _info(), wrong, blocked=True, candidate=candidate)


def test_a_python_step_writes_what_it_returns_and_only_declared_keys(candidate: Any) -> None:
    plan = _ready(_doc({"op": "python", "function": f"{TRANSFORMS}:stamp_flow_version"}), candidate)
    unstamped = {k: v for k, v in V1_PAUSED.items() if k != "flow_version"}
    assert compute_change(plan, _info(("triage",)), unstamped, blocked=True, candidate=candidate).writes == {"flow_version": 1}
    assert compute_change(plan, _info(), unstamped, blocked=True, candidate=candidate).empty


def test_functions_get_copies_and_cannot_change_the_threads_values(candidate: Any) -> None:
    plan = _fixture_plan(candidate)
    values = copy.deepcopy(V1_IDLE)
    compute_change(plan, _info(), values, blocked=True, candidate=candidate)
    assert values == V1_IDLE


def test_the_fixture_transforms_map_v1_values_to_the_candidates() -> None:
    assert [priority_v2(v, {}) for v in ("normal", "high", None)] == ["low", "high", None]
    assert summary_from_request({"request": "slow page"}) == "slow page"
    assert stamp_flow_version({}, _info(("triage",))) == {"flow_version": 1}
    assert stamp_flow_version({"flow_version": 1}, _info(("triage",))) is None


# -- the engine's pure helpers -------------------------------------------------------------------------


def test_a_reducer_channel_is_overwritten_but_messages_merge_by_id(candidate: Any) -> None:
    encoded = encode_writes(
        {"notes": ["x"], "messages": [{"id": "1", "type": "human", "content": "hi"}], "summary": "s"}, candidate
    )
    assert encoded["notes"] == {"__overwrite__": ["x"]}
    assert encoded["messages"] == [{"id": "1", "type": "human", "content": "hi"}]
    assert encoded["summary"] == "s"


def test_an_interrupt_the_candidate_no_longer_schedules_is_named_from_the_live_lock(candidate: Any) -> None:
    record = {
        "interrupts": {"task-old": [{"id": "i-1", "value": {"kind": "plan_approval"}}], "task-now": [{"id": "i-2", "value": 2}]}
    }
    state = {"tasks": [{"id": "task-now", "name": "assess", "interrupts": [{"id": "i-2", "value": 2}]}]}
    lock = {"interrupt_nodes": ["triage", "review:confirm"]}
    (found,) = lost_steps(record, state, lock=lock, nodes=candidate.topology.nodes)
    assert (found.path, found.id, found.value) == ("triage", "i-1", {"kind": "plan_approval"})
    (unnamed,) = lost_steps(record, state, lock=None, nodes=candidate.topology.nodes)
    assert unnamed.path == LOST_STEP


def test_a_dry_run_is_not_ok_when_a_blocked_thread_gets_no_change() -> None:
    covered = ThreadOutcome("t-1", "helpdesk", "idle", "would change", blocks=("NODE_MISSING",))
    uncovered = ThreadOutcome("t-2", "helpdesk", "idle", "no change", blocks=("REDUCER_CHANGED",))
    report = MigrateReport("m", "dry run", "http://x", "c", {}, None, [covered])
    assert report.ok
    report.threads.append(uncovered)
    assert not report.ok and report.uncovered == [uncovered]


def test_migrate_flags_that_contradict_each_other_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(
            [
                "migrate",
                "--live",
                "http://127.0.0.1:9",
                "--candidate",
                "x/langgraph.json",
                "--plan",
                str(PLAN),
                "--apply",
                "--rollback",
                "0006-helpdesk-assess",
            ]
        )
    assert exited.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


def test_resume_flags_without_a_staging_copy_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(
        ["migrate", "--live", "http://127.0.0.1:9", "--candidate", "x/langgraph.json", "--plan", str(PLAN), "--auto-resume"]
    )
    assert code == 2
    assert "add --persistence DIR" in capsys.readouterr().err
