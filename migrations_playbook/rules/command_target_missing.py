"""COMMAND_TARGET_MISSING: a node a thread will (re)run routes to a node the candidate lacks."""

from __future__ import annotations

from collections.abc import Iterable

from migrations_playbook.model import COMMAND_TARGET_MISSING, ThreadSnapshot
from migrations_playbook.rules.base import (
    API_THREADS,
    API_TOPOLOGY,
    CANDIDATE,
    END,
    GraphEvidence,
    Hit,
    Rule,
    candidate_level,
    level_nodes,
    pending_nodes,
)


class CommandTargetMissing(Rule):
    code = COMMAND_TARGET_MISSING
    severity = "block"
    evidence = (API_THREADS, API_TOPOLOGY, CANDIDATE)
    why = (
        "a paused node re-runs from its first line under the candidate; when it returns "
        "Command(goto=...) (or Send, or its router picks) a node the candidate does not have, the resumed run fails"
    )
    help = "update the goto/Send target to the node's new name in the same change, or keep the old node until threads drain"

    def check(self, thread: ThreadSnapshot, graph: GraphEvidence) -> Iterable[Hit]:
        candidate = graph.candidate
        if candidate is None or not thread.pending:
            return
        prefixes = {path.rpartition(":")[0] for path in thread.pending}
        for prefix in sorted(prefixes):
            level = candidate_level(candidate, prefix)
            if level is None:
                continue
            nodes = level_nodes(candidate, prefix)
            live_nodes = self._live_nodes(graph, prefix)
            for name in sorted(pending_nodes(thread, prefix)):
                spec = level.nodes.get(name)
                if spec is None:
                    continue  # NODE_MISSING says it
                gone = {t for t in spec.targets if t not in nodes and t != END}
                gone |= {t for t in spec.router_returns if t not in nodes and t != END and t in live_nodes}
                path = f"{prefix}:{name}" if prefix else name
                if prefix and spec.parent_targets:  # a subgraph's hand-off: Command(graph=Command.PARENT, goto=...)
                    parent = prefix.rpartition(":")[0]
                    parent_nodes = level_nodes(candidate, parent)
                    for target in sorted(t for t in spec.parent_targets if t not in parent_nodes and t != END):
                        yield Hit(
                            f"threads will re-run {path!r}, which hands off to {target!r} of its parent graph "
                            f"(Command(graph=Command.PARENT, goto=...)), but the candidate's parent graph has no node "
                            f"{target!r}: the resumed run fails there",
                            node=path,
                            key=f"parent|{target}",
                        )
                for target in sorted(gone):
                    yield Hit(
                        f"threads will re-run {path!r}, whose code routes to {target!r} (Command goto, Send or "
                        f"its router), but the candidate has no node {target!r}: the resumed run fails there",
                        node=path,
                        key=target,
                    )
                if not spec.dynamic_targets:
                    continue
                # The candidate computes a goto/Send target at run time: where the live code routed this
                # node to a node the candidate removed, nothing shows the resumed run no longer goes there.
                unproven = self._live_routes(graph, prefix, name) - nodes - gone - {END}
                for target in sorted(unproven):
                    yield Hit(
                        f"threads will re-run {path!r}; under the live code it routes to {target!r}, which the "
                        f"candidate removed, and the candidate's code computes its Command(goto=...)/Send target at "
                        "run time, so the gate cannot prove the resumed run no longer goes there (it fails if it does)",
                        node=path,
                        key=f"computed|{target}",
                        help=(
                            "name the goto/Send targets with literals or module constants the gate can read, or keep "
                            f"the node {target!r} until the threads paused here drain"
                        ),
                    )

    @staticmethod
    def _live_routes(graph: GraphEvidence, prefix: str, name: str) -> set[str]:
        """Where the live code routes node ``name`` of level ``prefix``: the live drawing's edges from it
        and the targets the live lock recorded for it."""
        head = prefix + ":" if prefix else ""
        routes: set[str] = set()
        if graph.topology is not None:
            routes |= {t[len(head) :] for s, t, _ in graph.topology.edges if s == head + name and t.startswith(head)}
        lock = graph.lock or {}
        level = lock if not prefix else (lock.get("subgraphs") or {}).get(prefix) or {}
        details = (level.get("node_details") or {}).get(name) or {}
        routes |= {str(t) for t in details.get("targets") or []}
        return routes

    @staticmethod
    def _live_nodes(graph: GraphEvidence, prefix: str) -> set[str]:
        topology = graph.topology
        if topology is None:
            return set()
        head = prefix + ":" if prefix else ""
        return {n[len(head) :] for n in topology.nodes if n.startswith(head) and ":" not in n[len(head) :]}
