"""Every answer a client may send to a waiting question (issue 36, item 3): the shapes a payload allows, the
answers the live deployment already gave, ``--resume-map`` keyed by node path and thread id, and the runs the
shadow sends for each.

The LangChain shapes are checked against LangChain itself: a `create_agent` with `HumanInTheLoopMiddleware`
(batched and per call) is run in-process, its pending question read in the Agent Server's shape, and each
answer shape resumed on a copy of the thread of its own; every one must be taken.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.messages import ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from langgraph_api.state import state_snapshot_to_thread_state

from migrations_playbook.proof.answers import answer_shapes, schema_instances
from migrations_playbook.proof.resume import ResumeRule, question_key
from migrations_playbook.proof.shadow.drive import ThreadFacts, answer_variants, live_answers
from migrations_playbook.proof.shadow.traces import base_of, variant_key
from migrations_playbook.sources.interrupts import PendingInterrupt, pending_interrupts
from tests.fixtures.hitl_project.agent import ScriptedModel, send_email


def _agent(mode: str, allowed: list[str]) -> Any:
    middleware = HumanInTheLoopMiddleware(interrupt_on={"send_email": {"allowed_decisions": allowed}}, interrupt_mode=mode)
    return create_agent(ScriptedModel(), tools=[send_email], middleware=[middleware], checkpointer=InMemorySaver())


def _paused(agent: Any) -> tuple[dict[str, Any], list[PendingInterrupt]]:
    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    agent.invoke({"messages": [{"role": "user", "content": "tell Kim"}]}, config)
    state = state_snapshot_to_thread_state(agent.get_state(config, subgraphs=True))
    return config, pending_interrupts(state)


@pytest.mark.parametrize("mode", ["batched", "per_call"])
@pytest.mark.parametrize("allowed", [["approve", "edit", "reject", "respond"], ["edit", "reject"], ["respond"]])
def test_every_decision_a_human_in_the_loop_question_allows_is_one_shape_and_langchain_takes_each(
    mode: str, allowed: list[str]
) -> None:
    agent = _agent(mode, allowed)
    _, asked = _paused(agent)
    assert len(asked) == 1
    shapes = answer_shapes(asked[0].value, asked[0].schema)
    assert [s.label for s in shapes] == [k for k in ("approve", "edit", "reject", "respond") if k in allowed]
    for shape in shapes:  # each on a thread of its own, from the same question
        config, again = _paused(agent)
        resume = {again[0].id: shape.value} if mode == "per_call" else shape.value
        result = agent.invoke(Command(resume=resume), config)
        assert "__interrupt__" not in result, (shape, result)
        tool_messages = [m for m in result["messages"] if isinstance(m, ToolMessage)]
        assert len(tool_messages) == 1, (shape, result["messages"])
        sent = "sent to" in str(tool_messages[0].content)
        assert sent == (shape.label in ("approve", "edit")), (shape, tool_messages[0])


def test_the_per_call_question_carries_its_schema_and_the_types_come_from_it() -> None:
    _, asked = _paused(_agent("per_call", ["reject"]))
    assert asked[0].schema is not None and asked[0].value["type"] == "tool_approval"
    assert [s.value for s in answer_shapes(asked[0].value, asked[0].schema)] == [
        {"type": "reject", "message": "rejected by the shadow proof"}
    ]


def test_agent_inbox_requests_get_one_response_list_per_allowed_type() -> None:
    request = {
        "action_request": {"action": "write_email", "args": {"to": "kim"}},
        "config": {"allow_accept": True, "allow_edit": True, "allow_respond": True, "allow_ignore": True},
        "description": "Draft ready",
    }
    question = {**request, "config": {"allow_respond": True, "allow_ignore": True}}
    shapes = answer_shapes([request, question])
    assert [s.label for s in shapes] == ["accept", "edit", "response", "ignore"]
    # a request that does not allow a type gets its own first type in that shape
    assert shapes[0].value[1] == {"type": "response", "args": "ok"}
    assert shapes[3].value == [{"type": "ignore", "args": None}, {"type": "ignore", "args": None}]


def test_options_and_a_resume_format_give_one_shape_per_option_the_example_first() -> None:
    payload = {
        "kind": "refund",
        "options": ["approve", "reject", "escalate"],
        "resume_format": {"kind": "refund", "answer": "approve"},
    }
    assert [s.value for s in answer_shapes(payload)] == [
        {"kind": "refund", "answer": "approve"},
        {"kind": "refund", "answer": "reject"},
        {"kind": "refund", "answer": "escalate"},
    ]
    assert [s.value for s in answer_shapes({"options": ["yes", "no"]})] == ["yes", "no"]
    assert answer_shapes("free text?") == [] and answer_shapes({"question": "why?"}) == []


def test_a_response_schema_alone_gives_one_instance_per_alternative() -> None:
    schema = {
        "$defs": {
            "Yes": {"type": "object", "properties": {"type": {"const": "yes"}}, "required": ["type"]},
            "No": {
                "type": "object",
                "properties": {
                    "type": {"const": "no"},
                    "reason": {"type": "string", "minLength": 5},
                    "n": {"type": "integer", "minimum": 3},
                },
                "required": ["type", "reason", "n"],
            },
        },
        "anyOf": [{"$ref": "#/$defs/Yes"}, {"$ref": "#/$defs/No"}],
    }
    assert [value for _, value in schema_instances(schema)] == [{"type": "yes"}, {"type": "no", "reason": "ooooo", "n": 3}]
    assert [v for _, v in schema_instances({"enum": ["low", "high"]})] == ["low", "high"]
    assert [s.value for s in answer_shapes("How urgent?", {"type": "string", "enum": ["low", "high"]})] == ["low", "high"]
    assert schema_instances({"$ref": "#/$defs/Nowhere"}) == []


def test_resume_map_is_keyed_by_thread_id_then_node_path_then_kind() -> None:
    asked = PendingInterrupt(path="review:confirm", value={"kind": "refund", "options": ["approve"]}, id="i")
    rule = ResumeRule(by_kind={"refund": "by kind", "review:confirm": "by path", "t-1": "by thread"}, derive=True)
    assert rule.answer(asked, "t-1").value == "by thread"
    assert rule.answer(asked, "t-2").value == "by path"
    assert ResumeRule(by_kind={"refund": "by kind"}).answer(asked, "t-2").value == "by kind"
    # a payload with no kind and no options is answered by its node path
    free = PendingInterrupt(path="ask_human", value="What is the order number?", id="j")
    assert ResumeRule(by_kind={"ask_human": "A-17"}).answer(free, "t-3").value == "A-17"


def _checkpoint(cid: str, parent: str | None, run_id: str, tasks: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "checkpoint": {"checkpoint_id": cid},
        "parent_checkpoint": {"checkpoint_id": parent} if parent else None,
        "metadata": {"run_id": run_id, "source": "loop"},
        "tasks": tasks or [],
        "values": {},
        "next": [],
    }


def test_a_question_live_threads_already_answered_is_answered_the_same_way() -> None:
    asked = {"id": "q1", "value": "What is the order number?"}
    history = [  # newest first: run r2 resumed the question run r1 left pending
        _checkpoint("c3", "c2", "r2"),
        _checkpoint("c2", "c1", "r2"),
        _checkpoint("c1", None, "r1", [{"id": "t", "name": "ask_human", "interrupts": [asked], "state": None}]),
    ]
    runs = [
        {"run_id": "r2", "kwargs": {"command": {"resume": "A-17"}}},
        {"run_id": "r1", "kwargs": {"input": {"messages": []}}},
    ]
    learned = live_answers("support", history, runs)
    question = PendingInterrupt(path="ask_human", value="What is the order number?", id="q9")
    assert learned == {("support", "ask_human", question_key(question)): "A-17"}
    rule = ResumeRule(derive=True, learned=learned)
    answer = rule.answer(question, "t-9", "support")
    assert (answer.value, answer.source) == ("A-17", "live_answer")
    # the same text asked by another graph is another question
    assert not isinstance(rule.answer(question, "t-9", "billing"), type(answer))


def test_a_waiting_thread_is_driven_once_per_other_answer_on_copies_keyed_apart() -> None:
    state = {
        "values": {},
        "next": ["approve"],
        "tasks": [
            {
                "id": "t",
                "name": "approve",
                "interrupts": [{"id": "i", "value": {"kind": "refund", "options": ["approve", "reject"]}}],
                "state": None,
            }
        ],
    }
    facts = ThreadFacts(thread_id="t-1", graph_id="g", status="interrupted", state=state, assistant_id="g")
    variants = answer_variants(facts, ResumeRule(derive=True))
    assert [(r.kind, r.resume, r.why) for r in variants] == [
        ("resume", {"kind": "refund", "answer": "reject"}, "answer variant: approve: option 'reject'")
    ]
    # the operator's own answer is not second-guessed
    assert answer_variants(facts, ResumeRule(by_kind={"refund": {"kind": "refund", "answer": "approve"}}, derive=True)) == []
    assert base_of(variant_key("t-1", 2)) == "t-1" and variant_key("t-1", 2) != "t-1"
