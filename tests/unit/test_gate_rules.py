"""The gate's rules on hand-built snapshots of small in-process graphs (no server).

Each case builds a live graph and a candidate with one change, locks the live one
(`contract_of`, as `playbook contract --write` does) and feeds the evaluator a
thread in the position that matters, shaped as `get_state(subgraphs=True)` reports
it. The same classes run against a real `langgraph dev` with truth tests in
tests/integration/test_gate_classes_server.py; these pin the rules' logic.
"""

from __future__ import annotations

import dataclasses
import enum
import operator
from typing import Annotated, Any, NotRequired

import pytest
from langgraph.func import entrypoint, task
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, Send, interrupt
from pydantic import BaseModel, field_validator
from typing_extensions import TypedDict

from migrations_playbook.graphcode import codeinfo
from migrations_playbook.graphcode.contract import lock_document
from migrations_playbook.graphcode.describe import contract_of, describe
from migrations_playbook.model import LiveGraph, TaskFact, ThreadSnapshot
from migrations_playbook.rules.evaluate import Evaluator


def _gate(
    live_graph: Any,
    candidate_graph: Any,
    threads: list[ThreadSnapshot],
    *,
    lock: bool = True,
    assistants: list[dict] = (),
    strict: bool = False,
    schema_keys: dict[str, frozenset[str]] | None = None,
) -> list[dict]:
    live_desc = describe("g", live_graph)
    live = LiveGraph(
        graph_id="g",
        topology=live_desc.topology,
        lock=lock_document(contract_of("g", live_graph)) if lock else None,
        schema_keys=schema_keys,
    )
    evaluator = Evaluator(live={"g": live}, candidates={"g": describe("g", candidate_graph)}, registered={"g"}, strict=strict)
    for assistant in assistants:
        evaluator.add_assistant("g", assistant)
    for thread in threads:
        evaluator.add(thread)
    return [f.to_json() for f in evaluator.findings()]


def _blocks(findings: list[dict]) -> set[tuple]:
    return {(f["code"], f["node"], f["field"], tuple(f["thread_ids"])) for f in findings if f["severity"] == "block"}


# -- call order -------------------------------------------------------------------------


@task
def lookup(item: str) -> str:
    return item.upper()


@task
def notify(item: str) -> str:
    return item


def _review_ab():
    @entrypoint()
    def review(inputs: dict) -> dict:
        first = lookup(inputs["a"]).result()
        second = lookup(inputs["b"]).result()
        return {"answer": interrupt({"first": first, "second": second})}

    return review


def _review_ba():
    @entrypoint()
    def review(inputs: dict) -> dict:
        second = lookup(inputs["b"]).result()
        first = lookup(inputs["a"]).result()
        return {"answer": interrupt({"first": first, "second": second})}

    return review


def _review_inserted():
    @entrypoint()
    def review(inputs: dict) -> dict:
        notify(inputs["a"]).result()
        first = lookup(inputs["a"]).result()
        second = lookup(inputs["b"]).result()
        return {"answer": interrupt({"first": first, "second": second})}

    return review


def _review_appended():
    @entrypoint()
    def review(inputs: dict) -> dict:
        first = lookup(inputs["a"]).result()
        second = lookup(inputs["b"]).result()
        answer = interrupt({"first": first, "second": second})
        notify(answer).result()  # after the last interrupt: new work, nothing recorded for it
        return {"answer": answer}

    return review


ENTRYPOINTS = {"ab": _review_ab, "ba": _review_ba, "insert-before": _review_inserted, "append-after": _review_appended}


def _pair(order: str):
    """One variant of the entrypoint; every variant keeps the function name, as a redeploy would."""
    return ENTRYPOINTS[order]()


def test_call_sequence_is_in_execution_order_with_arguments() -> None:
    facts = codeinfo.analyse(_pair("ab").nodes["review"].bound)
    assert facts.calls[-1].startswith("interrupt(")
    ab = [c for c in facts.calls if c.startswith("task:")]
    ba = [c for c in codeinfo.analyse(_pair("ba").nodes["review"].bound).calls if c.startswith("task:")]
    assert set(ab) == set(ba) and ab != ba  # same calls, other order: the arguments tell them apart


def test_resume_prefix_runs_to_the_last_interrupt() -> None:
    assert codeinfo.resume_prefix(["task:a()", "interrupt(q)", "task:b()"]) == 2
    assert codeinfo.resume_prefix(["task:a()", "task:b()"]) == 2


PAUSED_ENTRYPOINT = ThreadSnapshot(
    thread_id="t-paused",
    graph_id="g",
    status="interrupted",
    values={},
    pending=("review",),
    tasks=(TaskFact(path="review", interrupted=True),),
    next=("review",),
)


