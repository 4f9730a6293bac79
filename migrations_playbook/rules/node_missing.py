"""NODE_MISSING: a thread will resume at (or has pending writes from) a node the candidate lacks."""

from __future__ import annotations

from collections.abc import Iterable

from migrations_playbook.model import NODE_MISSING, ThreadSnapshot
from migrations_playbook.rules.base import API_THREADS, CANDIDATE, GraphEvidence, Hit, Rule


def shallowest_missing(paths: Iterable[str], nodes: frozenset[str]) -> list[str]:
    """Missing paths, without the children of a missing parent (``review`` hides ``review:confirm``)."""
    missing = sorted({p for p in paths if p not in nodes}, key=lambda p: (p.count(":"), p))
    kept: list[str] = []
    for path in missing:
        if not any(path.startswith(parent + ":") for parent in kept):
            kept.append(path)
    return kept


class NodeMissing(Rule):
    code = NODE_MISSING
    severity = "block"
    evidence = (API_THREADS, CANDIDATE)
    why = (
        "LangGraph resumes a thread at the node it stopped at, by name: with the node gone, `next` is empty, "
        "the resume answers success and the pending step never runs"
    )
    help = "keep the node (add-then-remove: add the new node beside the old one, route both) until its threads drain"

    def check(self, thread: ThreadSnapshot, graph: GraphEvidence) -> Iterable[Hit]:
        if not thread.pending or graph.candidate is None:
            return
        for node in shallowest_missing(thread.pending, graph.candidate.topology.nodes):
            yield Hit(
                f"{thread.status} threads will resume at {node!r}, which the candidate does not have: "
                "the pending step would never run. Keep the node (add-then-remove) until they drain",
                node=node,
            )
