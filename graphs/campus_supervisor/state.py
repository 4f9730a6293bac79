"""State of the campus supervisor graph and of its ReAct agents.

Compatibility rules (migrations_playbook/docs/rules.md): fields are only ever
added as `NotRequired`; a field is removed only after a drain and a record.

No `from __future__ import annotations` here: with string annotations
`TypedDict` cannot see `NotRequired`, and every field would count as required.
"""

from typing import Annotated, Final, Literal, NotRequired

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict, TypeIs

from graphs.common.history import MessageHistory

CURRENT_FLOW_VERSION = 2
"""The flow new threads are stamped with. 1: intake -> supervisor | agent -> end_turn, each
agent a ReAct loop over the whole history. 2 (record 0008): the same nodes; each agent reads
the two latest user turns, calls tools in a step that must call one, and answers in a step
that cannot (ADR 0002). Nothing branches on it: a v1 thread continues under v2 code."""

SUPERVISOR: Final = "supervisor"
"""Name of the supervisor: its node, and the `name` of every AIMessage it writes."""

LIBRARY: Final = "library"
"""Name of the library agent (seat status per floor, study-room reservation)."""

ACADEMIC: Final = "academic"
"""Name of the academic agent (LMS course materials, assignments)."""

AgentName = Literal["supervisor", "library", "academic"]
"""Who answers a turn; also the `name` stamped on that agent's AIMessages."""

DomainAgent = Literal["library", "academic"]
"""The agents the supervisor can transfer to."""


def is_domain_agent(name: str | None) -> TypeIs[DomainAgent]:
    """Whether ``name`` is one of the agents the supervisor can transfer to."""
    return name in (LIBRARY, ACADEMIC)


RoutedBy = Literal["pre_route", "follow_up", "supervisor"]
"""How a turn's agent was chosen: a deterministic phrase rule, a reply to that
agent's own clarification, or the supervisor model."""


class Routing(TypedDict):
    """Who answers the current turn, and why (narrow rules stay explainable)."""

    agent: AgentName
    """The agent that answers this turn (`supervisor` when it answered directly)."""
    by: RoutedBy
    """How the agent was chosen."""
    rule: str
    """The rule or tool that decided: a pre-route rule id, `clarification:<slot>`,
    or the supervisor's transfer tool name (`direct` when it answered itself)."""


class CampusInput(TypedDict):
    """What a run accepts: the user's new message."""

    messages: MessageHistory
    """The user's message(s); the latest human message starts a new turn. The same channel as
    `CampusState.messages` (a `DeltaChannel`, record 0009)."""


class CampusState(TypedDict):
    """Full state. Every field but `messages` is NotRequired so that any old
    checkpoint still validates (additive changes only)."""

    messages: MessageHistory
    """Conversation. Written by the caller (input), the supervisor (its agent's
    messages, named `supervisor`), the domain agents (named after themselves) and
    `end_turn` (RemoveMessage for routing narration and transfer pairs of the turn).
    Reducer: add_messages, folded in a `DeltaChannel` (graphs/common/history.py: each
    checkpoint stores the step's writes, not the whole list) since record 0009; a plain
    add_messages channel before. Since v1."""

    flow_version: NotRequired[int]
    """Behavioural version the thread started under (`CURRENT_FLOW_VERSION`). Stamped by
    `intake` only when absent. Absent means v1. Since v1."""

    routing: NotRequired[Routing]
    """Who answers the current turn and why. Written by `intake` (pre-route,
    follow-up, or hand-off to the supervisor) and by `supervisor` (transfer or
    direct answer). Reducer: last value wins. Since v1."""


class AgentState(TypedDict):
    """State of one ReAct agent (the supervisor's and each domain agent's)."""

    messages: Annotated[list[AnyMessage], add_messages]
    """The conversation the agent works on. Written by the caller, the agent's
    `model` node and its `tools` node. Reducer: add_messages. Since v1."""
