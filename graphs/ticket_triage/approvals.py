"""Typed approvals: what a paused thread asks, and how a resume must answer.

Seed 004: "승인" alone is ambiguous (plan approval? report choice? an answer to
a clarifying question?). So every interrupt names its kind, and a resume must
say which kind it answers::

    Command(resume={"kind": "plan_approval", "answer": "approve"})

A bare word ("승인", "approve", "요약") is accepted only when exactly one
approval is pending and the word is one of that approval's options. Anything
else raises `InvalidResume`; the node then asks again with the error attached,
so the thread stays interrupted and its values stay as they were.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NotRequired, get_args

from typing_extensions import TypedDict

from graphs.ticket_triage.state import ApprovalKind

APPROVAL_KINDS: tuple[str, ...] = get_args(ApprovalKind)

OPTIONS: dict[str, tuple[str, ...]] = {
    "plan_approval": ("approve", "reject"),
    "report_choice": ("summary", "detailed"),
    "clarification": (),  # free text
}
"""Allowed answers per kind; an empty tuple means free text."""

ALIASES: dict[str, tuple[str, ...]] = {
    "approve": ("approve", "approved", "yes", "ok", "승인", "네", "예", "좋아요"),
    "reject": ("reject", "rejected", "no", "거절", "반려", "아니요", "아니오"),
    "summary": ("summary", "short", "요약", "간단히"),
    "detailed": ("detailed", "detail", "full", "상세", "자세히"),
}
"""Words accepted for each option (case-insensitive, surrounding space ignored)."""

QUESTIONS: dict[str, dict[str, str]] = {
    "plan_approval": {
        "ko": "이 처리 계획을 승인하시겠습니까? (approve / reject)",
        "en": "Do you approve this plan? (approve / reject)",
    },
    "report_choice": {
        "ko": "어떤 보고서를 드릴까요? (summary / detailed)",
        "en": "Which report should we prepare? (summary / detailed)",
    },
    "clarification": {
        "ko": "요청을 조금 더 구체적으로 알려 주시겠어요?",
        "en": "Could you tell us a bit more about the request?",
    },
}


class ApprovalRequest(TypedDict):
    """The interrupt payload `triage` raises (JSON, shown to clients as-is)."""

    kind: str
    """One of `APPROVAL_KINDS`."""
    question: str
    """What to ask the human, in the customer's language."""
    options: list[str]
    """Allowed answers; empty for a free-text clarification."""
    requested_at: str
    """ISO-8601 UTC time the question was first asked."""
    resume_at: str
    """The node that receives the answer (the node that is paused)."""
    next_step: str
    """The node the thread goes to once the answer is accepted."""
    summary: str
    """What the ticket is about, so the approver need not read the thread."""
    resume_format: dict[str, str]
    """An example resume value for this request."""
    error: NotRequired[str]
    """Why the previous resume was refused (only on a repeated ask)."""


class InvalidResume(ValueError):
    """A resume value that does not answer the pending approval."""


def build_request(*, kind: str, lang: str, requested_at: str, next_step: str, summary: str) -> ApprovalRequest:
    """The interrupt payload for one approval of ``kind``."""
    options = list(OPTIONS[kind])
    example = options[0] if options else "<your answer>"
    return ApprovalRequest(
        kind=kind,
        question=QUESTIONS[kind]["ko" if lang == "ko" else "en"],
        options=options,
        requested_at=requested_at,
        resume_at="triage",
        next_step=next_step,
        summary=summary,
        resume_format={"kind": kind, "answer": example},
    )


def _normalise(kind: str, answer: Any) -> str:
    if not isinstance(answer, str) or not answer.strip():
        raise InvalidResume(f"the answer for {kind!r} must be a non-empty string, got {answer!r}")
    options = OPTIONS[kind]
    if not options:
        return answer.strip()
    word = answer.strip().lower()
    for option in options:
        if word in ALIASES[option]:
            return option
    raise InvalidResume(f"{answer!r} is not an answer to {kind!r}; allowed: {', '.join(options)}")


def parse_resume(value: Any, pending: Sequence[Mapping[str, Any]]) -> tuple[str, str]:
    """Return ``(kind, answer)`` for a resume value, or raise `InvalidResume`.

    ``pending`` lists the approvals the thread waits for.
    """
    kinds = [p["kind"] for p in pending]
    if isinstance(value, Mapping):
        kind, answer = value.get("kind"), value.get("answer")
        if kind not in APPROVAL_KINDS:
            raise InvalidResume(
                f"resume must name the approval it answers: 'kind' is {kind!r}, expected one of {', '.join(kinds)}"
            )
        if kind not in kinds:
            raise InvalidResume(f"this thread waits for {', '.join(kinds)}; the resume answers {kind!r}")
        return kind, _normalise(kind, answer)
    if isinstance(value, str):
        if len(pending) != 1:
            raise InvalidResume(
                f"a bare answer is ambiguous while {len(pending)} approvals are pending "
                f"({', '.join(kinds)}); send {{'kind': ..., 'answer': ...}}"
            )
        kind = kinds[0]
        if not OPTIONS[kind]:
            raise InvalidResume(f"a {kind!r} answer must name its kind: send {{'kind': '{kind}', 'answer': '...'}}")
        return kind, _normalise(kind, value)
    raise InvalidResume(f"malformed resume {value!r}: send {{'kind': <approval kind>, 'answer': <answer>}}")
