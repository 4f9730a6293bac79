r"""The agents: a tool step that must call a tool, then an answer step that cannot.

Each agent is a compiled `StateGraph` (ADR 0002, docs/adr/0002-answer-in-a-step-without-tools.md):

    START -> model -(a tool)-------------> tools -> model ...   (-> END after a transfer)
                   \-(ready_to_answer)---> answer -> END
                   \-(text, no tool call)-----------> END       (a model that ignored tool_choice)

``model`` is bound to the agent's tools plus `READY_TO_ANSWER` with
``tool_choice="required"``: it decides, it never writes the answer. Its
``ready_to_answer`` message is not stored (nothing answers that call). ``answer``
calls the model with no tools bound, tagged `ANSWER_TAG`, so the visible-text
filter releases its tokens as they stream: a message that cannot call a tool
cannot turn into a preamble or routing narration after its first token.

The model comes from the run's context on every call
(`graphs.common.models.load_chat_model`), never at import. Every AIMessage an
agent writes carries the agent's name, which is how stored history tells the
supervisor's messages from the agents'.

``model`` and ``answer`` have a sync body (``invoke``) and an async twin (``amodel``,
``aanswer``: ``ainvoke``), wired with `graphs.common.dual.both`; ``ToolNode`` has both.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Literal

from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, SystemMessage
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode
from langgraph.runtime import Runtime
from langgraph.types import Command

from graphs.campus_supervisor.history import without_routing_artifacts
from graphs.campus_supervisor.prompts import (
    ACADEMIC_PROMPT,
    ANSWER_PROMPT,
    DECIDE_PROMPT,
    LIBRARY_PROMPT,
    SUPERVISOR_PROMPT,
)
from graphs.campus_supervisor.state import ACADEMIC, LIBRARY, SUPERVISOR, AgentState
from graphs.campus_supervisor.tools import (
    ACADEMIC_TOOLS,
    LIBRARY_TOOLS,
    SUPERVISOR_TOOLS,
    user_language,
)
from graphs.common.context import ModelContext, model_spec
from graphs.common.dual import both
from graphs.common.models import load_chat_model
from graphs.common.visible import ANSWER_TAG, is_route_tool

View = Callable[[Sequence[AnyMessage]], list[AnyMessage]]

READY_TO_ANSWER: Final = "ready_to_answer"
"""The tool step's way to say "I have what I need" (or "I must ask the user"): never executed."""

READY_TO_ANSWER_TOOL: Final[dict[str, Any]] = {
    "type": "function",
    "function": {
        "name": READY_TO_ANSWER,
        "description": (
            "Call this, alone, when the conversation and the tool results hold what you need to "
            "answer the user, or when you must ask the user for a missing detail. "
            "The answer is written in the next step, without tools."
        ),
        "parameters": {"type": "object", "properties": {}},
    },
}
"""Its schema (no ``Keywords:`` line: the offline model calls it when no other tool fits)."""


