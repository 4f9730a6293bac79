"""Which graph a store's thread belongs to (a checkpointer keeps no graph id of its own).

Checkpoint metadata key ``graph_id`` (what Agent Server writes, and what a self-hosted service
passes as ``config={"metadata": {"graph_id": ...}}``), else the one graph the candidate
registers, else the operator's ``--all-threads-are GRAPH``.
"""

from __future__ import annotations

import dataclasses

from migrations_playbook.sources.store.tables import ThreadHeads

GRAPH_ID_KEY = "graph_id"
"""Checkpoint metadata key naming a thread's graph (Agent Server writes it on every run)."""


class AttributionError(Exception):
    """A thread cannot be attributed to a graph (exit 2: pass --all-threads-are)."""


@dataclasses.dataclass
class Attribution:
    """Which graph a thread belongs to."""

    single: str | None = None
    """The graph unlabeled threads belong to: ``--all-threads-are``, or the only graph there is."""
    forced: bool = False
    """``--all-threads-are``: every thread belongs to ``single``, whatever its metadata says."""

    def graph_of(self, thread: ThreadHeads) -> str:
        if self.forced and self.single:
            return self.single
        root = thread.root
        label = root.metadata.get(GRAPH_ID_KEY) if root is not None else None
        if isinstance(label, str) and label:
            return label
        if self.single:
            return self.single
        raise AttributionError(
            f"thread {thread.thread_id} has no {GRAPH_ID_KEY!r} in its checkpoint metadata and several graphs could "
            "own it: pass --all-threads-are GRAPH (every thread of the store belongs to GRAPH), or have the service "
            f"run its graphs with config={{'metadata': {{'{GRAPH_ID_KEY}': ...}}}}"
        )
