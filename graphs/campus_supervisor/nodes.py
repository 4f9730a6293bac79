"""Nodes of the campus supervisor graph (the agents themselves are in `agents.py`)."""

from __future__ import annotations

from typing import Any, Final, Literal

from langchain_core.messages import RemoveMessage
from langgraph.runtime import Runtime
from langgraph.types import Command

from graphs.campus_supervisor.agents import supervisor_agent
from graphs.campus_supervisor.history import current_route, routing_artifact_ids
from graphs.campus_supervisor.routing import route_before_model
from graphs.campus_supervisor.state import (
    CURRENT_FLOW_VERSION,
    SUPERVISOR,
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


def supervisor(state: CampusState, runtime: Runtime[ModelContext]) -> Command[Literal["library", "academic", "end_turn"]]:
    """Run the supervisor's ReAct agent under the `supervisor_llm` tag, then follow
    its transfer, or end the turn when it answered itself."""
    known = {m.id for m in state["messages"]}
    result = supervisor_agent.with_config(tags=[SUPERVISOR_TAG]).invoke({"messages": state["messages"]}, context=runtime.context)
    written = [m for m in result["messages"] if m.id not in known]
    target = current_route(result["messages"])
    if is_domain_agent(target):
        routing = Routing(agent=target, by="supervisor", rule=route_tool_name(target))
        return Command(goto=target, update={"messages": written, "routing": routing})
    routing = Routing(agent=SUPERVISOR, by="supervisor", rule="direct")
    return Command(goto=END_TURN, update={"messages": written, "routing": routing})


def end_turn(state: CampusState) -> dict[str, Any]:
    """Remove the turn's routing narration and transfer pairs from stored history."""
    return {"messages": [RemoveMessage(id=i) for i in routing_artifact_ids(state["messages"])]}
