"""Which run requests each graph refuses before anything is written (server/serving.py),
and the LangSmith metadata every run gets (graphs/common/tracing.py)."""

from __future__ import annotations

import json

import pytest

from graphs.common import tracing
from server import serving
from server.serving import GRAPH_POLICIES, RunRefused
from tests.conftest import REPO_ROOT

CONFIG = json.loads((REPO_ROOT / "langgraph.json").read_text())
TRIAGE = GRAPH_POLICIES["ticket_triage"]
GUIDE = GRAPH_POLICIES["recycling_guide"]
LIMIT = 50
PLAN = {"id": "i-1", "value": {"kind": "plan_approval", "options": ["approve", "reject"]}}


def _user(text: str) -> dict:
    return {"messages": [{"role": "user", "content": text}]}


def test_every_served_graph_has_a_policy_naming_its_own_builder() -> None:
    assert set(GRAPH_POLICIES) == set(CONFIG["graphs"])
    for graph_id, policy in GRAPH_POLICIES.items():
        graph_module = CONFIG["graphs"][graph_id].split(":")[0]
        assert policy.builder == f"{graph_module}:builder"
        assert serving.load(policy.builder).compile().name  # importable StateGraph
        assert isinstance(serving.current_flow_version(policy), int)


@pytest.mark.parametrize(
    ("graph_id", "strategy"),
    [
        pytest.param("ticket_triage", "reject", id="approval-flow-rejects"),
        pytest.param("fan_room", "enqueue", id="fan-room-queues"),
        pytest.param("recycling_guide", "enqueue", id="recycling-queues"),
        pytest.param("campus_supervisor", "enqueue", id="campus-queues"),
        pytest.param("some_other_graph", "enqueue", id="unknown-graph-default"),
    ],
)
def test_approval_flows_reject_and_chat_graphs_enqueue(graph_id: str, strategy: str) -> None:
    assert serving.policy_for(graph_id).multitask_strategy == strategy


@pytest.mark.parametrize("graph_id", sorted(GRAPH_POLICIES))
def test_every_graph_here_takes_messages_as_its_only_input(graph_id: str) -> None:
    assert serving.input_keys(GRAPH_POLICIES[graph_id]) == {"messages"}


@pytest.mark.parametrize(
    ("value", "status", "message"),
    [
        pytest.param({}, 422, "needs 'messages'", id="missing-messages"),
        pytest.param({"msgs": []}, 422, "unknown field(s) msgs", id="unknown-field"),
        pytest.param(["hi"], 422, "must be an object", id="not-an-object"),
        pytest.param({"messages": "hi"}, 422, "must be a list of messages, got str", id="messages-a-string"),
        pytest.param({"messages": 5}, 422, "must be a list of messages, got int", id="messages-a-number"),
        pytest.param({"messages": []}, 422, "is empty", id="empty-list"),
        pytest.param({"messages": [5]}, 422, "messages[0] must be a message object", id="message-a-number"),
        pytest.param({"messages": [{"role": "user"}]}, 422, "has no 'content'", id="no-content"),
        pytest.param({"messages": [{"content": "hi"}]}, 422, "needs a 'role'", id="no-role"),
        pytest.param({"messages": [{"role": "boss", "content": "hi"}]}, 422, "needs a 'role'", id="unknown-role"),
        pytest.param({"messages": [{"role": "user", "content": 7}]}, 422, "content must be a string", id="content-a-number"),
        pytest.param(_user("x" * (LIMIT + 1)), 413, f"has {LIMIT + 1} characters; the limit is {LIMIT}", id="oversized"),
        pytest.param(
            {"messages": [{"role": "user", "content": [{"type": "text", "text": "x" * (LIMIT + 1)}]}]},
            413,
            "the limit is",
            id="oversized-blocks",
        ),
    ],
)
def test_input_that_cannot_start_a_turn_is_refused_with_its_reason(value: object, status: int, message: str) -> None:
    with pytest.raises(RunRefused) as refused:
        serving.check_input("recycling_guide", GUIDE, value, limit=LIMIT)
    assert refused.value.status == status
    assert message in refused.value.message


