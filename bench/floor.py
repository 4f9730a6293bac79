"""The floor graphs: chains of nodes that add 1 to an int (bench only, never deployed).

Served next to the repo's graphs by `python -m bench`, so every graph's turn is
compared with the cheapest runs the same server can execute: what is left is the
server's own cost per run (queue, checkpoint, streaming), not the graph's.

* ``bench_floor`` (`graph`): one node, the floor the issue's targets are stated against.
* ``bench_pause`` (`pause_graph`): `add_one`, then a node that runs one `@task` and
  pauses with ``interrupt()``: the cheapest turn with an approval flow's mechanics
  (ticket_triage's turn ends paused in such a node), 3 checkpoints like the floor.
* ``bench_chain_<n>`` (``chain_<n>``, n = 2 .. `MAX_CHAIN`): ``n`` such nodes in a
  row. A turn of it writes as many checkpoints as a graph that runs ``n`` nodes
  (supersteps), so it is the floor *for that many steps*: a graph's turn minus the
  chain with its checkpoint count is what the graph's own code costs
  (`bench.supersteps` finds the counts).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache

from langgraph.func import task
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import interrupt
from typing_extensions import TypedDict

GRAPH_ID = "bench_floor"
MODULE_PATH = "bench.floor:graph"
"""How a bench langgraph.json names it (the repo is a dependency of the bench server)."""

PAUSE_GRAPH_ID = "bench_pause"
PAUSE_MODULE_PATH = "bench.floor:pause_graph"

CHAIN_PREFIX = "bench_chain_"
MAX_CHAIN = 16
"""Longest chain served (the repo's graphs write at most about 13 checkpoints per turn)."""
CHECKPOINTS_BEYOND_NODES = 2
"""Checkpoints a turn writes besides one per node: the input (step -1) and the
step that applies it (step 0). So the one-node floor writes 3 per turn."""


class FloorState(TypedDict):
    """State of the floor graphs."""

    value: int
    """The counter; every `add_one` node writes it (last value wins)."""


def add_one(state: FloorState) -> dict[str, int]:
    """The work of one node: ``value + 1``."""
    return {"value": state["value"] + 1}


@task
def add_one_task(value: int) -> int:
    """The pause floor's task (an approval flow runs its model call in one)."""
    return value + 1


def pause(state: FloorState) -> dict[str, int]:
    """Run the task, then wait for an answer (any resume value)."""
    value = add_one_task(state["value"]).result()
    interrupt({"question": "continue?", "value": value})
    return {"value": value}


def _in_a_row(steps: Sequence[tuple[str, Callable[[FloorState], dict[str, int]]]]) -> StateGraph:
    """START -> each (name, node) in order -> END."""
    builder = StateGraph(FloorState)
    previous = START
    for name, node in steps:
        builder.add_node(name, node)
        builder.add_edge(previous, name)
        previous = name
    builder.add_edge(previous, END)
    return builder


pause_builder = _in_a_row([("add_one", add_one), ("pause", pause)])
pause_graph = pause_builder.compile(name=PAUSE_GRAPH_ID)


def _chain_builder(nodes: int) -> StateGraph:
    if nodes < 1:
        raise ValueError(f"a chain needs at least one node, got {nodes}")
    if nodes == 1:
        return _in_a_row([("add_one", add_one)])
    return _in_a_row([(f"add_one_{index}", add_one) for index in range(1, nodes + 1)])


builder = _chain_builder(1)
"""The one-node floor, uncompiled (tests compile it with their own checkpointer)."""

graph = builder.compile(name=GRAPH_ID)


@cache
def chain(nodes: int) -> CompiledStateGraph:
    """The floor with ``nodes`` nodes in a row (``bench_chain_<nodes>``)."""
    return _chain_builder(nodes).compile(name=f"{CHAIN_PREFIX}{nodes}")


def chain_id(nodes: int) -> str:
    return f"{CHAIN_PREFIX}{nodes}"


def chain_module_path(nodes: int) -> str:
    """How a bench langgraph.json names ``bench_chain_<nodes>``."""
    if not 2 <= nodes <= MAX_CHAIN:
        raise ValueError(f"chains of 2 to {MAX_CHAIN} nodes are served, not {nodes} (raise MAX_CHAIN)")
    return f"bench.floor:chain_{nodes}"


def nodes_for_checkpoints(checkpoints_per_turn: float) -> int:
    """The chain length whose turn writes ``checkpoints_per_turn`` checkpoints (rounded, at least 1)."""
    return max(1, round(checkpoints_per_turn) - CHECKPOINTS_BEYOND_NODES)


# Agent Server finds a graph by name in the module's namespace, so every chain the
# bench may serve is a module attribute: chain_2 ... chain_16.
globals().update({f"chain_{n}": chain(n) for n in range(2, MAX_CHAIN + 1)})
