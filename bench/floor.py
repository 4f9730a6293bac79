"""The floor graph: one node that adds 1 to an int (bench only, never deployed).

Served next to the repo's graphs by `python -m bench`, so every graph's turn is
compared with the cheapest run the same server can execute: what is left is the
server's own cost per run (queue, checkpoint, streaming), not the graph's.
"""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

GRAPH_ID = "bench_floor"
MODULE_PATH = "bench.floor:graph"
"""How a bench langgraph.json names it (the repo is a dependency of the bench server)."""


class FloorState(TypedDict):
    """State of the floor graph."""

    value: int
    """The counter; `add_one` writes it (last value wins)."""


def add_one(state: FloorState) -> dict[str, int]:
    """The whole graph: ``value + 1``."""
    return {"value": state["value"] + 1}


builder = StateGraph(FloorState)
builder.add_node("add_one", add_one)
builder.add_edge(START, "add_one")
builder.add_edge("add_one", END)

graph = builder.compile(name=GRAPH_ID)
