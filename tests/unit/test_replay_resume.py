"""`playbook replay`'s resume values: one per pending interrupt, fitted to that interrupt.

Pure rules (`derive_from_payload`, `ResumeRule`, `plan_resume`) on payload shapes; this
repo's own approval payloads checked against its own parser; an ``{id: value}`` plan run
on a real compiled graph; a resumed run judged by what it showed (refused, asked again,
the step lost) and by where its value came from; the findings and notes of the ledger.
The server side is in tests/integration/test_gate_server.py.
"""

from __future__ import annotations

import json
import operator
import uuid
from pathlib import Path
from typing import Annotated, Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt
from langgraph_api.state import state_snapshot_to_thread_state
from typing_extensions import TypedDict

from graphs.ticket_triage.approvals import APPROVAL_KINDS, build_request, parse_resume
from migrations_playbook import cli
from migrations_playbook.model import STAGING_RESUME_UNANSWERED
from migrations_playbook.proof.resume import (
    Answer,
    ResumeLedger,
    ResumeMapError,
    ResumePlan,
    ResumeRule,
    RunOutcome,
    Unanswered,
    derive_from_payload,
    judge_resume,
    load_resume_map,
    plan_resume,
)
from migrations_playbook.sources.interrupts import PendingInterrupt, pending_interrupts

PLAN = {"kind": "plan_approval", "options": ["approve", "reject"]}
REPORT = {"kind": "report_choice", "options": ["summary", "detailed"]}


def _interrupt(value: Any, path: str = "triage", interrupt_id: str | None = "i-1") -> PendingInterrupt:
    return PendingInterrupt(path=path, value=value, id=interrupt_id)


# -- derivation from the payload ------------------------------------------------------


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        pytest.param(
            {**PLAN, "resume_format": {"kind": "plan_approval", "answer": "approve"}},
            ({"kind": "plan_approval", "answer": "approve"}, "resume_format"),
            id="resume-format-wins-over-options",
        ),
        pytest.param({"resume_format": "yes"}, ("yes", "resume_format"), id="resume-format-any-json"),
        pytest.param(REPORT, ({"kind": "report_choice", "answer": "summary"}, "kind+options"), id="kind-and-options"),
        pytest.param({"options": ["go", "stop"]}, ("go", "options"), id="options-only"),
        pytest.param({"question": "?", "options": [{"id": 1}]}, ({"id": 1}, "options"), id="option-objects-as-is"),
        pytest.param({"kind": "plan_approval", "request": "x"}, None, id="kind-without-options"),
        pytest.param({"kind": "clarification", "options": []}, None, id="free-text-no-options"),
        pytest.param({"options": "approve"}, None, id="options-not-a-list"),
        pytest.param("Do you approve?", None, id="plain-string-payload"),
        pytest.param(None, None, id="no-payload"),
    ],
)
def test_payload_gives_a_resume_value_only_when_it_says_how(payload: Any, expected: Any) -> None:
    assert derive_from_payload(payload) == expected


@pytest.mark.parametrize("kind", APPROVAL_KINDS)
def test_value_derived_from_a_ticket_triage_request_is_accepted_by_its_parser(kind: str) -> None:
    """Truth test: what --auto-resume sends is what graphs/ticket_triage accepts for that kind."""
    request = build_request(kind=kind, lang="en", requested_at="2025-01-01T00:00:00+00:00", next_step="respond", summary="s")
    payload = json.loads(json.dumps(request))  # as the server returns it
    derived = derive_from_payload(payload)
    assert derived is not None and derived[1] == "resume_format"
    assert parse_resume(derived[0], [payload])[0] == kind


# -- the rule: map, then payload, then fallback ---------------------------------------


def test_map_entry_for_the_kind_wins_over_the_payload_and_the_fallback() -> None:
    rule = ResumeRule(by_kind={"plan_approval": "reject"}, derive=True, fallback="approved")
    assert rule.answer(_interrupt(PLAN)) == Answer(_interrupt(PLAN), "reject", "--resume-map")


