"""The live graph's shape as a checkpointer's own rows show it, for a store read without ``--live-contract``.

The contract lock of the code that wrote the threads is the better evidence: it has the
whole drawing, the reducers, ``defer``, static breakpoints and each node's code facts. Without
it, the store still shows part of the old shape, and `derive_shapes` reads that part from every
namespace head of every thread (one pass over the store, before the scan):

* **nodes**, per (sub)graph level: the ``branch:to:X`` trigger channels of the checkpoints
  and of their pending writes, the ``versions_seen`` keys (the nodes that ran), the task
  names in pending writes' task paths (``~__pregel_pull, X``: the node a thread is paused
  at), ``join:a+b:c`` waiting edges, ``Send`` targets and the checkpoint metadata's
  ``writes``;
* **subgraphs**: a node whose calls left a namespace (``review:<task id>``) is a subgraph,
  and that namespace's heads give its own nodes and keys;
* **state keys**: every channel a checkpoint versions or a pending write targets, but
  LangGraph's own (``__start__``, ``branch:to:``, ``join:``, ...): keys the live code's
  state had (a key no thread ever wrote is not seen);
* **Functional API**: a level with no ``branch:to:`` channel and a ``__previous__``
  channel or a node triggered by ``__start__`` is an ``@entrypoint`` (its ``@task`` calls,
  which ``versions_seen`` also names, are not nodes of it).

`DerivedShape.lock` writes that shape in the lock format the stand-in (`store/standin.py`) reads,
with every reducer `standin.UNKNOWN_REDUCER` and no edge; the gate gets no lock for the live
side (`LiveGraph.lock` is None), so rules that need what the store does not show say so
(REDUCER_UNVERIFIED, CALL_ORDER_UNVERIFIED) instead of passing. `NOT_DERIVED` lists what is
missing, for the report's notes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from langgraph.checkpoint.serde.types import TASKS

from migrations_playbook.sources.store.attribution import Attribution
from migrations_playbook.sources.store.reads import level_of
from migrations_playbook.sources.store.standin import BRANCH_TO, JOIN, UNKNOWN_REDUCER, parse_join
from migrations_playbook.sources.store.tables import Head, ThreadHeads

PULL_PREFIX = "~__pregel_pull, "
"""How a saver stores a node task's path beside its writes (`apishape.path_str` of ``(PULL, name)``)."""
PREVIOUS = "__previous__"
"""The channel an ``@entrypoint`` saves its value in (LangGraph's name)."""
START = "__start__"
LANGGRAPH_PREFIXES = (BRANCH_TO, JOIN, "branch:", "start:")
"""Channels LangGraph makes for edges (older formats' ``branch:a:cond:b`` and ``start:X`` too)."""

NOT_DERIVED = (
    "reducers (REDUCER_UNVERIFIED says so where threads hold values; a finished sibling's pending writes are "
    "not merged into the values, read as stored)",
    "edges and routing targets (PATH_CHANGED and the live routes of COMMAND_TARGET_MISSING are not checked)",
    "defer flags (a deferred node waiting for its step's end reads as pending; DEFER_CHANGED is not checked)",
    "static breakpoints (interrupt_before/interrupt_after: a thread stopped at one is read as busy, "
    "BREAKPOINT_STUCK is not checked)",
    "@task/interrupt() call order (CALL_ORDER_UNVERIFIED says so)",
    "the live fields' types, required-ness and validators",
    "state keys no thread ever wrote",
)
"""What the store does not show of the live code, for the report's note."""


def is_state_key(channel: str) -> bool:
    """Whether ``channel`` is a state key (not one LangGraph makes for itself)."""
    return bool(channel) and not channel.startswith("__") and not channel.startswith(LANGGRAPH_PREFIXES)


def _is_node(name: Any) -> bool:
    return isinstance(name, str) and bool(name) and not name.startswith("__")


