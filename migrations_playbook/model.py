"""Plain data the gate passes between its layers (inspect -> evaluate -> render).

Everything here is JSON-friendly so that snapshots can be recorded and replayed
in unit tests without a server.
"""

from __future__ import annotations

from collections.abc import Callable
import dataclasses
from dataclasses import dataclass
from typing import Any, Literal

Severity = Literal["block", "warn"]
"""`block` fails the gate; `warn` is reported and (without --strict) passes."""

GATE_RESULT_VERSION = "1"

# Finding codes (the JSON contract: additive only).
GRAPH_REMOVED = "GRAPH_REMOVED"
NODE_MISSING = "NODE_MISSING"
FIELD_REQUIRED_MISSING = "FIELD_REQUIRED_MISSING"
FIELD_TYPE_MISMATCH = "FIELD_TYPE_MISMATCH"
FIELD_DROPPED = "FIELD_DROPPED"
REDUCER_CHANGED = "REDUCER_CHANGED"
REDUCER_UNVERIFIED = "REDUCER_UNVERIFIED"
PATH_CHANGED = "PATH_CHANGED"
STATE_UNCHECKED = "STATE_UNCHECKED"
STAGING_STATE_DIVERGED = "STAGING_STATE_DIVERGED"
STAGING_RESUME_FAILED = "STAGING_RESUME_FAILED"

PAUSED_STATUSES = frozenset({"interrupted", "busy", "error"})
"""Statuses whose threads have pending work that resumes at a named node."""


@dataclass(frozen=True)
class Topology:
    """A graph's nodes and edges, flattened across subgraphs.

    Node ids are paths: ``triage`` for a top-level node, ``review:confirm``
    for node ``confirm`` inside subgraph node ``review`` (the ids
    `get_graph(xray=True)` draws). Every prefix of a path is a node too.
    """

    nodes: frozenset[str]
    edges: tuple[tuple[str, str, bool], ...]
    """``(source, target, conditional)``."""

    @classmethod
    def from_drawings(cls, plain: dict[str, Any], xray: dict[str, Any]) -> Topology:
        """Build from the JSON of `get_graph()` and `get_graph(xray=True)`."""
        nodes: set[str] = set()
        edges: set[tuple[str, str, bool]] = set()
        for drawing in (plain, xray):
            for node in drawing.get("nodes", []):
                node_id = str(node["id"])
                parts = node_id.split(":")
                nodes.update(":".join(parts[: i + 1]) for i in range(len(parts)))
            for edge in drawing.get("edges", []):
                edges.add((str(edge["source"]), str(edge["target"]), bool(edge.get("conditional"))))
        return cls(nodes=frozenset(nodes), edges=tuple(sorted(edges)))

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Topology:
        return cls(nodes=frozenset(data["nodes"]), edges=tuple(tuple(e) for e in data["edges"]))

    def to_json(self) -> dict[str, Any]:
        return {
            "nodes": sorted(self.nodes),
            "edges": [list(edge) for edge in self.edges],
        }

    def successors(self, node: str) -> set[str]:
        """Direct successors of ``node``. A subgraph node (``review``) leads to
        its first inner nodes and shares the exits of its inner nodes."""
        found = {target for source, target, _ in self.edges if source == node}
        if not found:
            prefix = node + ":"
            found = {
                target
                for source, target, _ in self.edges
                if source.startswith(prefix) and not target.startswith(prefix)
            }
        return found


@dataclass(frozen=True)
class FieldSpec:
    """One state field of a candidate graph."""

    name: str
    required: bool
    type: str
    """Readable type, e.g. ``NotRequired[list[str]]``."""
    reducer: str
    """Channel kind and reducer identity, e.g. ``BinaryOperatorAggregate(_operator.add)``."""


@dataclass
class CandidateGraph:
    """A candidate graph as loaded in-process from its langgraph.json."""

    graph_id: str
    topology: Topology
    fields: dict[str, FieldSpec]
    """Empty when the graph has no inspectable state schema (e.g. Functional API)."""
    state_inspectable: bool
    validate: Callable[[str, Any], str | None] = dataclasses.field(repr=False, default=lambda name, value: None)
    """``validate(field, value)`` -> error text, or None when the value fits the declared type."""
    coerce: Callable[[dict[str, Any]], dict[str, Any]] = dataclasses.field(repr=False, default=lambda values: values)
    """Turn JSON values into the Python objects the graph's routers expect (best effort)."""
    routers: dict[str, list[Callable[[dict[str, Any]], set[str] | None]]] = dataclasses.field(
        repr=False, default_factory=dict
    )
    """Per source node: functions giving the targets a conditional edge picks for given values
    (None when the router cannot be evaluated offline)."""


@dataclass(frozen=True)
class LiveGraph:
    """What the live server tells about one graph id."""

    graph_id: str
    topology: Topology | None
    """None when the live server has no assistant for the graph any more."""
    reducers: dict[str, str] | None = None
    """Channel -> reducer identity, from a contract lock; None when unknown."""


@dataclass(frozen=True)
class ThreadSnapshot:
    """One live thread, reduced to what the gate evaluates."""

    thread_id: str
    graph_id: str
    status: str
    values: dict[str, Any]
    pending: tuple[str, ...] = ()
    """Node paths the thread will run next: `next` plus pending tasks, nested
    through subgraph states (``review:confirm``). Empty for idle threads without
    a pending interrupt."""

    @property
    def flow_version(self) -> Any:
        return self.values.get("flow_version") if isinstance(self.values, dict) else None


@dataclass
class Finding:
    """One problem, aggregated over the threads it affects."""

    code: str
    severity: Severity
    graph_id: str
    message: str
    node: str | None = None
    field: str | None = None
    thread_ids: list[str] = dataclasses.field(default_factory=list)
    thread_count: int = 0

    MAX_IDS = 20

    def add_thread(self, thread_id: str) -> None:
        self.thread_count += 1
        if len(self.thread_ids) < self.MAX_IDS:
            self.thread_ids.append(thread_id)

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "severity": self.severity,
            "graph_id": self.graph_id,
            "thread_id": self.thread_ids[0] if self.thread_ids else None,
            "node": self.node,
            "field": self.field,
            "message": self.message,
            "thread_ids": list(self.thread_ids),
            "thread_count": self.thread_count,
        }


@dataclass
class GraphSummary:
    threads_scanned: int = 0
    by_status: dict[str, int] = dataclasses.field(default_factory=dict)
    in_candidate: bool = True


@dataclass
class GateReport:
    live_url: str
    candidate: str
    strict: bool
    graphs: dict[str, GraphSummary]
    findings: list[Finding]
    notes: list[str] = dataclasses.field(default_factory=list)
    command: str = "gate"
    """Which command produced the report (`gate` or `replay`)."""

    @property
    def verdict(self) -> Literal["pass", "block"]:
        return "block" if any(f.severity == "block" for f in self.findings) else "pass"

    def to_json(self) -> dict[str, Any]:
        return {
            "gate_result_version": GATE_RESULT_VERSION,
            "command": self.command,
            "verdict": self.verdict,
            "live": self.live_url,
            "candidate": self.candidate,
            "strict": self.strict,
            "graphs": {
                graph_id: {
                    "threads_scanned": summary.threads_scanned,
                    "by_status": dict(sorted(summary.by_status.items())),
                    "in_candidate": summary.in_candidate,
                }
                for graph_id, summary in sorted(self.graphs.items())
            },
            "findings": [f.to_json() for f in self.findings],
            "notes": list(self.notes),
        }