def test_payload_answers_kinds_the_map_does_not_name() -> None:
    rule = ResumeRule(by_kind={"plan_approval": "reject"}, derive=True, fallback="approved")
    assert rule.answer(_interrupt(REPORT)) == Answer(
        _interrupt(REPORT), {"kind": "report_choice", "answer": "summary"}, "kind+options"
    )


def test_without_auto_resume_the_payload_is_not_used_and_the_fallback_answers() -> None:
    rule = ResumeRule(fallback="approved")
    assert rule.answer(_interrupt(PLAN)) == Answer(_interrupt(PLAN), "approved", "--resume")


def test_fallback_answers_what_neither_map_nor_payload_can() -> None:
    helpdesk = {"kind": "plan_approval", "request": "slow page"}  # no options: nothing to derive
    rule = ResumeRule(by_kind={"report_choice": "summary"}, derive=True, fallback="approved")
    assert rule.answer(_interrupt(helpdesk)) == Answer(_interrupt(helpdesk), "approved", "--resume")


def test_fallback_naming_another_kind_leaves_the_interrupt_unanswered() -> None:
    rule = ResumeRule(fallback={"kind": "plan_approval", "answer": "approve"})
    result = rule.answer(_interrupt(REPORT))
    assert isinstance(result, Unanswered)
    assert "--resume answers 'plan_approval', not 'report_choice'" in result.reason
    assert '{"report_choice": "<value>"}' in result.reason and "--auto-resume" in result.reason


def test_fallback_naming_the_same_kind_answers() -> None:
    value = {"kind": "plan_approval", "answer": "approve"}
    assert ResumeRule(fallback=value).answer(_interrupt(PLAN)) == Answer(_interrupt(PLAN), value, "--resume")


def test_interrupt_nothing_answers_is_unanswered_with_what_was_tried() -> None:
    rule = ResumeRule(by_kind={"plan_approval": "approve"}, derive=True)
    result = rule.answer(_interrupt({"kind": "clarification", "question": "more?"}))
    assert isinstance(result, Unanswered)
    assert result.reason.startswith(
        "--resume-map has no entry for 'clarification'; the payload gives no value (no resume_format, options, "
        "review configs or response_schema)"
    )
    assert "(or key it by node path or thread id)" in result.reason


@pytest.mark.parametrize(
    ("rule", "active"),
    [
        pytest.param(ResumeRule(), False, id="nothing-given-no-resume"),
        pytest.param(ResumeRule(fallback="x"), True, id="resume"),
        pytest.param(ResumeRule(by_kind={"k": 1}), True, id="resume-map"),
        pytest.param(ResumeRule(derive=True), True, id="auto-resume"),
    ],
)
def test_threads_are_resumed_only_when_asked_to(rule: ResumeRule, active: bool) -> None:
    assert rule.active is active


# -- pending interrupts and the plan of one thread ------------------------------------


def test_subgraph_interrupt_listed_on_parent_and_child_task_counts_once_at_the_inner_path() -> None:
    entry = {"id": "abc", "value": {"kind": "confirm"}}
    state = {
        "tasks": [
            {
                "name": "review",
                "interrupts": [entry],
                "state": {"next": ["confirm"], "tasks": [{"name": "confirm", "interrupts": [entry]}]},
            }
        ]
    }
    assert pending_interrupts(state) == [PendingInterrupt(path="review:confirm", value={"kind": "confirm"}, id="abc")]


def test_one_interrupt_is_resumed_with_the_bare_value() -> None:
    plan = plan_resume([_interrupt(PLAN)], ResumeRule(derive=True))
    assert plan.resume == {"kind": "plan_approval", "answer": "approve"}