@pytest.mark.parametrize("order", ["ba", "insert-before"])
def test_reordered_or_inserted_task_before_the_resume_point_blocks(order: str) -> None:
    findings = _gate(_pair("ab"), _pair(order), [PAUSED_ENTRYPOINT])
    assert _blocks(findings) == {("CALL_ORDER_CHANGED", "review", None, ("t-paused",))}


def test_task_appended_after_the_resume_point_passes() -> None:
    findings = _gate(_pair("ab"), _pair("append-after"), [PAUSED_ENTRYPOINT])
    assert _blocks(findings) == set()


def test_call_order_without_a_lock_is_a_warning_not_a_pass() -> None:
    findings = _gate(_pair("ab"), _pair("ba"), [PAUSED_ENTRYPOINT], lock=False)
    assert {(f["code"], f["severity"]) for f in findings} >= {("CALL_ORDER_UNVERIFIED", "warn")}
    assert _blocks(findings) == set()


# -- pending writes and sends --------------------------------------------------------------


class FanState(TypedDict):
    topic: str
    """Input."""
    log: Annotated[NotRequired[list[str]], operator.add]
    """Appended by every node."""


def _fan(target: str, *, goto_in_code: str | None = None):
    goto = goto_in_code or target

    def ask(state: FanState) -> dict:
        return {"log": [f"ask:{interrupt('ok?')}"]}

    def side(state: FanState) -> Command:
        return Command(goto=goto, update={"log": ["side"]})

    def done(state: FanState) -> dict:
        return {"log": ["done"]}

    builder = StateGraph(FanState)
    builder.add_node("ask", ask)
    builder.add_node("side", side, destinations=(goto,))
    builder.add_node(target, done)
    builder.add_edge(START, "ask")
    builder.add_edge(START, "side")
    builder.add_edge(target, END)
    return builder.compile()


FAN_THREAD = ThreadSnapshot(
    thread_id="t-fan",
    graph_id="g",
    status="interrupted",
    values={"topic": "x", "log": []},
    pending=("ask", "side"),
    next=("ask",),
    tasks=(TaskFact(path="ask", interrupted=True), TaskFact(path="side", finished=True, result={"log": ["side"]})),
)


def test_finished_siblings_goto_to_a_renamed_node_blocks() -> None:
    findings = _gate(_fan("audit"), _fan("audit2", goto_in_code="audit2"), [FAN_THREAD])
    codes = {(c, n) for c, n, _, _ in _blocks(findings)}
    assert ("PENDING_WRITE_ORPHANED", "side") in codes


def test_finished_sibling_routing_to_a_kept_node_passes() -> None:
    assert _blocks(_gate(_fan("audit"), _fan("audit"), [FAN_THREAD])) == set()


class Item(TypedDict):
    item: str
    """The payload of one Send."""


class ItemStrict(BaseModel):
    item: str
    """The payload of one Send."""
    owner: str
    """New and required: old payloads lack it."""


def _mapper(worker_input: type):
    def plan(state: FanState) -> dict:
        return {}

    def fan_out(state: FanState) -> list[Send]:
        return [Send("worker", {"item": t}) for t in state["topic"].split(",")]

    def worker(state: worker_input) -> dict:  # type: ignore[valid-type]  # the input type is the parameter
        return {"log": [f"{interrupt('ok?')}"]}

    builder = StateGraph(FanState)
    builder.add_node("plan", plan)
    builder.add_node("worker", worker, input_schema=worker_input)
    builder.add_edge(START, "plan")
    builder.add_conditional_edges("plan", fan_out, ["worker"])
    builder.add_edge("worker", END)
    return builder.compile()


SEND_THREAD = ThreadSnapshot(
    thread_id="t-send",
    graph_id="g",
    status="interrupted",
    values={"topic": "a,b"},
    pending=("worker",),
    next=("worker",),
    tasks=(TaskFact(path="worker", interrupted=True, push=True), TaskFact(path="worker", finished=True, push=True, result={})),
)


def test_a_worker_that_now_requires_a_key_old_sends_lack_blocks() -> None:
    findings = _gate(_mapper(Item), _mapper(ItemStrict), [SEND_THREAD])
    assert ("SEND_PAYLOAD_INVALID", "worker", "owner", ("t-send",)) in _blocks(findings)


def test_an_unchanged_worker_passes_its_pending_sends() -> None:
    assert _blocks(_gate(_mapper(Item), _mapper(Item), [SEND_THREAD])) == set()


# -- command targets -------------------------------------------------------------------------


def decide_ship(state: FanState) -> Command:
    interrupt("ship?")
    return Command(goto="ship")


def decide_dispatch(state: FanState) -> Command:
    interrupt("ship?")
    return Command(goto="dispatch")