@dataclasses.dataclass
class LevelShape:
    """What the heads of one (sub)graph level show."""

    nodes: set[str] = dataclasses.field(default_factory=set)
    """Nodes scheduled, run or paused at (``branch:to:``, paths, joins, Sends, metadata)."""
    seen: set[str] = dataclasses.field(default_factory=set)
    """``versions_seen`` keys: nodes that ran (in an entrypoint, also its ``@task`` names)."""
    entries: set[str] = dataclasses.field(default_factory=set)
    """Nodes triggered by ``__start__`` alone (an entrypoint's), and pull tasks of a level without branches."""
    fields: set[str] = dataclasses.field(default_factory=set)
    branches: bool = False
    """A ``branch:to:`` channel was seen: a StateGraph."""
    previous: bool = False
    """A ``__previous__`` channel was seen: an ``@entrypoint``."""

    @property
    def functional(self) -> bool:
        return not self.branches and (self.previous or bool(self.entries)) and not self.fields

    def names(self) -> list[str]:
        """The level's nodes: an entrypoint's own name first (the stand-in's node), else every node."""
        if self.functional:
            return sorted(self.entries) or sorted(self.nodes)
        return sorted(self.nodes | self.seen)

    def add(self, head: Head) -> None:
        saved: Mapping[str, Any] = head.saved.checkpoint if head.saved is not None else {}
        versions: Mapping[str, Any] = saved.get("channel_versions") or {}
        for channel in versions:
            self._channel(channel)
        for node, seen in (saved.get("versions_seen") or {}).items():
            if _is_node(node):
                self.seen.add(node)
                if isinstance(seen, Mapping) and set(seen) == {START}:
                    self.entries.add(node)
        writes = head.metadata.get("writes")
        if isinstance(writes, Mapping):
            self.nodes.update(n for n in writes if _is_node(n))
        for write in head.writes:
            if write.task_path.startswith(PULL_PREFIX):
                name = write.task_path[len(PULL_PREFIX) :]
                if _is_node(name) and "," not in name:
                    self.nodes.add(name)
                    if not versions or set(versions) <= {START, PREVIOUS, "__end__"}:
                        self.entries.add(name)  # a first step still pending: only an entrypoint shows no channel
            self._channel(write.channel)
            if write.channel == TASKS and _is_node(getattr(write.value, "node", None)):
                self.nodes.add(write.value.node)
        for send in (saved.get("channel_values") or {}).get(TASKS) or ():
            if _is_node(getattr(send, "node", None)):
                self.nodes.add(send.node)

    def _channel(self, channel: str) -> None:
        if channel.startswith(BRANCH_TO):
            self.branches = True
            self.nodes.add(channel[len(BRANCH_TO) :])
        elif channel.startswith(JOIN):
            parsed = parse_join(channel)
            if parsed:
                self.nodes.update([*parsed[0], parsed[1]])
        elif channel == PREVIOUS:
            self.previous = True
        elif is_state_key(channel):
            self.fields.add(channel)


@dataclasses.dataclass
class DerivedShape:
    """One graph's live shape as its threads' heads show it."""

    graph_id: str
    levels: dict[str, LevelShape] = dataclasses.field(default_factory=dict)
    """Level prefix (``""``, ``review``, ``review:inner``) -> what its heads show."""
    threads: int = 0

    def add(self, thread: ThreadHeads) -> None:
        self.threads += 1
        for ns, head in thread.heads.items():
            prefix = level_of(ns)
            self.levels.setdefault(prefix, LevelShape()).add(head)
            parts = prefix.split(":") if prefix else []
            for depth in range(len(parts)):  # each enclosing level has the subgraph as a node
                self.levels.setdefault(":".join(parts[:depth]), LevelShape()).nodes.add(parts[depth])

    def subgraphs(self) -> list[str]:
        return sorted(p for p in self.levels if p)

    def lock(self) -> dict[str, Any]:
        """The shape in the lock format `standin.build` reads: nodes, subgraphs, fields (reducers
        unknown), the state kind; no edge, no breakpoint, no ``defer``."""
        root = self.levels.get("", LevelShape())
        nodes = list(root.names())
        subgraphs: dict[str, Any] = {}
        for prefix in self.subgraphs():
            level = self.levels[prefix]
            nodes += [f"{prefix}:{name}" for name in level.names()]
            subgraphs[prefix] = {"fields": _fields(level), "state_kind": _kind(level)}
        return {
            "graph_id": self.graph_id,
            "nodes": nodes,
            "edges": [],
            "fields": _fields(root),
            "state_kind": _kind(root),
            "subgraphs": subgraphs,
        }

    def describe(self) -> str:
        """What was derived, for the report's note."""
        parts = []
        for prefix in sorted(self.levels):
            level = self.levels[prefix]
            where = f"{self.graph_id}" if not prefix else f"{self.graph_id} subgraph {prefix}"
            kind = " (@entrypoint)" if level.functional else ""
            keys = ", ".join(sorted(level.fields)) or "none"
            parts.append(f"{where}{kind}: nodes {', '.join(level.names()) or 'none'}; state keys {keys}")
        return f"{'; '.join(parts)} (from {self.threads} thread(s))"


def _fields(level: LevelShape) -> dict[str, dict[str, str]]:
    return {name: {"reducer": UNKNOWN_REDUCER} for name in sorted(level.fields)}


def _kind(level: LevelShape) -> str:
    return "functional" if level.functional else "typeddict"


def derive_shapes(threads: Iterable[ThreadHeads], attribution: Attribution) -> dict[str, DerivedShape]:
    """Graph id -> its shape, from every thread (attributed as the scan attributes them)."""
    shapes: dict[str, DerivedShape] = {}
    for thread in threads:
        graph_id = attribution.graph_of(thread)
        shape = shapes.get(graph_id)
        if shape is None:
            shape = shapes[graph_id] = DerivedShape(graph_id)
        shape.add(thread)
    return shapes


def shapes_note(shapes: Mapping[str, DerivedShape], graph_ids: Iterable[str]) -> str:
    """The report's note: what was derived, what was not, and what gives the full check."""
    derived = "; ".join(shapes[g].describe() for g in graph_ids if g in shapes) or "no thread"
    return (
        f"live shape derived from the store (no --live-contract): {derived}; not derived: {'; '.join(NOT_DERIVED)}; "
        "pass --live-contract for the full check"
    )