def test_parallel_interrupts_are_resumed_by_id_each_with_its_own_value() -> None:
    interrupts = [_interrupt(PLAN, "a", "id-a"), _interrupt(REPORT, "b", "id-b")]
    plan = plan_resume(interrupts, ResumeRule(by_kind={"report_choice": "detailed"}, derive=True))
    assert plan.resume == {"id-a": {"kind": "plan_approval", "answer": "approve"}, "id-b": "detailed"}
    assert [a.source for a in plan.answers] == ["kind+options", "--resume-map"]


def test_thread_with_one_unanswerable_interrupt_is_not_resumed_at_all() -> None:
    interrupts = [_interrupt(PLAN, "a", "id-a"), _interrupt({"kind": "clarification"}, "b", "id-b")]
    plan = plan_resume(interrupts, ResumeRule(derive=True))
    assert plan.answers == ()
    assert [(u.interrupt.path, u.interrupt.kind) for u in plan.unanswered] == [("b", "clarification")]


def test_parallel_interrupts_without_ids_cannot_be_resumed() -> None:
    interrupts = [_interrupt(PLAN, "a", None), _interrupt(REPORT, "b", None)]
    plan = plan_resume(interrupts, ResumeRule(derive=True))
    assert plan.answers == ()
    assert all("no interrupt ids" in u.reason for u in plan.unanswered)


def test_breakpoint_without_payload_is_continued_with_the_fallback() -> None:
    assert plan_resume([], ResumeRule(fallback="go"), ["respond"]).resume == "go"


def test_breakpoint_without_payload_and_without_fallback_is_reported_not_guessed() -> None:
    plan = plan_resume([], ResumeRule(derive=True), ["respond"])
    assert plan.answers == ()
    assert (plan.unanswered[0].interrupt.path, "breakpoint" in plan.unanswered[0].reason) == ("respond", True)


class _Branches(TypedDict):
    log: Annotated[list, operator.add]


def _parallel_approvals() -> Any:
    def plan(state: _Branches) -> dict:
        return {"log": [("plan", interrupt({**PLAN, "resume_format": {"kind": "plan_approval", "answer": "approve"}}))]}

    def report(state: _Branches) -> dict:
        return {"log": [("report", interrupt(REPORT))]}

    builder = StateGraph(_Branches)
    builder.add_node("plan", plan)
    builder.add_node("report", report)
    builder.add_edge(START, "plan")
    builder.add_edge(START, "report")
    builder.add_edge("plan", END)
    builder.add_edge("report", END)
    return builder.compile(checkpointer=InMemorySaver())


def test_id_map_plan_resumes_both_branches_of_a_real_graph_with_their_own_values() -> None:
    """Truth test: the state is serialized as the Agent Server does (langgraph_api.state), and
    langgraph itself takes the plan's ``{id: value}``."""
    graph = _parallel_approvals()
    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    graph.invoke({"log": []}, config)
    served = json.loads(json.dumps(state_snapshot_to_thread_state(graph.get_state(config, subgraphs=True)), default=str))
    plan = plan_resume(pending_interrupts(served), ResumeRule(derive=True))
    assert len(plan.answers) == 2 and not plan.unanswered
    result = graph.invoke(Command(resume=plan.resume), config)
    assert sorted(result["log"]) == [
        ("plan", {"kind": "plan_approval", "answer": "approve"}),
        ("report", {"kind": "report_choice", "answer": "summary"}),
    ]


# -- --resume-map parsing ---------------------------------------------------------------