def _decide(targets: tuple[str, ...], goto: str):
    decide = {"ship": decide_ship, "dispatch": decide_dispatch}[goto]
    builder = StateGraph(FanState)
    builder.add_node("decide", decide)
    for name in targets:
        builder.add_node(name, lambda state: {})
        builder.add_edge(name, END)
    builder.add_edge(START, "decide")
    return builder.compile()


DECIDE_THREAD = ThreadSnapshot(
    thread_id="t-decide",
    graph_id="g",
    status="interrupted",
    values={"topic": "x"},
    pending=("decide",),
    next=("decide",),
    tasks=(TaskFact(path="decide", interrupted=True),),
)


def test_paused_node_whose_goto_target_is_gone_blocks() -> None:
    findings = _gate(_decide(("ship", "hold"), "ship"), _decide(("dispatch", "hold"), "ship"), [DECIDE_THREAD])
    assert ("COMMAND_TARGET_MISSING", "decide", None, ("t-decide",)) in _blocks(findings)


def test_paused_node_whose_goto_follows_the_rename_passes() -> None:
    findings = _gate(_decide(("ship", "hold"), "ship"), _decide(("dispatch", "hold"), "dispatch"), [DECIDE_THREAD])
    assert _blocks(findings) == set()


SHIP_NODE = "ship"
"""A module constant naming a node (as public projects write their node names)."""
DISPATCH_NODE = "dispatch"


class Step(enum.Enum):
    SHIP = "ship"
    DISPATCH = "dispatch"


def decide_by_constant(state: FanState) -> Command:
    interrupt("ship?")
    return Command(goto=SHIP_NODE)


def decide_by_enum(state: FanState) -> Command:
    interrupt("ship?")
    return Command(goto=Step.SHIP.value)


def decide_by_local(state: FanState) -> Command:
    interrupt("ship?")
    target = "ship" if state.get("topic") else "hold"
    return Command(goto=target)


def decide_by_constant_renamed(state: FanState) -> Command:
    interrupt("ship?")
    return Command(goto=DISPATCH_NODE)


def decide_by_local_renamed(state: FanState) -> Command:
    interrupt("ship?")
    target = "dispatch" if state.get("topic") else "hold"
    return Command(goto=target)


def decide_at_run_time(state: FanState) -> Command:
    interrupt("ship?")
    return Command(goto=state.get("route") or "hold")


def _decide_with(decide: Any, targets: tuple[str, ...]) -> Any:
    builder = StateGraph(FanState)
    builder.add_node("decide", decide)
    for name in targets:
        builder.add_node(name, lambda state: {})
        builder.add_edge(name, END)
    builder.add_edge(START, "decide")
    return builder.compile()


@pytest.mark.parametrize(
    "decide",
    [
        pytest.param(decide_by_constant, id="module-constant"),
        pytest.param(decide_by_enum, id="enum-member"),
        pytest.param(decide_by_local, id="local-name"),
        pytest.param(decide_at_run_time, id="computed-at-run-time"),
    ],
)
def test_paused_node_still_routing_to_a_removed_node_blocks(decide: Any) -> None:
    """The goto target is not a literal at the call: a constant, an Enum member, a local name, or a value
    computed at run time (the gate cannot prove it no longer routes to the removed node: it blocks)."""
    findings = _gate(_decide(("ship", "hold"), "ship"), _decide_with(decide, ("dispatch", "hold")), [DECIDE_THREAD])
    assert ("COMMAND_TARGET_MISSING", "decide", None, ("t-decide",)) in _blocks(findings)


@pytest.mark.parametrize(
    "decide",
    [pytest.param(decide_by_constant_renamed, id="module-constant"), pytest.param(decide_by_local_renamed, id="local-name")],
)
def test_paused_node_whose_named_goto_follows_the_rename_passes(decide: Any) -> None:
    findings = _gate(_decide(("ship", "hold"), "ship"), _decide_with(decide, ("dispatch", "hold")), [DECIDE_THREAD])
    assert _blocks(findings) == set()


# -- breakpoints -------------------------------------------------------------------------------


class DocState(TypedDict):
    doc: str
    """The document."""
    draft: NotRequired[str]
    """Written by prepare."""


def _gated(prepare_name: str, *, before: bool = True):
    builder = StateGraph(DocState)
    builder.add_node(prepare_name, lambda state: {"draft": state["doc"]})
    builder.add_node("review", lambda state: {})
    builder.add_edge(START, prepare_name)
    builder.add_edge(prepare_name, "review")
    builder.add_edge("review", END)
    return builder.compile(**({"interrupt_before": ["review"]} if before else {"interrupt_after": [prepare_name]}))


def _at(next_node: str) -> ThreadSnapshot:
    return ThreadSnapshot(
        thread_id="t-bp",
        graph_id="g",
        status="interrupted",
        values={"doc": "d", "draft": "d"},
        pending=(next_node,),
        next=(next_node,),
        tasks=(TaskFact(path=next_node),),
        ran=frozenset({"prepare", next_node}),
    )


