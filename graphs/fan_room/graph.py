"""Wiring of the fan-room graph (registered as `fan_room`).

START -> intake -> draft -> tone -> attribute -> END
"""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph

from graphs.common.dual import both
from graphs.fan_room.context import FanRoomContext
from graphs.fan_room.nodes import adraft, atone, attribute, draft, intake, tone
from graphs.fan_room.state import FanRoomInput, FanRoomOutput, FanRoomState

GRAPH_ID = "fan_room"

builder = StateGraph(
    FanRoomState,
    context_schema=FanRoomContext,
    input_schema=FanRoomInput,
    output_schema=FanRoomOutput,
)
"""Uncompiled builder: tests compile it with their own checkpointer."""
builder.add_node("intake", intake)
builder.add_node("draft", both(draft, adraft))
builder.add_node("tone", both(tone, atone))
builder.add_node("attribute", attribute)
builder.add_edge(START, "intake")
builder.add_edge("intake", "draft")
builder.add_edge("draft", "tone")
builder.add_edge("tone", "attribute")
builder.add_edge("attribute", END)

graph = builder.compile(name=GRAPH_ID)
