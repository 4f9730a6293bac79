"""Stored history, read and cleaned per user turn (seed 000).

A turn starts at a `HumanMessage` and runs to the next one. Every search for
"the current route" or "the previous answer" is bounded by turns, never by a
fixed "last N messages" window: a window is a conversation length, not a
meaning boundary.

In a turn where the supervisor transferred, its routing narration ("Transferred
to the library agent") and the transfer tool call / ToolMessage pairs are
artifacts: the next agent must not read them as an answer, so they are left out
of the domain agents' view and removed from storage when the turn ends. Turns
where the supervisor answered itself (the cafeteria menu) keep everything,
their tool pairs included.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolCall, ToolMessage

from graphs.campus_supervisor.state import SUPERVISOR
from graphs.common.visible import ROUTE_TOOL_PREFIX, is_route_tool

CLARIFICATION_KEY = "clarification"
"""Key in a tool's artifact naming the missing slot when the tool asked the user a question."""


def latest_human_index(messages: Sequence[AnyMessage]) -> int | None:
    """Index of the latest `HumanMessage`, or None when there is none."""
    for index in range(len(messages) - 1, -1, -1):
        if isinstance(messages[index], HumanMessage):
            return index
    return None


CONTEXT_TURNS: Final = 2
"""User turns an agent reads: the one it answers and the one before it (what a short
reply or a follow-up refers to). Bounded by turns, so a turn costs the same at turn 50."""


def recent_turns(messages: Sequence[AnyMessage], turns: int = CONTEXT_TURNS) -> list[AnyMessage]:
    """The last ``turns`` user turns: from the ``turns``-th latest `HumanMessage` to the end
    (everything when the conversation has fewer). Scans back only as far as it needs."""
    seen = 0
    for index in range(len(messages) - 1, -1, -1):
        if isinstance(messages[index], HumanMessage):
            seen += 1
            if seen == turns:
                return list(messages[index:])
    return list(messages)


def split_turns(messages: Sequence[AnyMessage]) -> list[list[AnyMessage]]:
    """Messages grouped into turns; each turn but a leading one starts with a `HumanMessage`."""
    turns: list[list[AnyMessage]] = []
    for message in messages:
        if isinstance(message, HumanMessage) or not turns:
            turns.append([])
        turns[-1].append(message)
    return turns


def _routes(message: AnyMessage) -> bool:
    return isinstance(message, AIMessage) and any(is_route_tool(c["name"]) for c in message.tool_calls)


def routing_artifacts(turn: Sequence[AnyMessage]) -> list[AnyMessage]:
    """The routing narration and transfer pairs of one turn (empty if it had no transfer).

    Removed: supervisor messages that call a transfer tool or say something
    without a tool call (narration), and the ToolMessages answering those calls.
    Kept: supervisor messages that called only its own tools, with their results.
    """
    if not any(_routes(m) for m in turn):
        return []
    dropped_calls: set[str | None] = set()
    dropped_ids: set[int] = set()
    for message in turn:
        if not isinstance(message, AIMessage):
            continue
        narrates = message.name == SUPERVISOR
        if narrates and (_routes(message) or not message.tool_calls):
            dropped_ids.add(id(message))
            dropped_calls.update(c["id"] for c in message.tool_calls)
    return [m for m in turn if id(m) in dropped_ids or (isinstance(m, ToolMessage) and m.tool_call_id in dropped_calls)]


def routing_artifact_ids(messages: Sequence[AnyMessage]) -> list[str]:
    """Ids of every routing artifact in ``messages``, turn by turn."""
    return [m.id for turn in split_turns(messages) for m in routing_artifacts(turn) if m.id]


def without_routing_artifacts(messages: Sequence[AnyMessage]) -> list[AnyMessage]:
    """The conversation a domain agent reads: routing artifacts left out."""
    dropped = {id(m) for turn in split_turns(messages) for m in routing_artifacts(turn)}
    return [m for m in messages if id(m) not in dropped]


def current_route(messages: Sequence[AnyMessage]) -> str | None:
    """The agent the current turn was transferred to: the latest transfer call,
    searched backwards and stopping at the latest `HumanMessage`."""
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            return None
        if isinstance(message, AIMessage):
            call: ToolCall  # mypy reads reversed() over this TypedDict (it has a NotRequired key) as Any
            for call in reversed(message.tool_calls):
                if is_route_tool(call["name"]):
                    return call["name"][len(ROUTE_TOOL_PREFIX) :]
    return None


def pending_clarification(messages: Sequence[AnyMessage]) -> tuple[str, str] | None:
    """``(agent, slot)`` when the message right before the latest human message is
    an agent's clarification question: its tool-less answer to a tool result whose
    artifact names a missing slot. None otherwise."""
    index = latest_human_index(messages)
    if index is None or index < 2:
        return None
    question, result = messages[index - 1], messages[index - 2]
    if not isinstance(question, AIMessage) or question.tool_calls or not question.name:
        return None
    if not isinstance(result, ToolMessage) or not isinstance(result.artifact, dict):
        return None
    slot = result.artifact.get(CLARIFICATION_KEY)
    return (question.name, str(slot)) if slot else None
