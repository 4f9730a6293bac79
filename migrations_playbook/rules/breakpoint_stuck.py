"""BREAKPOINT_STUCK: a thread at a static `interrupt_before` breakpoint would stop there forever.

Continuing from a static breakpoint marks as seen only the channels the running
code has; a checkpoint channel the candidate lacks (a state key it dropped, or
the ``branch:to:<node>`` channel of a node it renamed or removed) still counts
as new, so the thread stops at the same breakpoint again on every continue.
Dynamic `interrupt()` and `interrupt_after` stops are not affected.
"""

from __future__ import annotations

from collections.abc import Iterable

from migrations_playbook.model import BREAKPOINT_STUCK, ThreadSnapshot
from migrations_playbook.rules.base import (
    API_HISTORY,
    API_THREADS,
    API_TOPOLOGY,
    CANDIDATE,
    LOCK,
    GraphEvidence,
    Hit,
    Rule,
)
from migrations_playbook.rules.path_changed import reachable

_STANDARD = frozenset({"__start__", "__end__"})


class BreakpointStuck(Rule):
    code = BREAKPOINT_STUCK
    severity = "block"
    evidence = (API_THREADS, API_HISTORY, API_TOPOLOGY, LOCK, CANDIDATE)
    why = "the breakpoint sees channels the candidate lacks as new writes and stops the thread again on every continue"
    help = (
        "keep the dropped state key declared and the renamed node registered (add-then-remove) until the threads "
        "stopped at the breakpoint have continued, or move them past it with `playbook migrate`"
    )

    def check(self, thread: ThreadSnapshot, graph: GraphEvidence) -> Iterable[Hit]:
        candidate = graph.candidate
        if candidate is None or thread.status != "interrupted" or not thread.next:
            return
        if any(t.interrupted for t in thread.tasks):
            return  # a dynamic interrupt(): a resume answers it
        lock = graph.lock or {}
        breakpoints = set(candidate.interrupt_before) | set(lock.get("interrupt_before") or [])
        stopped_at = [n for n in thread.next if n in breakpoints]
        if not stopped_at:
            return
        scheduled = self._scheduled(thread, graph, stopped_at[0])
        lacking = sorted(
            {f"state key {key!r}" for key in thread.values if key not in candidate.channels}
            | {f"node {node!r}" for node in scheduled if f"branch:to:{node}" not in candidate.channels}
        )
        if lacking:
            yield Hit(
                f"threads stopped at the breakpoint before {stopped_at[0]!r} hold channels the candidate lacks "
                f"({', '.join(lacking)}): every continue would stop at the same breakpoint again",
                node=stopped_at[0],
                key=",".join(lacking),
            )

    @staticmethod
    def _scheduled(thread: ThreadSnapshot, graph: GraphEvidence, stopped_at: str) -> set[str]:
        """Top-level nodes the thread ever scheduled (its history), or, when that was not read,
        every live node on a path to the breakpoint (what it must have run to get there)."""
        if thread.ran is not None:
            return {n for n in thread.ran if ":" not in n and n not in _STANDARD}
        topology = graph.topology
        if topology is None:
            return set()
        return {n for n in topology.nodes if ":" not in n and n not in _STANDARD and stopped_at in reachable(topology, n)}