def test_resume_map_merges_json_and_files_later_wins(tmp_path: Path) -> None:
    path = tmp_path / "answers.json"
    path.write_text(json.dumps({"plan_approval": "approve", "report_choice": "summary"}))
    assert load_resume_map([f"@{path}", '{"report_choice": "detailed"}']) == {
        "plan_approval": "approve",
        "report_choice": "detailed",
    }


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("{not json", "--resume-map must be JSON", id="bad-json"),
        pytest.param('["approve"]', "must be a JSON object (kind, node path or thread id -> resume value), got list", id="list"),
        pytest.param('"approve"', "got str", id="string"),
        pytest.param('{"plan_approval": null}', "null is not a resume value (kind(s) plan_approval)", id="null-value"),
        pytest.param("@/nonexistent/answers.json", "cannot read the file", id="missing-file"),
    ],
)
def test_bad_resume_map_is_refused_with_a_message(text: str, message: str) -> None:
    with pytest.raises(ResumeMapError) as refused:
        load_resume_map([text])
    assert message in str(refused.value)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        pytest.param(["--resume-map", "[1]"], "--resume-map must be a JSON object", id="non-object-map"),
        pytest.param(["--resume-map", "{oops"], "--resume-map must be JSON", id="bad-json-map"),
        pytest.param(["--resume-map", "@/nonexistent.json"], "cannot read the file", id="unreadable-map-file"),
        pytest.param(["--auto-resume", "--resume", "{oops"], "--resume must be JSON", id="bad-json-fallback"),
    ],
)
def test_bad_resume_flags_exit_2_without_a_traceback(flags: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(["replay", "--live", "http://x", "--candidate", "c", "--staging-url", "http://y", *flags])
    err = capsys.readouterr().err
    assert code == cli.EXIT_USAGE
    assert message in err and "Traceback" not in err


# -- judging a resumed run, and what the report says -----------------------------------


def _approval(kind: str) -> dict:
    """A ticket_triage interrupt payload, as the server returns it."""
    request = build_request(kind=kind, lang="en", requested_at="t", next_step="policy_check", summary="s")
    return json.loads(json.dumps(request))


def _paused(payload: dict, thread_id: str) -> dict:
    """A paused thread's state in the `get_state(subgraphs=True)` shape."""
    return {
        "next": ["triage"],
        "checkpoint": {"checkpoint_id": f"cp-{thread_id}"},
        "tasks": [{"name": "triage", "interrupts": [{"id": f"int-{thread_id}", "value": payload}], "state": None}],
    }


def _plan(rule: ResumeRule, kind: str) -> ResumePlan:
    return plan_resume(pending_interrupts(_paused(_approval(kind), "t")), rule, ["triage"])


RAN = RunOutcome(ran=frozenset({"triage", "policy_check", "respond"}))
REFUSED = RunOutcome(
    refused=(422, "resume refused, the thread was left as it was: 'approve' is not an answer to 'report_choice'")
)


def _asked_again(kind: str) -> RunOutcome:
    again = _paused({**_approval(kind), "error": f"'approve' is not an answer to {kind!r}"}, "t")
    return RunOutcome(ran=frozenset({"__interrupt__"}), after=again)


@pytest.mark.parametrize(
    ("rule", "outcome", "expected"),
    [
        pytest.param(ResumeRule(derive=True), RAN, None, id="paused-step-ran-passes"),
        pytest.param(
            ResumeRule(fallback="approve"),
            REFUSED,
            (STAGING_RESUME_UNANSWERED, "warn", "staging refused the resume value"),
            id="refused-fallback-warns",
        ),
        pytest.param(
            ResumeRule(derive=True),
            REFUSED,
            ("STAGING_RESUME_FAILED", "block", "the payload's resume_format"),
            id="refused-resume-format-blocks",
        ),
        pytest.param(
            ResumeRule(by_kind={"report_choice": "detailed"}),
            REFUSED,
            ("STAGING_RESUME_FAILED", "block", "--resume-map"),
            id="refused-mapped-value-blocks",
        ),
        pytest.param(
            ResumeRule(fallback="approve"),
            RunOutcome(refused=(500, "boom")),
            ("STAGING_RESUME_FAILED", "block", "500: boom"),
            id="server-error-blocks-even-for-the-fallback",
        ),
        pytest.param(
            ResumeRule(fallback="approve"),
            _asked_again("report_choice"),
            (STAGING_RESUME_UNANSWERED, "warn", "asked the same question again"),
            id="fallback-asked-again-warns",
        ),
        pytest.param(
            ResumeRule(by_kind={"report_choice": "detailed"}),
            _asked_again("report_choice"),
            ("STAGING_RESUME_FAILED", "block", "did not accept"),
            id="mapped-value-asked-again-blocks",
        ),
        pytest.param(
            ResumeRule(fallback="approve"),
            RunOutcome(ran=frozenset()),
            ("STAGING_RESUME_FAILED", "block", "never ran"),
            id="step-never-ran-blocks-whatever-the-source",
        ),
        pytest.param(
            ResumeRule(derive=True),
            RunOutcome(error="the resumed run failed: KeyError"),
            ("STAGING_RESUME_FAILED", "block", "KeyError"),
            id="failed-run-blocks",
        ),
    ],
)
def test_resumed_run_is_judged_by_outcome_and_value_source(rule: ResumeRule, outcome: RunOutcome, expected: Any) -> None:
    problem = judge_resume(_plan(rule, "report_choice"), ["triage"], outcome)
    if expected is None:
        assert problem is None
    else:
        assert problem is not None and (problem.code, problem.severity) == expected[:2]
        assert expected[2] in problem.message


def test_asked_again_names_the_graphs_own_error() -> None:
    problem = judge_resume(_plan(ResumeRule(fallback="approve"), "report_choice"), ["triage"], _asked_again("report_choice"))
    assert problem is not None and "'approve' is not an answer to 'report_choice'" in problem.message


def test_a_different_question_after_the_resume_is_progress_not_a_re_ask() -> None:
    """The step ran and asked something else (the next approval): the work was not lost."""
    follow_up = RunOutcome(ran=frozenset({"__interrupt__"}), after=_paused({"kind": "clarification", "question": "which?"}, "t"))
    assert judge_resume(_plan(ResumeRule(derive=True), "plan_approval"), ["triage"], follow_up) is None


def test_fallback_fitting_one_kind_reports_the_other_kinds_thread_by_id_and_kind() -> None:
    ledger = ResumeLedger(ResumeRule(fallback={"kind": "plan_approval", "answer": "approve"}))
    plan_thread = ledger.plan("ticket_triage", "t-plan", _paused(_approval("plan_approval"), "t-plan"), ["triage"])
    ledger.record("ticket_triage", "t-plan", ["triage"], judge_resume(plan_thread, ["triage"], RAN))
    report_thread = ledger.plan("ticket_triage", "t-report", _paused(_approval("report_choice"), "t-report"), ["triage"])
    assert report_thread.answers == ()  # not sent: it would only be refused
    (finding,) = ledger.findings.values()
    assert (finding.code, finding.severity, finding.node, finding.thread_ids) == (
        STAGING_RESUME_UNANSWERED,
        "warn",
        "triage",
        ["t-report"],
    )
    assert "waiting for report_choice (e.g. thread t-report)" in finding.message
    assert ledger.notes() == [
        'resumed on staging; each interrupt with --resume {"kind": "plan_approval", "answer": "approve"}',
        'ticket_triage plan_approval: 1 interrupt(s) resumed with {"answer": "approve", "kind": "plan_approval"} '
        "(the --resume fallback)",
        "ticket_triage: 1 of 2 interrupted thread(s) resumed on staging; the paused step ran on 1",
    ]


def test_notes_count_resumed_interrupts_per_kind_value_and_source() -> None:
    ledger = ResumeLedger(ResumeRule(by_kind={"report_choice": "detailed"}, derive=True))
    for thread_id, kind in [("a", "plan_approval"), ("b", "plan_approval"), ("c", "report_choice")]:
        plan = ledger.plan("ticket_triage", thread_id, _paused(_approval(kind), thread_id), ["triage"])
        ledger.record("ticket_triage", thread_id, ["triage"], judge_resume(plan, ["triage"], RAN))
    assert ledger.findings == {}
    assert ledger.notes() == [
        "resumed on staging; each interrupt with the --resume-map entry for its kind (report_choice), "
        "else the value its payload gives (--auto-resume)",
        'ticket_triage plan_approval: 2 interrupt(s) resumed with {"answer": "approve", "kind": "plan_approval"} '
        "(the payload's resume_format)",
        'ticket_triage report_choice: 1 interrupt(s) resumed with "detailed" (the --resume-map entry for its kind)',
        "ticket_triage: 3 of 3 interrupted thread(s) resumed on staging; the paused step ran on 3",
    ]


def test_no_resume_flag_adds_no_resume_notes() -> None:
    assert ResumeLedger(ResumeRule()).notes() == []


def test_payload_without_kind_or_options_asks_for_a_fallback() -> None:
    result = ResumeRule(by_kind={"plan_approval": "approve"}, derive=True).answer(_interrupt("Continue?"))
    assert isinstance(result, Unanswered)
    assert result.reason.startswith("the payload has no 'kind' for --resume-map; the payload gives no value")
    assert result.reason.endswith(
        "(key --resume-map by the node path or the thread id (the payload has no 'kind'), or pass --resume)"
    )


def test_a_question_asked_again_by_another_node_is_the_same_question_despite_a_new_timestamp() -> None:
    from migrations_playbook.sources.interrupts import same_question

    asked = {
        "kind": "plan_approval",
        "question": "Approve?",
        "options": ["approved", "rejected"],
        "requested_at": "2026-12-01T10:00:00+00:00",
        "resume_at": "triage",
    }
    again = {**asked, "requested_at": "2026-12-01T14:00:00+00:00", "resume_at": "assess"}
    assert same_question(asked, again)
    assert not same_question(asked, {**again, "options": ["approved"]})
    assert not same_question(asked, {**again, "kind": "report_choice"})
    assert same_question("free text?", "free text?") and not same_question("a?", "b?")
    assert same_question({"q": 1}, {"q": 1, "error": "try again"}) and not same_question({"q": 1}, {"q": 2})


# -- the human-in-the-loop shapes real projects pause with (issue 36: answered without flags) ---------------

HITL_REQUEST = {
    "action_requests": [
        {"name": "send_email", "args": {"to": "kim@example.com"}, "description": "Tool execution pending approval"},
        {"name": "delete_file", "args": {"path": "/tmp/x"}, "description": "Tool execution pending approval"},
    ],
    "review_configs": [
        {"action_name": "send_email", "allowed_decisions": ["approve", "edit", "reject"]},
        {"action_name": "delete_file", "allowed_decisions": ["reject"]},
    ],
}


def test_a_human_in_the_loop_middleware_request_gets_a_decision_per_action_its_review_config_allows() -> None:
    assert derive_from_payload(HITL_REQUEST) == (
        {"decisions": [{"type": "approve"}, {"type": "reject", "message": "rejected by the shadow proof"}]},
        "review_configs",
    )
    edit_only = {**HITL_REQUEST, "review_configs": [{"action_name": "send_email", "allowed_decisions": ["edit"]}]}
    assert derive_from_payload({**edit_only, "action_requests": HITL_REQUEST["action_requests"][:1]}) == (
        {"decisions": [{"type": "edit", "edited_action": {"name": "send_email", "args": {"to": "kim@example.com"}}}]},
        "review_configs",
    )


def test_an_agent_inbox_request_list_gets_a_response_its_config_allows() -> None:
    request = {
        "action_request": {"action": "write_email", "args": {"to": "kim@example.com"}},
        "config": {"allow_ignore": True, "allow_respond": True, "allow_edit": True, "allow_accept": True},
        "description": "Draft ready",
    }
    question = {**request, "config": {"allow_ignore": True, "allow_respond": True, "allow_edit": False, "allow_accept": False}}
    assert derive_from_payload([request]) == (
        [{"type": "accept", "args": {"action": "write_email", "args": {"to": "kim@example.com"}}}],
        "agent_inbox",
    )
    assert derive_from_payload([question]) == ([{"type": "response", "args": "ok"}], "agent_inbox")
    assert derive_from_payload([{"action_request": "not a request"}]) is None
