"""Evaluate: pure functions from thread snapshots and graph descriptions to findings.

`Evaluator` is fed one `ThreadSnapshot` at a time (so a scan of many threads
keeps only the aggregated findings in memory) and aggregates findings per
(code, graph, node, field), keeping the first thread ids and a count.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from migrations_playbook.model import (
    FIELD_DROPPED,
    FIELD_REQUIRED_MISSING,
    FIELD_TYPE_MISMATCH,
    GRAPH_REMOVED,
    NODE_MISSING,
    PATH_CHANGED,
    REDUCER_CHANGED,
    REDUCER_UNVERIFIED,
    STATE_UNCHECKED,
    CandidateGraph,
    Finding,
    GraphSummary,
    LiveGraph,
    Severity,
    ThreadSnapshot,
    Topology,
)

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
    """
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


def _picked_targets(
    node: str, routers: Mapping[str, list[Any]] | None, values: dict[str, Any] | None
) -> set[str] | None:
    if not routers or values is None or node not in routers:
        return None
    picked: set[str] = set()
    for router in routers[node]:
        targets = router(values)
        if targets is None:
            return None
        picked |= targets
    return picked


def _shallowest_missing(paths: Iterable[str], nodes: frozenset[str]) -> list[str]:
    missing = sorted({p for p in paths if p not in nodes}, key=lambda p: (p.count(":"), p))
    kept: list[str] = []
    for path in missing:
        if not any(path.startswith(parent + ":") for parent in kept):
            kept.append(path)
    return kept


