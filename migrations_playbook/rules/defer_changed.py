"""DEFER_CHANGED: a node's `defer` flag differs from the live code's.

`defer` changes the kind of the channels that trigger the node: a join after a
fan-out (``add_edge([a, b], join)``) is a NamedBarrierValue, or a
NamedBarrierValueAfterFinish when deferred; a single trigger an EphemeralValue or a
LastValueAfterFinish. The stored value of one kind does not load as the other
(langgraph #8618, #8629): a barrier channel keeps its value in every checkpoint,
so every thread of the graph fails on its next run, idle ones included; a single
trigger holds a value only while a superstep is pending, so threads with pending
work fail (or silently skip the join). The Agent Server API does not expose the
flag; the live side comes from the contract lock.
"""

from __future__ import annotations

from collections.abc import Iterable

from migrations_playbook.model import DEFER_CHANGED, CandidateGraph, ThreadSnapshot
from migrations_playbook.rules import base
from migrations_playbook.rules.base import GraphEvidence, Hit, Rule


def is_barrier(candidate: CandidateGraph, node: str) -> bool:
    """The node waits for several predecessors at once (a ``join:a+b:node`` channel)."""
    return any(c.startswith("join:") and c.endswith(f":{node}") for c in candidate.channels)


class DeferChanged(Rule):
    code = DEFER_CHANGED
    severity = "block"
    evidence = (base.API_THREADS, base.LOCK, base.CANDIDATE)
    why = "the node's trigger channel changes kind, and the value stored under the old kind does not load as the new one"
    help = (
        "toggle defer only when no thread of the graph is left (a barrier join), or none has pending work; "
        "or register the change under a new graph id and let the old one drain"
    )

    def check(self, thread: ThreadSnapshot, graph: GraphEvidence) -> Iterable[Hit]:
        lock = graph.code_lock()
        candidate = graph.candidate
        if lock is None or candidate is None:
            return
        live_nodes = lock.get("node_details") or {}
        for name, spec in sorted(candidate.nodes.items()):
            live = live_nodes.get(name)
            if live is None or bool(live.get("defer")) == spec.defer:
                continue
            barrier = is_barrier(candidate, name)
            if not thread.pending and not (barrier and thread.values):
                continue
            yield Hit(
                f"{name!r} changes from defer={bool(live.get('defer'))} to defer={spec.defer}: its "
                + (
                    "join channel is stored in every checkpoint of the graph"
                    if barrier
                    else "trigger is stored while a step is pending"
                )
                + " under the old kind, which the candidate cannot load; these threads fail (or skip the join) "
                "on their next run",
                node=name,
            )
