"""How many checkpoints one turn of each graph writes: the floor each graph is matched with.

    python -m bench.supersteps [--turns 10]

Every step of a run (each superstep, in the root graph and in every subgraph)
costs the server a checkpoint, its debug and task events and the bookkeeping
around them, whatever the node does. So a graph with ten steps cannot cost what
the one-node floor costs. This module counts the checkpoints a turn writes, by
running the bench's own conversation (`bench.conversations`) in-process on the
offline model with a counting `InMemorySaver` (no server, no network), and
`bench.floor.nodes_for_checkpoints` turns the count into the chain of no-op nodes
that writes as many: the step-matched floor of `bench.turns`. A graph whose turns
end paused (ticket_triage's approval) is matched with the pause floor instead.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import ChannelVersions, Checkpoint, CheckpointMetadata
from langgraph.checkpoint.memory import InMemorySaver

from bench import conversations, floor
from server import serving


class CountingSaver(InMemorySaver):
    """An `InMemorySaver` that counts the checkpoints it is asked to store."""

    def __init__(self) -> None:
        super().__init__()
        self.puts = 0

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        self.puts += 1
        return super().put(config, checkpoint, metadata, new_versions)


def _builder(graph_id: str) -> Any:
    if graph_id == floor.GRAPH_ID:
        return floor.builder
    if graph_id == floor.PAUSE_GRAPH_ID:
        return floor.pause_builder
    path = serving.policy_for(graph_id).builder
    if path is None:
        raise ValueError(f"no builder known for graph {graph_id!r} (server/serving.py GRAPH_POLICIES)")
    return serving.load(path)


def count_turns(graph_id: str, turns: int = 10) -> dict[str, Any]:
    """Over the first ``turns`` turns of the bench's conversation with ``graph_id``:
    the mean checkpoints written per turn (root graph and subgraphs together), and
    whether every turn ends paused on an interrupt."""
    if turns < 1:
        raise ValueError(f"turns must be at least 1, got {turns}")
    saver = CountingSaver()
    graph = _builder(graph_id).compile(checkpointer=saver)
    paused = 0
    for number, (payload, context) in enumerate(conversations.turns(graph_id, turns)):
        thread = str(number) if graph_id in conversations.NEW_THREAD_PER_TURN else "conversation"
        config: RunnableConfig = {"configurable": {"thread_id": thread}}
        graph.invoke(payload, config, context=context)
        paused += bool(graph.get_state(config).interrupts)
    return {"checkpoints_per_turn": saver.puts / turns, "pauses": paused == turns}


def matched_chains(graph_ids: Sequence[str], turns: int = 10) -> dict[str, dict[str, Any]]:
    """Per graph: its checkpoints per turn, whether its turns end paused, and the
    chain length that writes as many checkpoints."""
    out = {}
    for graph_id in graph_ids:
        row = count_turns(graph_id, turns)
        out[graph_id] = {**row, "chain_nodes": floor.nodes_for_checkpoints(row["checkpoints_per_turn"])}
    return out


def reference_for(row: Mapping[str, Any]) -> str:
    """The floor graph a turn with ``row``'s counts is matched with: the pause floor for
    a turn that ends paused, else the chain with its checkpoint count (3: the floor)."""
    if row["pauses"]:
        return floor.PAUSE_GRAPH_ID
    nodes = row["chain_nodes"]
    return floor.GRAPH_ID if nodes == 1 else floor.chain_id(nodes)


def reference_graphs(matched: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """graph id -> module path of every reference ``matched`` needs besides the floor."""
    out = {}
    for row in sorted(matched.values(), key=lambda r: r["chain_nodes"]):
        reference = reference_for(row)
        if reference == floor.PAUSE_GRAPH_ID:
            out[reference] = floor.PAUSE_MODULE_PATH
        elif reference != floor.GRAPH_ID:
            out[reference] = floor.chain_module_path(row["chain_nodes"])
    return out


def _positive(text: str) -> int:
    value = int(text) if text.strip().isdigit() else 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.supersteps", description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=_positive, default=10, help="turns per graph (default 10)")
    args = parser.parse_args(argv)
    for graph_id, row in matched_chains([floor.GRAPH_ID, floor.PAUSE_GRAPH_ID, *conversations.GRAPHS], args.turns).items():
        print(
            f"{graph_id:20s} {row['checkpoints_per_turn']:5.1f} checkpoints per turn"
            f"{', ends paused' if row['pauses'] else ''} -> {reference_for(row)}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