def build_react_agent(
    *,
    name: str,
    tools: Sequence[BaseTool],
    prompts: Mapping[str, str],
    view: View = list,
) -> CompiledStateGraph[AgentState, ModelContext, AgentState, AgentState]:
    """An agent named ``name`` (tool step, tools, answer step; see the module docstring).

    ``prompts`` maps a language (``ko``/``en``) to the system prompt; ``view``
    selects the part of the conversation the model reads.
    """

    def _decide_call(
        messages: Sequence[AnyMessage], runtime: Runtime[ModelContext]
    ) -> tuple[Runnable[Any, AIMessage], list[AnyMessage]]:
        conversation = view(messages)
        lang = user_language(conversation)
        chat = load_chat_model(model_spec(runtime.context)).bind_tools([*tools, READY_TO_ANSWER_TOOL], tool_choice="required")
        return chat, [SystemMessage(f"{prompts[lang]}\n{DECIDE_PROMPT[lang]}"), *conversation]

    def _decided(response: AIMessage) -> Command[Literal["tools", "answer", "__end__"]]:
        response.name = name
        if not response.tool_calls:
            return Command(goto="__end__", update={"messages": [response]})  # a text answer after all: keep it
        calls = [c for c in response.tool_calls if c["name"] != READY_TO_ANSWER]
        if not calls:
            return Command(goto="answer")
        if len(calls) < len(response.tool_calls):  # ready_to_answer beside real calls: the calls win
            response = AIMessage(content=response.content, tool_calls=calls, name=name, id=response.id)
        return Command(goto="tools", update={"messages": [response]})

    def model(state: AgentState, runtime: Runtime[ModelContext]) -> Command[Literal["tools", "answer", "__end__"]]:
        """Decide the next tool call; stamp the agent's name on its message."""
        chat, prompt = _decide_call(state["messages"], runtime)
        return _decided(chat.invoke(prompt))

    async def amodel(state: AgentState, runtime: Runtime[ModelContext]) -> Command[Literal["tools", "answer", "__end__"]]:
        """`model` under `ainvoke`: the same call, awaited."""
        chat, prompt = _decide_call(state["messages"], runtime)
        return _decided(await chat.ainvoke(prompt))

    def after_tools(state: AgentState) -> Literal["model", "__end__"]:
        """A transfer ends the agent (the graph follows it); any other result goes back to the model."""
        last_call = next(m for m in reversed(state["messages"]) if isinstance(m, AIMessage))
        return "__end__" if any(is_route_tool(c["name"]) for c in last_call.tool_calls) else "model"

    def _answer_call(
        messages: Sequence[AnyMessage], runtime: Runtime[ModelContext]
    ) -> tuple[Runnable[Any, BaseMessage], list[AnyMessage]]:
        conversation = view(messages)
        lang = user_language(conversation)
        chat = load_chat_model(model_spec(runtime.context)).with_config(tags=[ANSWER_TAG])
        return chat, [SystemMessage(f"{prompts[lang]}\n{ANSWER_PROMPT[lang]}"), *conversation]

    def _answered(response: BaseMessage) -> dict[str, Any]:
        response.name = name
        return {"messages": [response]}

    def answer(state: AgentState, runtime: Runtime[ModelContext]) -> dict[str, Any]:
        """Write the answer with no tools bound, tagged `ANSWER_TAG` (streamed as it comes)."""
        chat, prompt = _answer_call(state["messages"], runtime)
        return _answered(chat.invoke(prompt))

    async def aanswer(state: AgentState, runtime: Runtime[ModelContext]) -> dict[str, Any]:
        """`answer` under `ainvoke`: the same call, awaited (its tokens stream as they come)."""
        chat, prompt = _answer_call(state["messages"], runtime)
        return _answered(await chat.ainvoke(prompt))

    builder = StateGraph(AgentState, context_schema=ModelContext)
    builder.add_node("model", both(model, amodel), destinations=("tools", "answer", END))
    builder.add_node("tools", ToolNode(list(tools)))
    builder.add_node("answer", both(answer, aanswer))
    builder.add_edge(START, "model")
    builder.add_conditional_edges("tools", after_tools, ["model", END])
    builder.add_edge("answer", END)
    return builder.compile(name=name)


supervisor_agent = build_react_agent(name=SUPERVISOR, tools=SUPERVISOR_TOOLS, prompts=SUPERVISOR_PROMPT)
"""Reads the turns it is given as they are: a transfer ends it before any narration."""

library_agent = build_react_agent(name=LIBRARY, tools=LIBRARY_TOOLS, prompts=LIBRARY_PROMPT, view=without_routing_artifacts)
"""Never reads the supervisor's transfer call as part of the conversation."""

academic_agent = build_react_agent(name=ACADEMIC, tools=ACADEMIC_TOOLS, prompts=ACADEMIC_PROMPT, view=without_routing_artifacts)
"""Never reads the supervisor's transfer call as part of the conversation."""
