"""PENDING_WRITE_ORPHANED: a finished task's pending routing write targets a node the candidate lacks.

While one task of a superstep is paused, its finished siblings keep their writes
pending (state updates, `Command(goto=X)`, `Send(X, ...)`, branch writes to X).
They are applied when the paused task finishes, under the candidate. The Agent
Server API shows a finished task's state writes (`tasks[].result`) but not its
routing writes, so the routes it may have taken come from the live topology and
the live lock. A checkpointer shows the routing writes themselves (`TaskFact.routes`):
then exactly the nodes they route to are checked, and a router that chose END
routes nowhere.
"""

from __future__ import annotations

from collections.abc import Iterable

from migrations_playbook.model import PENDING_WRITE_ORPHANED, ThreadSnapshot
from migrations_playbook.rules.base import (
    API_THREADS,
    API_TOPOLOGY,
    CANDIDATE,
    END,
    LOCK,
    STORE,
    GraphEvidence,
    Hit,
    Rule,
    level_nodes,
    lock_level,
    split_path,
)


class PendingWriteOrphaned(Rule):
    code = PENDING_WRITE_ORPHANED
    severity = "block"
    evidence = (API_THREADS, STORE, API_TOPOLOGY, LOCK, CANDIDATE)
    why = (
        "a finished sibling's goto/Send/branch write is applied on resume under the candidate; with its target "
        "renamed or removed the write is lost (the step it scheduled never runs) or the run fails"
    )
    help = "keep the target node until no thread has a finished task routing to it (add-then-remove), then remove it"

    def check(self, thread: ThreadSnapshot, graph: GraphEvidence) -> Iterable[Hit]:
        if graph.candidate is None:
            return
        for task in thread.tasks:
            if not task.finished:
                continue
            prefix, name = split_path(task.path)
            nodes = level_nodes(graph.candidate, prefix)
            if task.routes is not None:  # a checkpointer: the pending writes say where it routes
                for target in sorted(set(task.routes) - nodes - {END}):
                    yield Hit(
                        f"in these threads {task.path!r} finished while a sibling is paused; its pending writes "
                        f"route to {target!r}, which the candidate does not have: that write is lost or fails on resume",
                        node=task.path,
                        key=target,
                    )
                continue
            static, possible = self._routes(graph, task.path, prefix, name)
            for target in sorted((static | possible) - nodes - {END}):
                certainty = "routes" if target in static else "may have routed (Command goto, Send or a branch)"
                yield Hit(
                    f"in these threads {task.path!r} finished while a sibling is paused; it {certainty} to "
                    f"{target!r}, which the candidate does not have: that pending write is lost or fails on resume",
                    node=task.path,
                    key=target,
                )

    @staticmethod
    def _routes(graph: GraphEvidence, path: str, prefix: str, name: str) -> tuple[set[str], set[str]]:
        """(static successors, other possible targets) of a finished node, at its own level."""
        static: set[str] = set()
        possible: set[str] = set()
        topology = graph.topology
        head = prefix + ":" if prefix else ""
        if topology is not None:
            for source, target, conditional in topology.edges:
                if source != path or not target.startswith(head) or ":" in target[len(head) :]:
                    continue
                (possible if conditional else static).add(target[len(head) :])
        live_level = lock_level(graph.code_lock(), prefix)
        if live_level is not None:
            details = (live_level.get("node_details") or {}).get(name) or {}
            possible |= set(details.get("targets") or [])
        return static, possible - static
