"""GRAPH_REMOVED: threads exist for a graph id the candidate no longer registers."""

from __future__ import annotations

from collections.abc import Iterable

from migrations_playbook.model import GRAPH_REMOVED, ThreadSnapshot
from migrations_playbook.rules.base import API_THREADS, CANDIDATE, GraphEvidence, Hit, Rule


class GraphRemoved(Rule):
    code = GRAPH_REMOVED
    severity = "block"
    evidence = (API_THREADS, CANDIDATE)
    why = "every later run on these threads fails: the server has no graph to run them with"
    help = "keep the graph id registered in langgraph.json until its threads drain (a new id for the new graph)"

    def check(self, thread: ThreadSnapshot, graph: GraphEvidence) -> Iterable[Hit]:
        if not graph.registered:
            yield Hit(
                f"the candidate no longer registers graph {thread.graph_id!r}, but live threads use it; "
                "keep the graph id registered until they drain"
            )