def test_static_breakpoint_thread_whose_upstream_node_was_renamed_blocks() -> None:
    findings = _gate(_gated("prepare"), _gated("prepare_v2"), [_at("review")])
    assert {c for c, *_ in _blocks(findings)} == {"BREAKPOINT_STUCK"}


def test_interrupt_after_thread_whose_node_was_renamed_passes() -> None:
    findings = _gate(_gated("prepare", before=False), _gated("prepare_v2", before=False), [_at("review")])
    assert _blocks(findings) == set()


# -- state models, validators, TypedDict totality ------------------------------------------------


class Claim(BaseModel):
    claim: str
    """The claim id."""
    amount: int = 0
    """Amount claimed."""


class ClaimCapped(Claim):
    @field_validator("amount")
    @classmethod
    def at_most_100(cls, value: int) -> int:
        if value > 100:
            raise ValueError("amount over 100")
        return value


def _claims(schema: type):
    builder = StateGraph(schema)
    builder.add_node("approve", lambda state: {"amount": state.amount})
    builder.add_edge(START, "approve")
    builder.add_edge("approve", END)
    return builder.compile()


def test_a_validator_that_rejects_stored_values_blocks() -> None:
    thread = ThreadSnapshot(thread_id="t-claim", graph_id="g", status="idle", values={"claim": "c", "amount": 500})
    findings = _gate(_claims(Claim), _claims(ClaimCapped), [thread])
    assert ("STATE_INVALID", None, "amount", ("t-claim",)) in _blocks(findings)


class Total(TypedDict):
    messages: list
    """Conversation."""
    report: str
    """Written by the last node; a total TypedDict key, never enforced by LangGraph."""


def _report_graph():
    builder = StateGraph(Total)
    builder.add_node("ask", lambda state: {"messages": [interrupt("go?")]})
    builder.add_node("write", lambda state: {"report": "done"})
    builder.add_edge(START, "ask")
    builder.add_edge("ask", "write")
    builder.add_edge("write", END)
    return builder.compile()


def test_unchanged_total_typeddict_never_blocks_threads_that_lack_later_keys() -> None:
    thread = ThreadSnapshot(
        thread_id="t-r",
        graph_id="g",
        status="interrupted",
        values={"messages": []},
        pending=("ask",),
        next=("ask",),
        tasks=(TaskFact(path="ask", interrupted=True),),
    )
    for lock in (True, False):
        assert _blocks(_gate(_report_graph(), _report_graph(), [thread], lock=lock)) == set()


# -- context ----------------------------------------------------------------------------------------


@dataclasses.dataclass
class Tenant:
    tenant: str
    """Whose data a run reads."""


@dataclasses.dataclass
class TenantWithRegion(Tenant):
    region: str = dataclasses.field(default="")
    """Optional, so stored contexts still build."""


@dataclasses.dataclass
class TenantRequiringRegion:
    tenant: str
    """Whose data a run reads."""
    region: str
    """New and required."""


def _ctx(schema: type):
    builder = StateGraph(DocState, context_schema=schema)
    builder.add_node("answer", lambda state: {})
    builder.add_edge(START, "answer")
    builder.add_edge("answer", END)
    return builder.compile()


ASSISTANTS = [
    {"assistant_id": "a-acme", "context": {"tenant": "acme"}, "system": False},
    {"assistant_id": "a-default", "context": {}, "system": True},
]
CTX_THREAD = ThreadSnapshot(thread_id="t-ctx", graph_id="g", status="idle", values={"doc": "d"}, assistant_id="a-acme")


def test_a_new_required_context_field_blocks_the_stored_assistants_and_their_threads() -> None:
    findings = _gate(_ctx(Tenant), _ctx(TenantRequiringRegion), [CTX_THREAD], assistants=ASSISTANTS)
    (finding,) = [f for f in findings if f["code"] == "CONTEXT_INVALID"]
    assert finding["severity"] == "block" and finding["assistant_ids"] == ["a-acme"]
    assert finding["thread_ids"] == ["t-ctx"]


def test_an_optional_context_field_passes() -> None:
    assert _blocks(_gate(_ctx(Tenant), _ctx(TenantWithRegion), [CTX_THREAD], assistants=ASSISTANTS)) == set()


# -- unreadable state ----------------------------------------------------------------------------------


def test_a_thread_whose_state_the_server_cannot_read_blocks_by_name() -> None:
    thread = ThreadSnapshot(
        thread_id="t-500", graph_id="g", status="interrupted", values={}, unreadable="500: Internal Server Error"
    )
    findings = _gate(_report_graph(), _report_graph(), [thread])
    assert _blocks(findings) == {("STATE_UNREADABLE", None, None, ("t-500",))}