@pytest.mark.parametrize(
    "value",
    [
        pytest.param(None, id="no-input"),
        pytest.param(_user("x" * LIMIT), id="at-the-limit"),
        pytest.param({"messages": ["a bare string is a human message"]}, id="bare-string-message"),
        pytest.param({"messages": [{"type": "human", "content": [{"type": "text", "text": "hi"}]}]}, id="typed-blocks"),
        pytest.param(
            {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]}, id="seeded-history"
        ),
    ],
)
def test_input_a_graph_accepts_passes(value: object) -> None:
    serving.check_input("recycling_guide", GUIDE, value, limit=LIMIT)


def test_a_graph_without_a_known_schema_only_checks_messages_it_is_sent() -> None:
    serving.check_input("other", serving.DEFAULT_POLICY, {"request": "anything"}, limit=LIMIT)
    with pytest.raises(RunRefused, match="is empty"):
        serving.check_input("other", serving.DEFAULT_POLICY, {"messages": []}, limit=LIMIT)


@pytest.mark.parametrize("strategy", ["interrupt", "rollback"])
def test_strategies_that_cancel_the_run_in_flight_are_refused(strategy: str) -> None:
    with pytest.raises(RunRefused) as refused:
        serving.check_strategy("fan_room", GRAPH_POLICIES["fan_room"], strategy)
    assert refused.value.status == 422
    assert "runs.cancel" in refused.value.message


@pytest.mark.parametrize("strategy", [None, "enqueue", "reject"])
def test_queueing_and_rejecting_strategies_pass(strategy: str | None) -> None:
    serving.check_strategy("fan_room", GRAPH_POLICIES["fan_room"], strategy)


@pytest.mark.parametrize(
    ("graph_id", "status", "refused"),
    [
        pytest.param("ticket_triage", "busy", True, id="approval-busy"),
        pytest.param("ticket_triage", "interrupted", False, id="approval-paused"),
        pytest.param("ticket_triage", "idle", False, id="approval-idle"),
        pytest.param("fan_room", "busy", False, id="chat-busy-queues"),
    ],
)
def test_a_busy_thread_refuses_a_second_run_only_for_approval_flows(graph_id: str, status: str, refused: bool) -> None:
    policy = GRAPH_POLICIES[graph_id]
    if not refused:
        serving.check_not_busy(graph_id, policy, "t-1", status)
        return
    with pytest.raises(RunRefused) as caught:
        serving.check_not_busy(graph_id, policy, "t-1", status)
    assert caught.value.status == 409
    assert "multitask strategy 'reject'" in caught.value.message


@pytest.mark.parametrize(
    ("resume", "message"),
    [
        pytest.param({"kind": "report_choice", "answer": "summary"}, "waits for plan_approval", id="wrong-kind"),
        pytest.param({"kind": "plan_approval", "answer": "perhaps"}, "not an answer to 'plan_approval'", id="not-an-option"),
        pytest.param({"answer": "approve"}, "must name the approval", id="kind-missing"),
        pytest.param(5, "malformed resume", id="malformed"),
        pytest.param({"i-1": {"kind": "report_choice", "answer": "summary"}}, "waits for plan_approval", id="wrong-kind-by-id"),
    ],
)
def test_a_resume_that_answers_no_pending_approval_is_refused(resume: object, message: str) -> None:
    with pytest.raises(RunRefused) as refused:
        serving.check_resume("ticket_triage", TRIAGE, "t-1", resume, [PLAN])
    assert refused.value.status == 422
    assert message in refused.value.message
    assert "the thread was left as it was" in refused.value.message


@pytest.mark.parametrize(
    "resume",
    [
        pytest.param({"kind": "plan_approval", "answer": "approve"}, id="typed"),
        pytest.param("승인", id="bare-word-one-pending"),
        pytest.param({"i-1": {"kind": "plan_approval", "answer": "reject"}}, id="by-interrupt-id"),
    ],
)
def test_a_resume_that_answers_the_pending_approval_passes(resume: object) -> None:
    serving.check_resume("ticket_triage", TRIAGE, "t-1", resume, [PLAN])


def test_a_resume_on_a_thread_waiting_for_nothing_is_a_conflict() -> None:
    with pytest.raises(RunRefused) as refused:
        serving.check_resume("ticket_triage", TRIAGE, "t-1", {"kind": "plan_approval", "answer": "approve"}, [])
    assert refused.value.status == 409


