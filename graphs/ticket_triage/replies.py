"""The facts `respond` writes its reply from, in the customer's language throughout.

State keeps machine values (``billing``, ``plan_approval``, ``approve``, rule ids,
the policy's English ``note``); the reply says them in words of the customer's
language, so a Korean ticket never reads "정책 default: 진행 가능 (no policy
restriction applies)". A value without a label (a rule a later version adds, an
old thread's note) is quoted as stored rather than dropped.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

Language = Literal["ko", "en"]

TEMPLATES: dict[Language, dict[str, str]] = {
    "en": {
        "ticket": "Ticket: {summary} ({category}, {priority} priority).",
        "decision": "Decision on the {kind}: {answer}.",
        "policy": "Policy ({rule}): {verdict}; {note}.",
        "allowed": "the plan may go ahead",
        "refused": "the plan does not go ahead",
        "sla": "Expected resolution within {hours} hours.",
    },
    "ko": {
        "ticket": "접수 내용: {summary} ({category}, 우선순위 {priority}).",
        "decision": "{kind} 결과: {answer}.",
        "policy": "정책({rule}): {verdict}. {note}.",
        "allowed": "진행 가능",
        "refused": "진행 불가",
        "sla": "{hours}시간 안에 처리될 예정입니다.",
    },
}

LABELS: dict[str, dict[Language, dict[str, str]]] = {
    "category": {
        "en": {"billing": "billing", "bug": "bug", "account": "account", "feature": "feature request", "other": "other"},
        "ko": {"billing": "결제", "bug": "오류", "account": "계정", "feature": "기능 제안", "other": "기타"},
    },
    "priority": {
        "en": {"low": "low", "normal": "normal", "high": "high"},
        "ko": {"low": "낮음", "normal": "보통", "high": "높음"},
    },
    "kind": {
        "en": {"plan_approval": "plan approval", "report_choice": "report choice", "clarification": "clarification"},
        "ko": {"plan_approval": "처리 계획 승인", "report_choice": "보고서 선택", "clarification": "추가 설명 요청"},
    },
    "answer": {
        "en": {"approve": "approved", "reject": "rejected", "summary": "a summary report", "detailed": "a detailed report"},
        "ko": {"approve": "승인", "reject": "거절", "summary": "요약 보고서", "detailed": "상세 보고서"},
    },
    "rule": {
        "en": {
            "plan_rejected": "plan rejected",
            "billing_high_priority": "urgent billing",
            "account_change_verified": "verified account change",
            "default": "standard",
        },
        "ko": {
            "plan_rejected": "계획 거절",
            "billing_high_priority": "긴급 결제",
            "account_change_verified": "본인 확인 후 계정 변경",
            "default": "기본",
        },
    },
    "note": {
        "en": {
            "plan_rejected": "the plan was rejected by the approver",
            "billing_high_priority": "urgent billing changes are processed within one business day",
            "account_change_verified": "account changes are applied after identity verification",
            "default": "no policy restriction applies",
        },
        "ko": {
            "plan_rejected": "승인 담당자가 계획을 거절했습니다",
            "billing_high_priority": "긴급 결제 변경은 영업일 기준 하루 안에 처리됩니다",
            "account_change_verified": "계정 변경은 본인 확인 후 적용됩니다",
            "default": "적용되는 정책 제한이 없습니다",
        },
    },
}
"""Words per field, value and language (``note`` is keyed by the policy rule)."""


def label(field: str, value: str, lang: Language) -> str:
    """``value`` of ``field`` in ``lang``; the value itself when it has no label."""
    return LABELS[field][lang].get(value, value)


def reply_facts(state: Mapping[str, Any], lang: str) -> list[str]:
    """The reply's facts (classification, decision, policy, SLA) in ``lang`` (``ko`` or else English)."""
    language: Language = "ko" if lang == "ko" else "en"
    text = TEMPLATES[language]
    facts: list[str] = []
    classification = state.get("classification")
    if classification:
        facts.append(
            text["ticket"].format(
                summary=classification["summary"],
                category=label("category", classification["category"], language),
                priority=label("priority", classification["priority"], language),
            )
        )
    approval = state.get("approval")
    if approval:
        facts.append(
            text["decision"].format(
                kind=label("kind", approval["kind"], language), answer=label("answer", approval["answer"], language)
            )
        )
    policy = state.get("policy")
    if policy:
        facts.append(
            text["policy"].format(
                rule=label("rule", policy["rule"], language),
                verdict=text["allowed"] if policy["allowed"] else text["refused"],
                note=LABELS["note"][language].get(policy["rule"], policy["note"]),
            )
        )
    if "sla_hours" in state:
        facts.append(text["sla"].format(hours=state["sla_hours"]))
    return facts
