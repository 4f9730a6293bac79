"""Policy rules checked after approval (flow_version >= 2).

Pure functions over the classification and the approval, so they are unit
tested without a model.
"""

from __future__ import annotations

from graphs.ticket_triage.state import Approval, Classification, PolicyResult

SLA_HOURS: dict[str, int] = {
    "billing_high_priority": 24,
    "account_change_verified": 48,
    "default": 72,
}
"""Promised resolution time per rule; rules that stop the plan promise nothing."""


def sla_hours(policy: PolicyResult) -> int | None:
    """Resolution time promised for an allowed plan, or None."""
    return SLA_HOURS.get(policy["rule"]) if policy["allowed"] else None


def check_policy(classification: Classification, approval: Approval) -> PolicyResult:
    """Decide whether the approved plan may go ahead."""
    if approval["kind"] == "plan_approval" and approval["answer"] == "reject":
        return PolicyResult(allowed=False, rule="plan_rejected", note="the plan was rejected by the approver")
    if classification["category"] == "billing" and classification["priority"] == "high":
        return PolicyResult(
            allowed=True,
            rule="billing_high_priority",
            note="urgent billing changes are processed within one business day",
        )
    if classification["category"] == "account" and approval["kind"] == "plan_approval":
        return PolicyResult(
            allowed=True,
            rule="account_change_verified",
            note="account changes are applied after identity verification",
        )
    return PolicyResult(allowed=True, rule="default", note="no policy restriction applies")
