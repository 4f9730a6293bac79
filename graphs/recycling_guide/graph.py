"""Wiring of the recycling guide (registered as `recycling_guide`).

START -> intake -> classify -(Command)-> lookup | recap | chat -> compose -> END
"""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph

from graphs.common.context import ModelContext
from graphs.common.dual import both
from graphs.recycling_guide.nodes import ROUTES, aclassify, acompose, chat, classify, compose, intake, lookup, recap
from graphs.recycling_guide.state import GuideInput, GuideOutput, GuideState

GRAPH_ID = "recycling_guide"

builder = StateGraph(GuideState, context_schema=ModelContext, input_schema=GuideInput, output_schema=GuideOutput)
"""Uncompiled builder: tests compile it with their own checkpointer."""
builder.add_node("intake", intake)
builder.add_node("classify", both(classify, aclassify), destinations=tuple(ROUTES.values()))
builder.add_node("lookup", lookup)
builder.add_node("recap", recap)
builder.add_node("chat", chat)
builder.add_node("compose", both(compose, acompose))
builder.add_edge(START, "intake")
builder.add_edge("intake", "classify")
builder.add_edge("lookup", "compose")
builder.add_edge("recap", "compose")
builder.add_edge("chat", "compose")
builder.add_edge("compose", END)

graph = builder.compile(name=GRAPH_ID)