def test_chat_graphs_do_not_check_resumes() -> None:
    serving.check_resume("fan_room", GRAPH_POLICIES["fan_room"], "t-1", "anything", [])


def test_pending_interrupts_are_read_from_every_task_of_a_state() -> None:
    state = {"tasks": [{"interrupts": [PLAN]}, {"interrupts": []}, {}]}
    assert serving.pending_interrupts(state) == [PLAN]


@pytest.mark.parametrize(
    ("thread_graph", "refused"),
    [
        pytest.param("ticket_triage", True, id="another-graphs-thread"),
        pytest.param("recycling_guide", False, id="its-own-thread"),
        pytest.param(None, False, id="a-thread-that-never-ran"),
    ],
)
def test_a_thread_takes_runs_of_its_own_graph_only(thread_graph: str | None, refused: bool) -> None:
    if not refused:
        serving.check_thread_graph("recycling_guide", "t-1", thread_graph)
        return
    with pytest.raises(RunRefused) as refusal:
        serving.check_thread_graph("recycling_guide", "t-1", thread_graph)
    assert refusal.value.status == 409
    assert "thread t-1 belongs to ticket_triage (the graph it first ran)" in refusal.value.message
    assert "Run it with a ticket_triage assistant" in refusal.value.message


def test_a_run_that_is_not_a_resume_is_refused_while_an_approval_is_pending() -> None:
    pending = [{"id": "i-1", "value": {**PLAN["value"], "resume_format": {"kind": "plan_approval", "answer": "approve"}}}]
    with pytest.raises(RunRefused) as refused:
        serving.check_nothing_pending("ticket_triage", TRIAGE, "t-1", pending)
    assert refused.value.status == 409
    assert "thread t-1 waits for an answer to plan_approval" in refused.value.message
    assert "command={'resume': {'kind': 'plan_approval', 'answer': 'approve'}}" in refused.value.message


def test_nothing_pending_or_a_chat_graph_takes_any_run() -> None:
    serving.check_nothing_pending("ticket_triage", TRIAGE, "t-1", [])
    serving.check_nothing_pending("fan_room", GRAPH_POLICIES["fan_room"], "t-1", [PLAN])


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        pytest.param({}, serving.DEFAULT_MAX_MESSAGE_CHARS, id="default"),
        pytest.param({serving.MAX_MESSAGE_CHARS_ENV: "120"}, 120, id="set"),
    ],
)
def test_the_message_limit_comes_from_the_environment(environ: dict, expected: int) -> None:
    assert serving.max_message_chars(environ) == expected


@pytest.mark.parametrize("raw", ["0", "-3", "lots"])
def test_a_malformed_message_limit_is_a_configuration_error(raw: str) -> None:
    with pytest.raises(ValueError, match=serving.MAX_MESSAGE_CHARS_ENV):
        serving.max_message_chars({serving.MAX_MESSAGE_CHARS_ENV: raw})


# -- LangSmith metadata ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "current", "expected"),
    [
        pytest.param(None, 2, 2, id="new-thread-gets-current"),
        pytest.param({}, 2, 2, id="empty-values-gets-current"),
        pytest.param({"messages": [], "flow_version": 1}, 2, 1, id="stamped-thread-keeps-its-version"),
        pytest.param({"messages": []}, 2, 1, id="unstamped-old-thread-is-v1"),
        pytest.param(None, None, None, id="unknown-graph"),
    ],
)
def test_runs_carry_the_flow_version_the_thread_runs_under(values: object, current: int | None, expected: int | None) -> None:
    assert tracing.thread_flow_version(values, current) == expected


def test_run_metadata_names_graph_flow_and_code_version() -> None:
    metadata = tracing.run_metadata("ticket_triage", 2, environ={tracing.CODE_VERSION_ENV: "abc1234"})
    assert metadata == {"graph_id": "ticket_triage", "flow_version": 2, "code_version": "abc1234"}


def test_code_version_defaults_to_the_package_version() -> None:
    assert tracing.code_version({}) == f"versioned-graphs-{tracing._package_version()}"
    assert tracing.code_version({}) != "versioned-graphs-unknown"
