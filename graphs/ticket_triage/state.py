"""State of the ticket-triage graph.

Compatibility rules (migrations_playbook/docs/rules.md): fields are only ever
added as `NotRequired`; a field is removed only after a drain and a record.

No `from __future__ import annotations` here: with string annotations
`TypedDict` cannot see `NotRequired`, and every field would count as required.
"""

from typing import Annotated, Literal, NotRequired

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict

CURRENT_FLOW_VERSION = 2
"""The flow new threads are stamped with. v2 inserted `policy_check`."""

ApprovalKind = Literal["plan_approval", "report_choice", "clarification"]
"""Which human decision a paused thread waits for (seed 004: "승인" alone is ambiguous)."""

Category = Literal["billing", "bug", "account", "feature", "other"]
Priority = Literal["low", "normal", "high"]


class Classification(TypedDict):
    """What `triage` decided about the ticket."""

    category: Category
    """Ticket category."""
    priority: Priority
    """How urgent the customer says it is."""
    approval_kind: ApprovalKind
    """The human decision this ticket needs before we act."""
    summary: str
    """One-line summary of the request."""


class Approval(TypedDict):
    """A human decision, recorded once it is answered."""

    kind: ApprovalKind
    """Which decision was asked."""
    options: list[str]
    """The answers that were allowed (empty for free-text clarifications)."""
    requested_at: str
    """ISO-8601 UTC time the question was first asked."""
    answer: str
    """The validated answer (an option, or the clarification text)."""
    answered_at: str
    """ISO-8601 UTC time the valid answer arrived."""


class PolicyResult(TypedDict):
    """Outcome of the policy check (flow_version >= 2 only)."""

    allowed: bool
    """Whether the approved plan may go ahead."""
    rule: str
    """Identifier of the rule that decided."""
    note: str
    """Human-readable reason, quoted in the response."""


class TicketInput(TypedDict):
    """What a run accepts."""

    messages: Annotated[list[AnyMessage], add_messages]
    """The customer's message(s); the latest human message is the ticket."""


class TicketState(TypedDict):
    """Full state. Every field but `messages` is NotRequired so that any old
    checkpoint still validates (additive changes only)."""

    messages: Annotated[list[AnyMessage], add_messages]
    """Conversation. Written by the caller (input) and by `respond`. Reducer: add_messages. Since v1."""

    flow_version: NotRequired[int]
    """Behavioural version the thread started under. Stamped by `intake` only when
    absent, read by the edge after `triage`. Absent means v1. Since v2."""

    current_step: NotRequired[str]
    """Last node that completed (`intake`, `triage`, `policy_check`, `respond`).
    Written by every node. Since v1."""

    next_agent: NotRequired[str]
    """Node the thread goes to next, as decided by the node that wrote it
    (`triage` after intake, then `policy_check`/`respond`, `done` at the end).
    Written by every node. Since v1."""

    classification: NotRequired[Classification]
    """Written by `triage` once the approval is answered. Since v1."""

    approval: NotRequired[Approval]
    """The answered approval: kind, requested_at, answer. Written by `triage`. Since v1."""

    policy: NotRequired[PolicyResult]
    """Written by `policy_check`. Since v2 (v1 threads never have it)."""

    sla_hours: NotRequired[int]
    """Promised resolution time in hours, from the policy rule. Written by `policy_check`
    (flow_version >= 2). Added by migration 0002: threads that passed `policy_check`
    before it have no value, and `respond` then says nothing about timing."""

    response: NotRequired[str]
    """Final reply text, also appended to `messages`. Written by `respond`. Since v1."""
