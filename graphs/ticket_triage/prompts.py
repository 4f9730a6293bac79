"""Prompts and the structured-output schema of the ticket-triage graph.

The field descriptions double as the offline model's keyword lists
(``value (kw1, kw2)``); a hosted model reads them as instructions.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

TRIAGE_SYSTEM = (
    "You triage customer support tickets. Classify the latest customer message "
    "with the TicketClassification tool. Korean and English tickets are both common."
)

RESPOND_SYSTEM = "You write the final reply to the customer, in the customer's language, using only these facts:"


class TicketClassification(BaseModel):
    """Classify a support ticket and name the human decision it needs."""

    category: Literal["billing", "bug", "account", "feature", "other"] = Field(
        default="other",
        description=(
            "Ticket category: billing (결제, 환불, 청구, 요금, refund, invoice, charge, payment, billing); "
            "bug (오류, 에러, 버그, 고장, 안 돼, error, crash, broken, bug); "
            "account (계정, 로그인, 비밀번호, account, login, password); "
            "feature (기능, 추가해, 제안, feature, suggest); other (anything else)."
        ),
    )
    priority: Literal["low", "normal", "high"] = Field(
        default="normal",
        description=(
            "Urgency: high (긴급, 급해, 당장, 즉시, urgent, asap, immediately, critical); "
            "low (천천히, 나중에, whenever, no rush); normal otherwise."
        ),
    )
    approval_kind: Literal["plan_approval", "report_choice", "clarification"] = Field(
        default="clarification",
        description=(
            "The human decision needed before acting: plan_approval (환불, 취소, 삭제, 변경, 해지, "
            "refund, cancel, delete, change, reset) when we will take an action on the account; "
            "report_choice (보고서, 리포트, 내역, 명세, report, statement, export, history) when the "
            "customer wants a report; clarification when the request is too vague to act on."
        ),
    )
    summary: str = Field(description="One-line summary of the request, in the customer's words.")
