"""Nodes of the campus supervisor graph (the agents themselves are in `agents.py`).

The three nodes that run an agent have a sync body (`graph.invoke`) and an async twin
(`asupervisor`, `alibrary`, `aacademic`: `graph.ainvoke` and the server), wired with
`graphs.common.dual.both`: under an async server an agent invoked synchronously would read
its checkpoints through the saver's sync methods, which an async saver cannot serve.
"""

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
    ACADEMIC,
    CURRENT_FLOW_VERSION,
    LIBRARY,
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


Agent = CompiledStateGraph[AgentState, ModelContext, AgentState, AgentState]
"""A compiled agent (`agents.build_react_agent`)."""


def _agent_call(agent: Agent, state: CampusState, tags: Sequence[str]) -> tuple[Agent, AgentState, set[str | None]]:
    """The agent with its tags, its input (the recent turns only: `recent_turns`), and the ids it was given."""
    window = recent_turns(state["messages"])
    return agent.with_config(tags=list(tags)), AgentState(messages=window), {m.id for m in window}


def _read_and_written(result: dict[str, Any], known: set[str | None]) -> tuple[list[AnyMessage], list[AnyMessage]]:
    return result["messages"], [m for m in result["messages"] if m.id not in known]


def _run_agent(
    agent: Agent,
    state: CampusState,
    runtime: Runtime[ModelContext],
    tags: Sequence[str] = (),
) -> tuple[list[AnyMessage], list[AnyMessage]]:
    """Run ``agent`` on the recent turns only (`recent_turns`); return what it read and what it wrote."""
    tagged, agent_input, known = _agent_call(agent, state, tags)
    return _read_and_written(tagged.invoke(agent_input, context=runtime.context), known)


async def _arun_agent(
    agent: Agent,
    state: CampusState,
    runtime: Runtime[ModelContext],
    tags: Sequence[str] = (),
) -> tuple[list[AnyMessage], list[AnyMessage]]:
    """`_run_agent` awaited: the agent's checkpoints go through the saver's async methods."""
    tagged, agent_input, known = _agent_call(agent, state, tags)
    return _read_and_written(await tagged.ainvoke(agent_input, context=runtime.context), known)


def _followed(messages: list[AnyMessage], written: list[AnyMessage]) -> Command[Literal["library", "academic", "end_turn"]]:
    """Follow the supervisor's transfer, or end the turn when it answered itself."""
    target = current_route(messages)
    if is_domain_agent(target):
        routing = Routing(agent=target, by="supervisor", rule=route_tool_name(target))
        return Command(goto=target, update={"messages": written, "routing": routing})
    routing = Routing(agent=SUPERVISOR, by="supervisor", rule="direct")
    return Command(goto=END_TURN, update={"messages": written, "routing": routing})


SUPERVISOR_TARGETS: Final = (LIBRARY, ACADEMIC, END_TURN)
"""Where `supervisor` goes (its `Command` destinations)."""


def supervisor(state: CampusState, runtime: Runtime[ModelContext]) -> Command[Literal["library", "academic", "end_turn"]]:
    """Run the supervisor agent under the `supervisor_llm` tag, then follow its
    transfer, or end the turn when it answered itself."""
    return _followed(*_run_agent(supervisor_agent, state, runtime, tags=[SUPERVISOR_TAG]))


async def asupervisor(state: CampusState, runtime: Runtime[ModelContext]) -> Command[Literal["library", "academic", "end_turn"]]:
    """`supervisor` under `graph.ainvoke`: the agent awaited."""
    return _followed(*await _arun_agent(supervisor_agent, state, runtime, tags=[SUPERVISOR_TAG]))


def library(state: CampusState, runtime: Runtime[ModelContext]) -> dict[str, Any]:
    """The library agent, on the recent turns."""
    return {"messages": _run_agent(library_agent, state, runtime)[1]}


async def alibrary(state: CampusState, runtime: Runtime[ModelContext]) -> dict[str, Any]:
    """`library` under `graph.ainvoke`: the agent awaited."""
    return {"messages": (await _arun_agent(library_agent, state, runtime))[1]}


def academic(state: CampusState, runtime: Runtime[ModelContext]) -> dict[str, Any]:
    """The academic agent, on the recent turns."""
    return {"messages": _run_agent(academic_agent, state, runtime)[1]}


async def aacademic(state: CampusState, runtime: Runtime[ModelContext]) -> dict[str, Any]:
    """`academic` under `graph.ainvoke`: the agent awaited."""
    return {"messages": (await _arun_agent(academic_agent, state, runtime))[1]}


def end_turn(state: CampusState) -> dict[str, Any]:
    """Remove the turn's routing transfer pairs (and any narration) from stored history.
    Earlier turns were cleaned when they ended, so only the current one is read; a turn
    without a transfer writes nothing (no new version of the whole message list)."""
    artifacts = routing_artifact_ids(recent_turns(state["messages"], 1))
    return {"messages": [RemoveMessage(id=i) for i in artifacts]} if artifacts else {}