def test_every_rule_has_a_unique_code_a_why_and_a_fix() -> None:
    from migrations_playbook.rules import ALL_RULES

    codes = [rule.code for rule in ALL_RULES]
    assert len(codes) == len(set(codes))
    for rule in ALL_RULES:
        assert rule.severity in ("block", "warn") and rule.evidence, rule.code
        assert len(rule.why) > 20 and len(rule.help) > 20, rule.code


def test_every_finding_code_is_documented_in_the_playbook_readme() -> None:
    from pathlib import Path

    from migrations_playbook.rules import ALL_RULES

    readme = (Path(__file__).resolve().parents[2] / "migrations_playbook" / "docs" / "gate.md").read_text()
    missing = [rule.code for rule in ALL_RULES if f"`{rule.code}`" not in readme]
    assert missing == []


def _two_questions(inserted: bool):
    if inserted:

        @entrypoint()
        def steps(inputs: dict) -> dict:
            first = interrupt({"kind": "first_question"})
            interrupt({"kind": "inserted_question"})
            second = interrupt({"kind": "second_question"})
            return {"answers": [first, second]}
    else:

        @entrypoint()
        def steps(inputs: dict) -> dict:
            first = interrupt({"kind": "first_question"})
            second = interrupt({"kind": "second_question"})
            return {"answers": [first, second]}

    return steps


def _waiting_at(kind: str) -> ThreadSnapshot:
    return ThreadSnapshot(
        thread_id=f"t-{kind}",
        graph_id="g",
        status="interrupted",
        values={},
        pending=("steps",),
        next=("steps",),
        tasks=(TaskFact(path="steps", interrupted=True, interrupt_values=({"kind": kind},)),),
    )


def test_a_question_inserted_after_the_one_a_thread_waits_at_passes_and_before_it_blocks() -> None:
    """The pending interrupt's payload names its question: the resume point is exact."""
    findings = _gate(_two_questions(False), _two_questions(True), [_waiting_at("first_question"), _waiting_at("second_question")])
    assert _blocks(findings) == {("CALL_ORDER_CHANGED", "steps", None, ("t-second_question",))}


def test_store_facts_give_the_exact_replay_extent_and_fall_back_when_the_lock_cannot_hold_them() -> None:
    """From a checkpointer, how far a replay hands out recorded values: through the r-th task call
    and the (answers + 1)-th interrupt; facts the live sequence cannot hold (a loop) or no facts
    at all (the API) leave it to the API's bound."""
    from migrations_playbook.rules.call_order_changed import recorded_extent

    calls = ["task:a(x)", "interrupt(kind='q1')", "task:b(y)", "interrupt(kind='q2')"]

    def waiting(recorded: int, answers: tuple) -> TaskFact:
        return TaskFact(path="n", interrupted=True, recorded_results=recorded, resume_values=answers)

    assert recorded_extent(calls, waiting(1, ())) == 2  # waits at the first question
    assert recorded_extent(calls, waiting(2, ("yes",))) == 4  # answered it, waits at the second
    assert recorded_extent(calls, TaskFact(path="n", errored=True, recorded_results=1, resume_values=())) == 1
    assert recorded_extent(calls, waiting(3, ())) is None  # more results than task calls: a loop
    assert recorded_extent(calls, waiting(0, ("a", "b"))) is None  # waits at a third question
    assert recorded_extent(calls, TaskFact(path="n", interrupted=True)) is None  # the API: unknown


# -- --strict ---------------------------------------------------------------------------


class _Counted(TypedDict):
    count: Annotated[int, operator.add]
    """A reducer channel: a changed reducer here would merge old values differently."""


def _counted() -> Any:
    builder = StateGraph(_Counted)
    builder.add_node("bump", lambda state: {"count": 1})
    builder.add_edge(START, "bump")
    builder.add_edge("bump", END)
    return builder.compile()


@pytest.mark.parametrize(
    ("strict", "severity"),
    [pytest.param(False, "warn", id="default-warns"), pytest.param(True, "block", id="strict-blocks")],
)
def test_unverified_reducers_block_under_strict(strict: bool, severity: str) -> None:
    """Without the live lock the reducers cannot be compared: a strict run does not pass what it cannot prove."""
    thread = ThreadSnapshot(thread_id="t1", graph_id="g", status="idle", values={"count": 3})
    findings = _gate(_counted(), _counted(), [thread], lock=False, strict=strict)
    unverified = [f for f in findings if f["code"] == "REDUCER_UNVERIFIED"]
    assert [(f["severity"], f["thread_ids"]) for f in unverified] == [(severity, ["t1"])]
    assert ("--strict" in unverified[0]["help"]) is strict


