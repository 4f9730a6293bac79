"""The ReAct agents: one small model <-> tools loop, built three times.

Each agent is a compiled `StateGraph` (``model`` -> ``tools`` -> ``model`` ...
until the model answers without a tool call). The model comes from the run's
context on every call (`graphs.common.models.load_chat_model`), never at
import. Every AIMessage an agent writes carries the agent's name, which is how
stored history tells the supervisor's messages from the agents'.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langchain_core.messages import AnyMessage, SystemMessage
from langchain_core.tools import BaseTool
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.runtime import Runtime

from graphs.campus_supervisor.history import without_routing_artifacts
from graphs.campus_supervisor.prompts import ACADEMIC_PROMPT, LIBRARY_PROMPT, SUPERVISOR_PROMPT
from graphs.campus_supervisor.state import ACADEMIC, LIBRARY, SUPERVISOR, AgentState
from graphs.campus_supervisor.tools import (
    ACADEMIC_TOOLS,
    LIBRARY_TOOLS,
    SUPERVISOR_TOOLS,
    user_language,
)
from graphs.common.context import ModelContext, model_spec
from graphs.common.models import load_chat_model

View = Callable[[Sequence[AnyMessage]], list[AnyMessage]]


def build_react_agent(
    *,
    name: str,
    tools: Sequence[BaseTool],
    prompts: Mapping[str, str],
    view: View = list,
) -> CompiledStateGraph[AgentState, ModelContext, AgentState, AgentState]:
    """A ReAct agent named ``name``.

    ``prompts`` maps a language (``ko``/``en``) to the system prompt; ``view``
    selects the part of the conversation the model reads.
    """

    def model(state: AgentState, runtime: Runtime[ModelContext]) -> dict[str, Any]:
        """Ask the model for the next step; stamp the agent's name on its message."""
        conversation = view(state["messages"])
        chat = load_chat_model(model_spec(runtime.context)).bind_tools(list(tools))
        response = chat.invoke([SystemMessage(prompts[user_language(conversation)]), *conversation])
        response.name = name
        return {"messages": [response]}

    builder = StateGraph(AgentState, context_schema=ModelContext)
    builder.add_node("model", model)
    builder.add_node("tools", ToolNode(list(tools)))
    builder.add_edge(START, "model")
    builder.add_conditional_edges("model", tools_condition, {"tools": "tools", END: END})
    builder.add_edge("tools", "model")
    return builder.compile(name=name)


supervisor_agent = build_react_agent(name=SUPERVISOR, tools=SUPERVISOR_TOOLS, prompts=SUPERVISOR_PROMPT)
"""Reads the whole (already cleaned) history: it must see its own transfer result."""

library_agent = build_react_agent(name=LIBRARY, tools=LIBRARY_TOOLS, prompts=LIBRARY_PROMPT, view=without_routing_artifacts)
"""Never reads the supervisor's routing narration as an earlier answer."""

academic_agent = build_react_agent(name=ACADEMIC, tools=ACADEMIC_TOOLS, prompts=ACADEMIC_PROMPT, view=without_routing_artifacts)
"""Never reads the supervisor's routing narration as an earlier answer."""
