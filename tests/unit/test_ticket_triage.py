"""ticket_triage compiled with InMemorySaver: flow_version routing and typed approvals."""

from __future__ import annotations

import uuid

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from graphs.ticket_triage.approvals import InvalidResume, build_request, parse_resume
from graphs.ticket_triage.graph import builder

REFUND_KO = "지난달 요금이 두 번 청구됐어요. 환불해 주세요. 급해요"
REPORT_EN = "Please send me a statement of my payments history"


@pytest.fixture
def graph():
    return builder.compile(checkpointer=InMemorySaver())


def _config() -> dict:
    return {"configurable": {"thread_id": str(uuid.uuid4())}}


def _start(graph, text: str, config: dict) -> dict:
    return graph.invoke({"messages": [{"role": "user", "content": text}]}, config)


def test_new_thread_is_stamped_v2_and_pauses_at_triage_with_typed_payload(graph) -> None:
    config = _config()
    result = _start(graph, REFUND_KO, config)
    (interrupt,) = result["__interrupt__"]
    payload = interrupt.value
    assert payload["kind"] == "plan_approval"
    assert payload["options"] == ["approve", "reject"]
    assert payload["resume_at"] == "triage"
    assert payload["next_step"] == "policy_check"
    assert "승인" in payload["question"]
    state = graph.get_state(config)
    assert state.next == ("triage",)
    assert state.values["flow_version"] == 2
    assert state.values["current_step"] == "intake"
    assert state.values["next_agent"] == "triage"


def test_correct_resume_runs_policy_check_and_reflects_the_approval(graph) -> None:
    config = _config()
    _start(graph, REFUND_KO, config)
    result = graph.invoke(Command(resume={"kind": "plan_approval", "answer": "approve"}), config)
    assert result["approval"]["kind"] == "plan_approval"
    assert result["approval"]["answer"] == "approve"
    assert result["policy"]["rule"] == "billing_high_priority"
    assert result["sla_hours"] == 24
    assert result["response"] == (
        "접수 내용: 지난달 요금이 두 번 청구됐어요. 환불해 주세요. 급해요 (결제, 우선순위 높음). "
        "처리 계획 승인 결과: 승인. "
        "정책(긴급 결제): 진행 가능. 긴급 결제 변경은 영업일 기준 하루 안에 처리됩니다. "
        "24시간 안에 처리될 예정입니다."
    )
    assert result["current_step"] == "respond" and result["next_agent"] == "done"
    assert result["messages"][-1].content == result["response"]


def test_rejected_plan_is_not_allowed_by_policy(graph) -> None:
    config = _config()
    _start(graph, REFUND_KO, config)
    result = graph.invoke(Command(resume={"kind": "plan_approval", "answer": "거절"}), config)
    assert result["approval"]["answer"] == "reject"
    assert result["policy"] == {
        "allowed": False,
        "rule": "plan_rejected",
        "note": "the plan was rejected by the approver",
    }
    assert "sla_hours" not in result


@pytest.mark.parametrize(
    "resume",
    [
        pytest.param({"kind": "report_choice", "answer": "summary"}, id="wrong-kind"),
        pytest.param({"answer": "approve"}, id="no-kind"),
        pytest.param({"kind": "plan_approval", "answer": "maybe"}, id="not-an-option"),
        pytest.param(42, id="malformed"),
        pytest.param("요약", id="bare-word-of-another-kind"),
    ],
)
def test_bad_resume_keeps_thread_interrupted_with_unchanged_values(graph, resume) -> None:
    config = _config()
    _start(graph, REFUND_KO, config)
    before = graph.get_state(config)
    result = graph.invoke(Command(resume=resume), config)
    (interrupt,) = result["__interrupt__"]
    assert interrupt.value["kind"] == "plan_approval"
    assert interrupt.value["error"]
    after = graph.get_state(config)
    assert after.next == ("triage",)
    assert after.values == before.values
    # and a correct resume afterwards still works
    done = graph.invoke(Command(resume="승인"), config)
    assert done["approval"]["answer"] == "approve"


def test_report_request_asks_for_report_choice(graph) -> None:
    config = _config()
    result = _start(graph, REPORT_EN, config)
    assert result["__interrupt__"][0].value["kind"] == "report_choice"
    done = graph.invoke(Command(resume={"kind": "report_choice", "answer": "detailed"}), config)
    assert done["approval"]["answer"] == "detailed"


def test_v1_thread_without_stamp_skips_policy_check(graph) -> None:
    """A thread that v1 code took past intake carries no flow_version."""
    config = _config()
    graph.update_state(config, {"messages": [{"role": "user", "content": REFUND_KO}]}, as_node="intake")
    paused = graph.invoke(None, config)
    assert paused["__interrupt__"][0].value["next_step"] == "respond"
    assert "flow_version" not in graph.get_state(config).values
    result = graph.invoke(Command(resume={"kind": "plan_approval", "answer": "approve"}), config)
    assert "policy" not in result
    assert result["current_step"] == "respond"
    assert "flow_version" not in result


def test_classification_is_not_recomputed_on_resume(graph) -> None:
    """The model call sits in a @task: a resume replays it, so the request asked stays the one answered."""
    config = _config()
    first = _start(graph, REFUND_KO, config)["__interrupt__"][0].value
    second = graph.invoke(Command(resume={"kind": "nope", "answer": "x"}), config)["__interrupt__"][0].value
    assert second["requested_at"] == first["requested_at"]


@pytest.mark.parametrize(
    ("value", "pending", "expected"),
    [
        pytest.param({"kind": "plan_approval", "answer": "APPROVE "}, ["plan_approval"], ("plan_approval", "approve"), id="dict"),
        pytest.param("승인", ["plan_approval"], ("plan_approval", "approve"), id="bare-korean"),
        pytest.param("상세", ["report_choice"], ("report_choice", "detailed"), id="bare-report"),
        pytest.param(
            {"kind": "clarification", "answer": "the 3rd invoice"},
            ["clarification"],
            ("clarification", "the 3rd invoice"),
            id="clarification",
        ),
        pytest.param(
            {"kind": "report_choice", "answer": "summary"},
            ["plan_approval", "report_choice"],
            ("report_choice", "summary"),
            id="one-of-two",
        ),
    ],
)
def test_parse_resume_accepts(value, pending, expected) -> None:
    requests = [_request(kind) for kind in pending]
    assert parse_resume(value, requests) == expected


@pytest.mark.parametrize(
    ("value", "pending", "message"),
    [
        pytest.param("승인", ["plan_approval", "report_choice"], "ambiguous", id="bare-with-two-pending"),
        pytest.param("more info", ["clarification"], "must name its kind", id="bare-clarification"),
        pytest.param({"kind": "plan_approval", "answer": ""}, ["plan_approval"], "non-empty", id="empty"),
        pytest.param(["approve"], ["plan_approval"], "malformed", id="list"),
        pytest.param({"kind": "plan_approval", "answer": "yes"}, ["report_choice"], "waits for report_choice", id="wrong-kind"),
    ],
)
def test_parse_resume_rejects(value, pending, message) -> None:
    with pytest.raises(InvalidResume, match=message):
        parse_resume(value, [_request(kind) for kind in pending])


def _request(kind: str):
    return build_request(kind=kind, lang="en", requested_at="t", next_step="respond", summary="s")