# -- unguarded reads on the way ahead (FIELD_REQUIRED_MISSING, TypedDict) ----------------------
# A thread paused at `ask` holds only `topic`. Each candidate changes what the nodes ahead read;
# a read the thread's values, or a write before it on every path, does not satisfy fails with a
# KeyError on resume.


class Steps(TypedDict):
    topic: str
    """Required input."""
    note: NotRequired[str]
    """The answer to ask."""
    draft: NotRequired[str]
    """Written by `write` (or by the `sub` subgraph)."""
    attempts: NotRequired[int]
    """A counter a candidate starts reading."""
    done: NotRequired[bool]
    """Set by use."""


def ask_plain(state: Steps) -> dict:
    return {"note": interrupt("go?")}


def ask_counting(state: Steps) -> dict:
    answer = interrupt("go?")
    return {"note": answer, "attempts": state["attempts"] + 1}  # read before its own write


def ask_reading_draft(state: Steps) -> dict:
    answer = interrupt("go?")
    return {"note": f"{answer} {state['draft']}"}


def ask_getting_draft(state: Steps) -> dict:
    answer = interrupt("go?")
    return {"note": f"{answer} {state.get('draft', '')}"}


def ask_drafting(state: Steps) -> dict:
    return {"note": interrupt("go?"), "draft": "from ask"}


def write_draft(state: Steps) -> dict:
    return {"draft": "d"}


def use_plain(state: Steps) -> dict:
    return {"done": True}


def use_draft(state: Steps) -> dict:
    return {"done": bool(state["draft"])}


def bump_plain(state: Steps) -> dict:
    return {"attempts": 1}


def bump_counting(state: Steps) -> dict:
    return {"attempts": state["attempts"] + 1}


def skip(state: Steps) -> dict:
    return {"note": "skipped"}


def _drafting_subgraph() -> Any:
    """A subgraph node: what it writes is not a literal dict (the candidate cannot tell its keys)."""
    sub = StateGraph(Steps)
    sub.add_node("inner", write_draft)
    sub.add_edge(START, "inner")
    sub.add_edge("inner", END)
    return sub.compile()


def _chain(*nodes: tuple[str, Any]) -> Any:
    """START -> the nodes in order -> END."""
    builder = StateGraph(Steps)
    names = [name for name, _ in nodes]
    for name, action in nodes:
        builder.add_node(name, action)
    for source, target in zip([START, *names], [*names, END], strict=True):
        builder.add_edge(source, target)
    return builder.compile()


def pick_route(state: Steps) -> str:
    return "write" if state["note"] == "yes" else "skip"  # the answer: unknown on the stored values


def _branching(reader: Any) -> Any:
    """ask -> write | skip (picked by the answer) -> use."""
    builder = StateGraph(Steps)
    for name, action in (("ask", ask_plain), ("write", write_draft), ("skip", skip), ("use", reader)):
        builder.add_node(name, action)
    builder.add_edge(START, "ask")
    builder.add_conditional_edges("ask", pick_route, ["write", "skip"])
    builder.add_edge("write", "use")
    builder.add_edge("skip", "use")
    builder.add_edge("use", END)
    return builder.compile()


def _at_ask(values: dict | None = None) -> ThreadSnapshot:
    return ThreadSnapshot(
        thread_id="t-ask",
        graph_id="g",
        status="interrupted",
        values=values or {"topic": "t"},
        pending=("ask",),
        next=("ask",),
        tasks=(TaskFact(path="ask", interrupted=True),),
    )


def _sub() -> tuple[str, Any]:
    return ("sub", _drafting_subgraph())


READ_CASES = {
    # The paused node reads the counter, then writes it: its own write comes after its read.
    "paused-node-reads-before-it-writes": (
        lambda: _chain(("ask", ask_plain)),
        lambda: _chain(("ask", ask_counting)),
        "attempts",
    ),
    # A subgraph node ahead may write anything, but the paused node reads first.
    "paused-node-read-with-a-subgraph-ahead": (
        lambda: _chain(("ask", ask_plain), _sub()),
        lambda: _chain(("ask", ask_reading_draft), _sub()),
        "draft",
    ),
    # A node ahead reads the counter before its own write of it.
    "node-ahead-reads-before-it-writes": (
        lambda: _chain(("ask", ask_plain), ("bump", bump_plain)),
        lambda: _chain(("ask", ask_plain), ("bump", bump_counting)),
        "attempts",
    ),
    # The only writer runs after the reader.
    "writer-after-the-reader": (
        lambda: _chain(("ask", ask_plain), ("use", use_plain), ("write", write_draft)),
        lambda: _chain(("ask", ask_plain), ("use", use_draft), ("write", write_draft)),
        "draft",
    ),
    # The subgraph (unknown writes) runs after the reader: it covers nothing before it.
    "subgraph-after-the-reader": (
        lambda: _chain(("ask", ask_plain), ("use", use_plain), _sub()),
        lambda: _chain(("ask", ask_plain), ("use", use_draft), _sub()),
        "draft",
    ),
    # Only one of the two paths to the reader writes the key.
    "writer-on-one-path-only": (lambda: _branching(use_plain), lambda: _branching(use_draft), "draft"),
}


