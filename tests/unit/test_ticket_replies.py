"""The ticket reply's facts speak the customer's language throughout (graphs/ticket_triage/replies.py)."""

from __future__ import annotations

import re
from typing import get_args

import pytest

from graphs.ticket_triage.approvals import OPTIONS
from graphs.ticket_triage.policy import SLA_HOURS, check_policy
from graphs.ticket_triage.replies import LABELS, reply_facts
from graphs.ticket_triage.state import ApprovalKind, Category, Priority

LATIN = re.compile(r"[A-Za-z]")
HANGUL = re.compile(r"[\uac00-\ud7a3]")
RULES = [*SLA_HOURS, "plan_rejected"]


@pytest.mark.parametrize(
    ("field", "values"),
    [
        ("category", get_args(Category)),
        ("priority", get_args(Priority)),
        ("kind", get_args(ApprovalKind)),
        ("answer", [option for options in OPTIONS.values() for option in options]),
        ("rule", RULES),
        ("note", RULES),
    ],
)
def test_every_recorded_value_has_a_label_in_both_languages(field: str, values: list[str]) -> None:
    for lang in ("ko", "en"):
        assert set(values) <= set(LABELS[field][lang]), (field, lang)


@pytest.mark.parametrize("rule", RULES)
def test_the_english_note_is_the_policys_own(rule: str) -> None:
    classifications = {
        "billing_high_priority": ("billing", "high", "plan_approval", "approve"),
        "account_change_verified": ("account", "normal", "plan_approval", "approve"),
        "default": ("other", "normal", "report_choice", "summary"),
        "plan_rejected": ("billing", "normal", "plan_approval", "reject"),
    }
    category, priority, kind, answer = classifications[rule]
    policy = check_policy(
        {"category": category, "priority": priority, "approval_kind": kind, "summary": "s"},
        {"kind": kind, "options": [], "requested_at": "", "answer": answer, "answered_at": ""},
    )
    assert policy["rule"] == rule and LABELS["note"]["en"][rule] == policy["note"]


STATE = {
    "classification": {"category": "billing", "priority": "normal", "approval_kind": "plan_approval", "summary": "{summary}"},
    "approval": {
        "kind": "plan_approval",
        "options": ["approve", "reject"],
        "requested_at": "",
        "answer": "approve",
        "answered_at": "",
    },
    "policy": {"allowed": True, "rule": "default", "note": "no policy restriction applies"},
    "sla_hours": 72,
}


@pytest.mark.parametrize(
    ("lang", "summary", "foreign"), [("ko", "요금이 두 번 청구됐어요", LATIN), ("en", "I was charged twice", HANGUL)]
)
def test_a_reply_has_no_word_of_the_other_language(lang: str, summary: str, foreign: re.Pattern[str]) -> None:
    state = {**STATE, "classification": {**STATE["classification"], "summary": summary}}
    facts = " ".join(reply_facts(state, lang))
    assert not foreign.search(facts), facts


def test_a_rule_without_a_label_is_quoted_as_stored() -> None:
    state = {"policy": {"allowed": False, "rule": "new_rule", "note": "a note from a newer version"}}
    assert reply_facts(state, "ko") == ["정책(new_rule): 진행 불가. a note from a newer version."]
