"""PATH_CHANGED: the nodes a paused thread will still run differ, unguarded by flow_version."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from migrations_playbook.model import PATH_CHANGED, ThreadSnapshot, Topology
from migrations_playbook.rules.base import API_THREADS, API_TOPOLOGY, CANDIDATE, GraphEvidence, Hit, Rule
from migrations_playbook.rules.node_missing import shallowest_missing

_TERMINALS = frozenset({"__start__", "__end__"})


def reachable(
    topology: Topology,
    start: str,
    *,
    routers: Mapping[str, list[Any]] | None = None,
    values: dict[str, Any] | None = None,
) -> set[str]:
    """Nodes reachable after ``start`` (excluded), ``__start__``/``__end__`` left out.

    With ``routers`` and ``values``, a conditional edge whose router can be
    evaluated on ``values`` only follows the targets the router picks for them;
    that is how a `flow_version` branch keeps old threads on the old path.
    Routers that cannot be evaluated offline keep all their targets.
    Without routers the answer depends on the (immutable) topology alone: it is kept.
    """
    if not routers or values is None:
        key = (id(topology), start)
        kept = _PLAIN.get(key)
        if kept is None or kept[0] is not topology:
            if len(_PLAIN) >= _PLAIN_MAX:
                _PLAIN.clear()
            kept = _PLAIN[key] = (topology, frozenset(_walk(topology, start, routers, values)))
        return set(kept[1])
    return _walk(topology, start, routers, values)


_PLAIN: dict[tuple[int, str], tuple[Topology, frozenset[str]]] = {}
"""(id(topology), start) -> (the topology, its reachable set): a thread scan asks the same few."""
_PLAIN_MAX = 4096


def _walk(topology: Topology, start: str, routers: Mapping[str, list[Any]] | None, values: dict[str, Any] | None) -> set[str]:
    seen: set[str] = set()
    stack = [start]
    while stack:
        node = stack.pop()
        successors = topology.successors(node)
        picked = _picked_targets(node, routers, values)
        if picked is not None:
            conditional = {t for s, t, c in topology.edges if s == node and c}
            successors = {t for t in successors if t not in conditional or t in picked}
        for target in successors:
            if target not in seen:
                seen.add(target)
                stack.append(target)
    return {n for n in seen if n not in _TERMINALS and n != start}


def _picked_targets(node: str, routers: Mapping[str, list[Any]] | None, values: dict[str, Any] | None) -> set[str] | None:
    if not routers or values is None or node not in routers:
        return None
    picked: set[str] = set()
    for router in routers[node]:
        targets = router(values)
        if targets is None:
            return None
        picked |= targets
    return picked


class PathChanged(Rule):
    code = PATH_CHANGED
    severity = "warn"
    evidence = (API_THREADS, API_TOPOLOGY, CANDIDATE)
    why = "old threads would follow the new business logic (seed 003: business compatibility)"
    help = "stamp a flow_version at thread start and branch on it in a conditional edge, so old threads keep the old path"

    def check(self, thread: ThreadSnapshot, graph: GraphEvidence) -> Iterable[Hit]:
        candidate, topology = graph.candidate, graph.topology
        if not thread.pending or candidate is None or topology is None:
            return
        missing = shallowest_missing(thread.pending, candidate.topology.nodes)
        values = candidate.coerce(thread.values) if isinstance(thread.values, dict) else None
        paused_at = {t.path for t in thread.tasks if t.interrupted}
        for node in thread.pending:
            if node in missing or node not in topology.nodes or any(node.startswith(m + ":") for m in missing):
                continue
            before = reachable(topology, node)
            after = reachable(candidate.topology, node, routers=candidate.routers, values=values)
            added, removed = sorted(after - before), sorted(before - reachable(candidate.topology, node))
            if not added and not removed:
                continue
            parts = []
            if added:
                parts.append(f"would now also run {', '.join(added)}")
            if removed:
                parts.append(f"would no longer reach {', '.join(removed)}")
            position = "paused at" if node in paused_at else "about to run"
            yield Hit(
                f"threads {position} {node!r} {' and '.join(parts)}; the change is not guarded by "
                "flow_version for them (branch on a flow_version stamped at thread start)",
                node=node,
                key=f"{added}|{removed}",
            )