@pytest.mark.parametrize("case", list(READ_CASES), ids=list(READ_CASES))
def test_a_read_no_write_before_it_covers_blocks(case: str) -> None:
    live, candidate, key = READ_CASES[case]
    findings = _gate(live(), candidate(), [_at_ask()])
    assert _blocks(findings) == {("FIELD_REQUIRED_MISSING", None, key, ("t-ask",))}, findings


SAFE_READ_CASES = {
    "written-before-on-the-only-path": (
        lambda: _chain(("ask", ask_plain), ("write", write_draft), ("use", use_plain)),
        lambda: _chain(("ask", ask_plain), ("write", write_draft), ("use", use_draft)),
        None,
    ),
    "written-by-the-paused-node-for-the-node-after": (
        lambda: _chain(("ask", ask_drafting), ("use", use_plain)),
        lambda: _chain(("ask", ask_drafting), ("use", use_draft)),
        None,
    ),
    "a-subgraph-before-the-reader-may-write-it": (
        lambda: _chain(("ask", ask_plain), _sub(), ("use", use_plain)),
        lambda: _chain(("ask", ask_plain), _sub(), ("use", use_draft)),
        None,
    ),
    "the-thread-holds-it": (
        lambda: _chain(("ask", ask_plain), _sub()),
        lambda: _chain(("ask", ask_reading_draft), _sub()),
        {"topic": "t", "draft": "held"},
    ),
    "read-with-get": (
        lambda: _chain(("ask", ask_plain), _sub()),
        lambda: _chain(("ask", ask_getting_draft), _sub()),
        None,
    ),
    "written-on-both-paths": (
        lambda: _chain(("ask", ask_plain), ("write", write_draft), ("bump", bump_plain), ("use", use_plain)),
        lambda: _chain(("ask", ask_plain), ("write", write_draft), ("bump", bump_counting), ("use", use_draft)),
        {"topic": "t", "attempts": 1},
    ),
}


@pytest.mark.parametrize("case", list(SAFE_READ_CASES), ids=list(SAFE_READ_CASES))
def test_a_read_the_values_or_an_earlier_write_covers_passes(case: str) -> None:
    live, candidate, values = SAFE_READ_CASES[case]
    for lock in (True, False):
        findings = _gate(live(), candidate(), [_at_ask(values)], lock=lock)
        assert [f for f in findings if f["code"] == "FIELD_REQUIRED_MISSING"] == [], (lock, findings)


def test_a_new_unguarded_read_without_a_lock_is_a_warning() -> None:
    """Without a lock the gate cannot tell the live code did not read it too (the live schema is
    not part of the evidence yet): a warning, not a pass."""
    live, candidate, key = READ_CASES["paused-node-read-with-a-subgraph-ahead"]
    findings = _gate(live(), candidate(), [_at_ask()], lock=False)
    assert [(f["code"], f["severity"], f["field"]) for f in findings if f["code"] == "FIELD_REQUIRED_MISSING"] == [
        ("FIELD_REQUIRED_MISSING", "warn", key)
    ]


STEPS_KEYS = frozenset(Steps.__annotations__)
"""What the live server's schemas name for `Steps` (`LiveGraph.schema_keys`, as `get_schemas` serves them)."""


@pytest.mark.parametrize(
    ("case", "schema_keys", "expected"),
    [
        # The live graph's schema never had the key: the live code cannot have written it, no thread holds it.
        ("paused-node-read-with-a-subgraph-ahead", {"": STEPS_KEYS - {"draft"}}, "block"),
        ("node-ahead-reads-before-it-writes", {"": STEPS_KEYS - {"attempts"}}, "block"),
        # The live schema had it: the live code may have read it too, as without schemas.
        ("paused-node-read-with-a-subgraph-ahead", {"": STEPS_KEYS}, "warn"),
        # Only a subgraph's schema is known: the graph's own level stays unknown.
        ("paused-node-read-with-a-subgraph-ahead", {"sub": STEPS_KEYS - {"draft"}}, "warn"),
    ],
    ids=["never-had-paused", "never-had-ahead", "schema-had-it", "other-level-only"],
)
def test_without_a_lock_a_read_of_a_key_the_live_schema_never_had_blocks(
    case: str, schema_keys: dict[str, frozenset[str]], expected: str
) -> None:
    live, candidate, key = READ_CASES[case]
    findings = _gate(live(), candidate(), [_at_ask()], lock=False, schema_keys=schema_keys)
    got = [(f["code"], f["severity"], f["field"]) for f in findings if f["code"] == "FIELD_REQUIRED_MISSING"]
    assert got == [("FIELD_REQUIRED_MISSING", expected, key)], findings
    message = next(f["message"] for f in findings if f["code"] == "FIELD_REQUIRED_MISSING")
    assert ("schema never had" in message) is (expected == "block"), message


