"""Nodes of the campus supervisor graph (the agents themselves are in `agents.py`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, Literal

from langchain_core.messages import AnyMessage, RemoveMessage
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.types import Command

from graphs.campus_supervisor.agents import academic_agent, library_agent, supervisor_agent
from graphs.campus_supervisor.history import current_route, recent_turns, routing_artifact_ids
from graphs.campus_supervisor.routing import route_before_model
from graphs.campus_supervisor.state import (
    CURRENT_FLOW_VERSION,
    SUPERVISOR,
    AgentState,
    CampusState,
    Routing,
    is_domain_agent,
)
from graphs.common.context import ModelContext
from graphs.common.visible import SUPERVISOR_TAG, route_tool_name

END_TURN: Final = "end_turn"


def intake(state: CampusState) -> Command[Literal["supervisor", "library", "academic"]]:
    """Stamp the flow version; route by a narrow deterministic rule, else to the supervisor."""
    routing = route_before_model(state["messages"])
    update: dict[str, Any] = {"flow_version": state.get("flow_version", CURRENT_FLOW_VERSION)}
    if routing is None:
        return Command(goto=SUPERVISOR, update=update)
    return Command(goto=routing["agent"], update={**update, "routing": routing})


def _run_agent(
    agent: CompiledStateGraph[AgentState, ModelContext, AgentState, AgentState],
    state: CampusState,
    runtime: Runtime[ModelContext],
    tags: Sequence[str] = (),
) -> tuple[list[AnyMessage], list[AnyMessage]]:
    """Run ``agent`` on the recent turns only (`recent_turns`); return what it read and what it wrote."""
    window = recent_turns(state["messages"])
    known = {m.id for m in window}
    result = agent.with_config(tags=list(tags)).invoke({"messages": window}, context=runtime.context)
    return result["messages"], [m for m in result["messages"] if m.id not in known]


def supervisor(state: CampusState, runtime: Runtime[ModelContext]) -> Command[Literal["library", "academic", "end_turn"]]:
    """Run the supervisor agent under the `supervisor_llm` tag, then follow its
    transfer, or end the turn when it answered itself."""
    messages, written = _run_agent(supervisor_agent, state, runtime, tags=[SUPERVISOR_TAG])
    target = current_route(messages)
    if is_domain_agent(target):
        routing = Routing(agent=target, by="supervisor", rule=route_tool_name(target))
        return Command(goto=target, update={"messages": written, "routing": routing})
    routing = Routing(agent=SUPERVISOR, by="supervisor", rule="direct")
    return Command(goto=END_TURN, update={"messages": written, "routing": routing})


def library(state: CampusState, runtime: Runtime[ModelContext]) -> dict[str, Any]:
    """The library agent, on the recent turns."""
    return {"messages": _run_agent(library_agent, state, runtime)[1]}


def academic(state: CampusState, runtime: Runtime[ModelContext]) -> dict[str, Any]:
    """The academic agent, on the recent turns."""
    return {"messages": _run_agent(academic_agent, state, runtime)[1]}


def end_turn(state: CampusState) -> dict[str, Any]:
    """Remove the turn's routing transfer pairs (and any narration) from stored history.
    Earlier turns were cleaned when they ended, so only the current one is read; a turn
    without a transfer writes nothing (no new version of the whole message list)."""
    artifacts = routing_artifact_ids(recent_turns(state["messages"], 1))
    return {"messages": [RemoveMessage(id=i) for i in artifacts]} if artifacts else {}