class Evaluator:
    """Aggregates findings over a stream of thread snapshots."""

    def __init__(
        self,
        *,
        live: Mapping[str, LiveGraph],
        candidates: Mapping[str, CandidateGraph],
        registered: set[str],
        strict: bool = False,
    ) -> None:
        self.live = live
        self.candidates = candidates
        self.registered = registered
        self.strict = strict
        self.summaries: dict[str, GraphSummary] = {}
        self._findings: dict[tuple[str, str, str | None, str | None, str], Finding] = {}

    # -- bookkeeping -------------------------------------------------------------

    def _finding(
        self,
        code: str,
        severity: Severity,
        graph_id: str,
        message: str,
        *,
        node: str | None = None,
        field: str | None = None,
        key: str = "",
    ) -> Finding:
        index = (code, graph_id, node, field, key)
        if index not in self._findings:
            self._findings[index] = Finding(
                code=code, severity=severity, graph_id=graph_id, message=message, node=node, field=field
            )
        return self._findings[index]

    def summary(self, graph_id: str) -> GraphSummary:
        if graph_id not in self.summaries:
            self.summaries[graph_id] = GraphSummary(in_candidate=graph_id in self.registered)
        return self.summaries[graph_id]

    # -- per thread ----------------------------------------------------------------

    def add(self, thread: ThreadSnapshot) -> None:
        summary = self.summary(thread.graph_id)
        summary.threads_scanned += 1
        summary.by_status[thread.status] = summary.by_status.get(thread.status, 0) + 1

        if thread.graph_id not in self.registered:
            self._finding(
                GRAPH_REMOVED,
                "block",
                thread.graph_id,
                f"the candidate no longer registers graph {thread.graph_id!r}, but live threads use it; "
                "keep the graph id registered until they drain",
            ).add_thread(thread.thread_id)
            return
        candidate = self.candidates.get(thread.graph_id)
        if candidate is None:
            return
        if thread.pending:  # interrupted, busy, errored, or idle with a pending interrupt
            self._check_nodes(thread, candidate)
        if isinstance(thread.values, dict) and thread.values:
            self._check_fields(thread, candidate)

    def _check_nodes(self, thread: ThreadSnapshot, candidate: CandidateGraph) -> None:
        missing = _shallowest_missing(thread.pending, candidate.topology.nodes)
        for node in missing:
            self._finding(
                NODE_MISSING,
                "block",
                thread.graph_id,
                f"{thread.status} threads will resume at {node!r}, which the candidate does not have: "
                "the pending step would never run. Keep the node (add-then-remove) until they drain",
                node=node,
            ).add_thread(thread.thread_id)
        live = self.live.get(thread.graph_id)
        if live is None or live.topology is None:
            return
        values = candidate.coerce(thread.values) if isinstance(thread.values, dict) else None
        for node in thread.pending:
            if node in missing or node not in live.topology.nodes or any(
                node.startswith(m + ":") for m in missing
            ):
                continue
            before = reachable(live.topology, node)
            after = reachable(candidate.topology, node, routers=candidate.routers, values=values)
            added, removed = sorted(after - before), sorted(before - reachable(candidate.topology, node))
            if not added and not removed:
                continue
            parts = []
            if added:
                parts.append(f"would now also run {', '.join(added)}")
            if removed:
                parts.append(f"would no longer reach {', '.join(removed)}")
            self._finding(
                PATH_CHANGED,
                "warn",
                thread.graph_id,
                f"threads paused at {node!r} {' and '.join(parts)}; the change is not guarded by "
                "flow_version for them (branch on a flow_version stamped at thread start)",
                node=node,
                key=f"{added}|{removed}",
            ).add_thread(thread.thread_id)

    def _check_fields(self, thread: ThreadSnapshot, candidate: CandidateGraph) -> None:
        graph_id = thread.graph_id
        if not candidate.state_inspectable:
            self._finding(
                STATE_UNCHECKED,
                "warn",
                graph_id,
                "the candidate graph has no inspectable state schema (e.g. Functional API); "
                "stored values were not checked",
            ).add_thread(thread.thread_id)
            return
        values = thread.values
        for name, spec in candidate.fields.items():
            if spec.required and name not in values:
                self._finding(
                    FIELD_REQUIRED_MISSING,
                    "block",
                    graph_id,
                    f"the candidate requires {name!r} ({spec.type}) but these threads have no value for it; "
                    "add it as NotRequired instead",
                    field=name,
                ).add_thread(thread.thread_id)
        live = self.live.get(graph_id)
        live_reducers = live.reducers if live else None
        unverified = False
        for name, value in values.items():
            spec = candidate.fields.get(name)
            if spec is None:
                self._finding(
                    FIELD_DROPPED,
                    "block" if self.strict else "warn",
                    graph_id,
                    f"threads hold a value under {name!r}, which the candidate no longer declares: "
                    "a rename or removal loses it (keep the old key for a drain period, dual-read)",
                    field=name,
                ).add_thread(thread.thread_id)
                continue
            error = candidate.validate(name, value)
            if error is not None:
                self._finding(
                    FIELD_TYPE_MISMATCH,
                    "block",
                    graph_id,
                    f"stored values of {name!r} do not validate against the candidate's {spec.type}: {error}",
                    field=name,
                ).add_thread(thread.thread_id)
            if live_reducers is None:
                unverified = unverified or spec.reducer != "LastValue"
            elif name in live_reducers and live_reducers[name] != spec.reducer:
                self._finding(
                    REDUCER_CHANGED,
                    "block",
                    graph_id,
                    f"the reducer of {name!r} changes from {live_reducers[name]} to {spec.reducer} "
                    "while threads hold values for it: old values would be merged differently",
                    field=name,
                ).add_thread(thread.thread_id)
        if unverified:
            self._finding(
                REDUCER_UNVERIFIED,
                "warn",
                graph_id,
                "the live reducers are unknown (no contract lock for the live code: pass "
                "--live-contract); reducer changes on channels holding values were not checked",
            ).add_thread(thread.thread_id)

    # -- result ----------------------------------------------------------------------

    def findings(self) -> list[Finding]:
        order = {"block": 0, "warn": 1}
        return sorted(
            self._findings.values(),
            key=lambda f: (order[f.severity], f.graph_id, f.code, f.node or "", f.field or ""),
        )