@pytest.mark.parametrize("case", list(SAFE_READ_CASES), ids=list(SAFE_READ_CASES))
def test_a_covered_read_passes_though_the_live_schema_never_had_the_key(case: str) -> None:
    """The schema only decides a read the rule already finds: a covered read stays a pass."""
    live, candidate, values = SAFE_READ_CASES[case]
    findings = _gate(live(), candidate(), [_at_ask(values)], lock=False, schema_keys={"": frozenset({"topic", "note"})})
    assert [f for f in findings if f["code"] == "FIELD_REQUIRED_MISSING"] == [], findings


def test_with_a_lock_the_live_schema_changes_nothing() -> None:
    """A lock is the better evidence: a read the live code made the same way passes whatever the schema says."""
    live, candidate, key = READ_CASES["paused-node-read-with-a-subgraph-ahead"]
    findings = _gate(candidate(), candidate(), [_at_ask()], schema_keys={"": STEPS_KEYS - {key}})
    assert [f for f in findings if f["code"] == "FIELD_REQUIRED_MISSING"] == [], findings
    findings = _gate(live(), candidate(), [_at_ask()], schema_keys={"": STEPS_KEYS})
    assert _blocks(findings) == {("FIELD_REQUIRED_MISSING", None, key, ("t-ask",))}, findings


def decide_with_a_nested_helper(state: FanState) -> Command:
    interrupt("ship?")
    target = "ship"

    def later() -> str:
        target = state.get("route")  # binds the helper's own name, not the node's
        return str(target)

    return Command(goto=target, update={"log": [later()]})


def test_a_nested_functions_assignment_does_not_hide_the_nodes_own_goto_target() -> None:
    facts = codeinfo.analyse(decide_with_a_nested_helper)
    assert (facts.targets, facts.dynamic_targets) == ({"ship"}, False)


# -- a subgraph's hand-off to its parent (Command(graph=Command.PARENT)) ----------------------


def review_then_hand_off(state: FanState) -> Command:
    interrupt({"kind": "check"})
    return Command(graph=Command.PARENT, goto="finish", update={"log": ["reviewed"]})


def review_then_hand_off_renamed(state: FanState) -> Command:
    interrupt({"kind": "check"})
    return Command(graph=Command.PARENT, goto="wrap_up", update={"log": ["reviewed"]})


def _handoff(review: Any, parent_nodes: tuple[str, ...]):
    team = StateGraph(FanState)
    team.add_node("review", review)
    team.add_edge(START, "review")
    builder = StateGraph(FanState)
    builder.add_node("team", team.compile())
    for name in parent_nodes:
        builder.add_node(name, lambda state: {})
        builder.add_edge(name, END)
    builder.add_edge(START, "team")
    return builder.compile()


HANDOFF_THREAD = ThreadSnapshot(
    thread_id="t-handoff",
    graph_id="g",
    status="interrupted",
    values={"topic": "x"},
    pending=("team", "team:review"),
    next=("team",),
    tasks=(TaskFact(path="team"), TaskFact(path="team:review", interrupted=True)),
)


def test_a_subgraph_handing_off_to_its_parent_is_not_a_missing_target_of_its_own_graph() -> None:
    """The supervisor/hand-off pattern: unchanged code never blocks (the goto names the parent's node)."""
    graph = _handoff(review_then_hand_off, ("finish",))
    findings = _gate(graph, _handoff(review_then_hand_off, ("finish",)), [HANDOFF_THREAD])
    assert [f for f in findings if f["code"] == "COMMAND_TARGET_MISSING"] == []
    assert codeinfo.analyse(review_then_hand_off).parent_targets == {"finish"}
    assert "finish" not in codeinfo.analyse(review_then_hand_off).targets


def test_a_hand_off_to_a_parent_node_the_candidate_renamed_blocks() -> None:
    findings = _gate(_handoff(review_then_hand_off, ("finish",)), _handoff(review_then_hand_off, ("wrap_up",)), [HANDOFF_THREAD])
    assert ("COMMAND_TARGET_MISSING", "team:review", None, ("t-handoff",)) in _blocks(findings)


def test_a_hand_off_that_follows_the_parents_rename_passes() -> None:
    findings = _gate(
        _handoff(review_then_hand_off, ("finish",)), _handoff(review_then_hand_off_renamed, ("wrap_up",)), [HANDOFF_THREAD]
    )
    assert [f for f in findings if f["code"] == "COMMAND_TARGET_MISSING"] == []
