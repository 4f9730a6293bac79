r"""Wiring of the campus supervisor graph (registered as `campus_supervisor`).

START -> intake -(pre-route / follow-up)----------------> library | academic -> end_turn -> END
                \-> supervisor -(transfer_to_<agent>)--> library | academic -> end_turn
                               \-(answered itself)----------------------------> end_turn
"""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph

from graphs.campus_supervisor.nodes import (
    END_TURN,
    SUPERVISOR_TARGETS,
    aacademic,
    academic,
    alibrary,
    asupervisor,
    end_turn,
    intake,
    library,
    supervisor,
)
from graphs.campus_supervisor.state import ACADEMIC, LIBRARY, SUPERVISOR, CampusInput, CampusState
from graphs.common.context import ModelContext
from graphs.common.dual import both

GRAPH_ID = "campus_supervisor"

builder = StateGraph(CampusState, context_schema=ModelContext, input_schema=CampusInput)
"""Uncompiled builder: tests compile it with their own checkpointer."""
builder.add_node("intake", intake)
builder.add_node(SUPERVISOR, both(supervisor, asupervisor), destinations=SUPERVISOR_TARGETS)
builder.add_node(LIBRARY, both(library, alibrary))
builder.add_node(ACADEMIC, both(academic, aacademic))
builder.add_node(END_TURN, end_turn)
builder.add_edge(START, "intake")
builder.add_edge(LIBRARY, END_TURN)
builder.add_edge(ACADEMIC, END_TURN)
builder.add_edge(END_TURN, END)

graph = builder.compile(name=GRAPH_ID)
