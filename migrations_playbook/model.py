"""Plain data the gate passes between its layers (inspect -> evaluate -> render).

Everything here is JSON-friendly so that snapshots can be recorded and replayed
in unit tests without a server.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

Severity = Literal["block", "warn"]
"""`block` fails the gate; `warn` is reported and (without --strict) passes."""

GATE_RESULT_VERSION = "1"
CONTRACT_STAMP = "playbook_contract"
"""Run and checkpoint metadata key the runtime guard stamps: the contract hash of the code that ran."""

# Finding codes (the JSON contract: additive only).
GRAPH_REMOVED = "GRAPH_REMOVED"
NODE_MISSING = "NODE_MISSING"
FIELD_REQUIRED_MISSING = "FIELD_REQUIRED_MISSING"
FIELD_TYPE_MISMATCH = "FIELD_TYPE_MISMATCH"
FIELD_DROPPED = "FIELD_DROPPED"
OUTPUT_KEY_DROPPED = "OUTPUT_KEY_DROPPED"
OUTPUT_TYPE_CHANGED = "OUTPUT_TYPE_CHANGED"
REDUCER_CHANGED = "REDUCER_CHANGED"
REDUCER_UNVERIFIED = "REDUCER_UNVERIFIED"
PATH_CHANGED = "PATH_CHANGED"
STATE_UNCHECKED = "STATE_UNCHECKED"
STAGING_STATE_DIVERGED = "STAGING_STATE_DIVERGED"
STAGING_RESUME_FAILED = "STAGING_RESUME_FAILED"
STAGING_RESUME_UNANSWERED = "STAGING_RESUME_UNANSWERED"
"""warn: no value fits a paused thread's interrupt, so the thread was not proven on staging."""
CALL_ORDER_CHANGED = "CALL_ORDER_CHANGED"
CALL_ORDER_UNVERIFIED = "CALL_ORDER_UNVERIFIED"
PENDING_WRITE_ORPHANED = "PENDING_WRITE_ORPHANED"
SEND_PAYLOAD_INVALID = "SEND_PAYLOAD_INVALID"
SEND_PAYLOAD_UNVERIFIED = "SEND_PAYLOAD_UNVERIFIED"
COMMAND_TARGET_MISSING = "COMMAND_TARGET_MISSING"
STATE_INVALID = "STATE_INVALID"
CONTEXT_INVALID = "CONTEXT_INVALID"
BREAKPOINT_STUCK = "BREAKPOINT_STUCK"
DEFER_CHANGED = "DEFER_CHANGED"
STATE_UNREADABLE = "STATE_UNREADABLE"
TOOL_CALL_INVALID = "TOOL_CALL_INVALID"
"""block: a tool call pending in a thread's messages names a tool the ToolNode that runs it lacks, or
arguments the tool's schema rejects."""

PausedStatus = Literal["interrupted", "busy", "error"]
PAUSED_STATUSES: frozenset[PausedStatus] = frozenset({"interrupted", "busy", "error"})
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
    def from_lock(cls, lock: dict[str, Any]) -> Topology:
        """The live graph's drawing as its contract lock records it (``a -> b``, ``a -?-> b``)."""
        nodes = set(lock.get("nodes") or ()) | {"__start__", "__end__"}
        edges = set()
        for text in lock.get("edges") or ():
            for arrow, conditional in ((" -?-> ", True), (" -> ", False)):
                if arrow in str(text):
                    source, _, target = str(text).partition(arrow)
                    edges.add((source.strip(), target.strip(), conditional))
                    nodes.update((source.strip(), target.strip()))
                    break
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
            found = {target for source, target, _ in self.edges if source.startswith(prefix) and not target.startswith(prefix)}
        return found


StateKind = Literal["typeddict", "pydantic", "dataclass", "functional", "other"]
"""How a graph declares its state; it decides what the runtime enforces and which fix fits."""


@dataclass(frozen=True)
class FieldSpec:
    """One state field of a candidate graph."""

    name: str
    required: bool
    """Declared required (a total TypedDict key, a pydantic/dataclass field without default)."""
    type: str
    """Readable type, e.g. ``NotRequired[list[str]]``."""
    reducer: str
    """Channel kind and reducer identity, e.g. ``BinaryOperatorAggregate(_operator.add)``."""
    enforced: bool = False
    """The runtime refuses a state without it: pydantic models and dataclasses coerce every
    node's input; LangGraph never enforces TypedDict totality."""


@dataclass(frozen=True)
class ToolSpec:
    """One tool of a candidate ToolNode, as a tool call reaches it."""

    name: str
    args: dict[str, bool] = dataclasses.field(default_factory=dict)
    """Arguments a tool call carries (injected ones left out) -> required."""
    keeps_extra: bool = False
    """The schema keeps unknown arguments (``extra="allow"``); otherwise LangChain drops them (or,
    with ``extra="forbid"``, `validate` rejects them)."""
    validate: Callable[[Any], str | None] = dataclasses.field(repr=False, compare=False, default=lambda args: None)
    """``validate(args)`` -> why the tool's ``args_schema`` rejects stored arguments (as the tool's
    invoke would: missing required, unknown where extras are forbidden, wrong type), or None."""


@dataclass(frozen=True)
class NodeSpec:
    """What the candidate's code shows about one node (or the entrypoint of a Functional API graph)."""

    name: str
    calls: tuple[str, ...] = ()
    """`@task` and `interrupt()` calls in execution order (`migrations_playbook.graphcode.codeinfo`)."""
    reads: frozenset[str] = frozenset()
    """State keys the node reads unguarded (``state["k"]``)."""
    writes: frozenset[str] | None = frozenset()
    """Keys it returns as literal dict keys; None when not all returns are literal dicts."""
    targets: frozenset[str] = frozenset()
    """Nodes it can route to by ``Command(goto=...)``/``Send(...)`` (declared ends included)."""
    dynamic_targets: bool = False
    """Some goto/Send target is computed at run time, so `targets` may not be all (not in the lock:
    the candidate's own code is what the rules read it from)."""
    parent_targets: frozenset[str] = frozenset()
    """Nodes of the parent graph it hands off to with ``Command(graph=Command.PARENT, goto=...)`` (not in the
    lock: read from the candidate's own code)."""
    router_returns: frozenset[str] = frozenset()
    """String literals its conditional-edge routers return."""
    defer: bool = False
    input_fields: dict[str, bool] = dataclasses.field(default_factory=dict)
    """Fields of the node's own input schema -> required (what a `Send` payload must carry)."""
    input_enforced: bool = False
    """The input schema is a pydantic model or dataclass (the runtime checks it)."""
    tools: dict[str, ToolSpec] | None = None
    """A ToolNode's tools by the name a tool call uses; None when the node is not a ToolNode (not in
    the lock: the rules read it from the candidate's own code)."""
    messages_key: str = "messages"
    """The channel a ToolNode reads its tool calls from (its ``messages_key``)."""

    def to_lock(self) -> dict[str, Any]:
        return {
            "calls": list(self.calls),
            "reads": sorted(self.reads),
            "targets": sorted(self.targets | self.router_returns),
            "defer": self.defer,
            "input_fields": dict(sorted(self.input_fields.items())),
        }


@dataclass(frozen=True)
class SavedValueSpec:
    """A Functional API entrypoint that takes ``previous``: what it needs of the value its thread saved.

    The saved value (the ``__previous__`` channel) is what the entrypoint returned last time, or the
    ``save=`` of an ``entrypoint.final``; the next invocation of the thread hands it over as
    ``previous``, as stored (the runtime neither validates nor converts it). Not in the lock: the
    rules read it from the candidate's own code."""

    entrypoint: str
    reads: frozenset[str] = frozenset()
    """Keys the entrypoint reads unguarded from ``previous`` (``previous["k"]``, ``previous.k``)."""
    type: str | None = None
    """The declared type of ``previous`` (rendered); None when it is not annotated."""
    fields: frozenset[str] = frozenset()
    """The keys that type declares (a TypedDict, pydantic model or dataclass); empty otherwise."""
    validate: Callable[[str | None, Any], str | None] = dataclasses.field(
        repr=False, compare=False, default=lambda key, value: None
    )
    """``validate(key, value)`` -> error text when the stored value of ``key`` (None: the whole saved
    value) does not fit the declared type, or None."""
    visible: bool = True
    """The saved value is what the entrypoint returns, so a thread's values (the API's and the
    checkpointer's `values`, the return value) show it; False when it returns
    ``entrypoint.final(..., save=...)``, whose saved value they do not show."""


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
    routers: dict[str, list[Callable[[dict[str, Any]], set[str] | None]]] = dataclasses.field(repr=False, default_factory=dict)
    """Per source node: functions giving the targets a conditional edge picks for given values
    (None when the router cannot be evaluated offline)."""
    state_kind: StateKind = "typeddict"
    nodes: dict[str, NodeSpec] = dataclasses.field(default_factory=dict)
    """Per node (top level of this graph): what its code shows."""
    interrupt_before: frozenset[str] = frozenset()
    interrupt_after: frozenset[str] = frozenset()
    channels: frozenset[str] = frozenset()
    """Every channel of the compiled graph (state keys, ``branch:to:<node>``, ...)."""
    managed: frozenset[str] = frozenset()
    """Managed values (``IsLastStep``, ``RemainingSteps``): computed per step, never stored."""
    subgraphs: dict[str, CandidateGraph] = dataclasses.field(default_factory=dict)
    """Node name -> the subgraph it runs (added as a node, or invoked inside the node function)."""
    validate_state: Callable[[dict[str, Any]], tuple[str, str] | None] = dataclasses.field(
        repr=False, default=lambda values: None
    )
    """Whole-model validation as the runtime does it (pydantic validators included):
    ``(field, error)`` or None."""
    validators: str | None = None
    """Digest of the state model's validators (pydantic), for the lock."""
    context_fields: dict[str, dict[str, Any]] | None = None
    """The context schema's fields (name -> required, type); None without a context_schema."""
    validate_context: Callable[[dict[str, Any]], str | None] = dataclasses.field(repr=False, default=lambda context: None)
    """``validate_context(stored)`` -> error text as a run would raise it, or None."""
    saved: SavedValueSpec | None = None
    """A Functional API graph whose entrypoint takes ``previous``: what it reads of its saved value."""
    output_types: Mapping[str, frozenset[str]] | None = None
    """The keys the graph's runs return, each with its JSON types (`jsonschema_types.output_types_of`
    its ``get_output_jsonschema()``: the output schema, else the state); None when its output is not keyed (a
    Functional API entrypoint)."""


@dataclass(frozen=True)
class LiveGraph:
    """What the live server tells about one graph id."""

    graph_id: str
    topology: Topology | None
    """None when the live server has no assistant for the graph any more."""
    reducers: dict[str, str] | None = None
    """Channel -> reducer identity, from a contract lock; None when unknown."""
    lock: dict[str, Any] | None = None
    """The live code's contract lock (`migrations_playbook.graphcode.contract`); None when unknown."""
    schema_keys: dict[str, frozenset[str]] | None = None
    """Level prefix (``""`` for the graph itself, ``review`` / ``review:inner`` for its subgraphs)
    -> every key the live graph's state can hold: the ``properties`` of the state, input and
    output JSON schemas the server serves (`assistants.get_schemas`, `get_subgraphs`). A key
    outside them is one no live thread can hold (LangGraph refuses a write to an unknown
    channel). None (or a level missing) when unknown: a server that did not serve them, or a
    source that reads locks instead (the checkpointer, the guard)."""
    output_types: Mapping[str, frozenset[str]] | None = None
    """The keys the live graph's runs return to clients, each with its JSON types (`jsonschema_types.output_types_of` the
    output schema the server serves, `assistants.get_schemas`); None when unknown (no keyed output schema shown, a
    checkpointer source)."""


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
    tasks: tuple[TaskFact, ...] = ()
    """The tasks of the thread's current step (and of nested subgraph steps), as
    `get_state(subgraphs=True)` reports them."""
    namespaces: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    """Subgraph path (``review``) -> the values stored in that subgraph's checkpoint."""
    next: tuple[str, ...] = ()
    """The top-level `next` of the thread's latest checkpoint."""
    unreadable: str | None = None
    """Why the server could not return this thread's state (an HTTP 5xx), if it could not."""
    assistant_id: str | None = None
    """The assistant the thread last ran through (thread metadata, set by Agent Server)."""
    ran: frozenset[str] | None = None
    """Nodes scheduled anywhere in the thread's history; read only for threads stopped at a
    static breakpoint (None when not read)."""

    @property
    def flow_version(self) -> Any:
        return self.values.get("flow_version") if isinstance(self.values, dict) else None

    def to_json(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["ran"] = sorted(self.ran) if self.ran is not None else None
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ThreadSnapshot:
        """Rebuild a snapshot recorded by `playbook snapshot` (older recordings lack the newer keys)."""
        known = {f.name for f in dataclasses.fields(cls)}
        kwargs = {k: v for k, v in data.items() if k in known}
        kwargs["pending"] = tuple(kwargs.get("pending") or ())
        kwargs["next"] = tuple(kwargs.get("next") or ())
        kwargs["tasks"] = tuple(
            TaskFact(
                **{
                    **{k: v for k, v in t.items() if k in _TASK_FIELDS},
                    "interrupt_values": tuple(t.get("interrupt_values") or ()),
                    **{k: tuple(t[k]) for k in ("routes", "resume_values") if t.get(k) is not None},
                }
            )
            for t in kwargs.get("tasks") or ()
        )
        if kwargs.get("ran") is not None:
            kwargs["ran"] = frozenset(kwargs["ran"])
        return cls(**kwargs)


@dataclass(frozen=True)
class TaskFact:
    """One task of a thread's current step."""

    path: str
    """Node path: ``worker``, or ``review:confirm`` inside subgraph ``review``."""
    interrupted: bool = False
    """It is waiting at an ``interrupt()``."""
    finished: bool = False
    """It has finished; its writes are pending until its paused siblings finish."""
    errored: bool = False
    push: bool = False
    """It was scheduled by a ``Send`` (its input is the Send payload)."""
    result: dict[str, Any] | None = None
    """The state writes of a finished task (routing writes are not shown by the API)."""
    interrupt_values: tuple[Any, ...] = ()
    # Facts only a checkpointer source reads (`migrations_playbook.sources.store.reads`); the Agent
    # Server API hides them, so they stay None for threads read through it.
    send_payload: Any = None
    """A pending `Send` task's payload (its input), as stored; None when unknown or not a push task."""
    routes: tuple[str, ...] | None = None
    """Nodes this task's pending writes schedule (``branch:to:X``, a join toward X, ``Send(X)``,
    ``Command(goto=X)``); None when unknown."""
    recorded_results: int | None = None
    """How many `@task` results are recorded for this task (replayed by call position on resume)."""
    resume_values: tuple[Any, ...] | None = None
    """The answers this task already received for its earlier ``interrupt()`` calls, in order."""

    @property
    def started(self) -> bool:
        """It ran (in part): cached `@task` results and resume values exist for it."""
        return self.interrupted or self.errored or self.finished


_TASK_FIELDS = frozenset(f.name for f in dataclasses.fields(TaskFact))
"""Keys `ThreadSnapshot.from_json` keeps from a recorded task (recordings may hold newer keys)."""


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
    assistant_ids: list[str] = dataclasses.field(default_factory=list)
    """For assistant-level findings (CONTEXT_INVALID): the assistants affected."""
    help: str = ""
    """How to fix it, for the state kind at hand."""
    why: str = ""
    """Why the change breaks these threads (the rule's note)."""
    settled: Settled | None = None
    """`playbook check` only: what execution showed of this finding (None elsewhere: not in the JSON)."""
    evidence: str = ""
    """`playbook check` only: what the settlement rests on."""

    MAX_IDS = 20

    def add_thread(self, thread_id: str) -> None:
        self.thread_count += 1
        if len(self.thread_ids) < self.MAX_IDS:
            self.thread_ids.append(thread_id)

    def add_assistant(self, assistant_id: str) -> None:
        if assistant_id not in self.assistant_ids:
            self.assistant_ids.append(assistant_id)

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
            "assistant_ids": list(self.assistant_ids),
            "help": self.help,
            "why": self.why,
            **({"settled": self.settled, "evidence": self.evidence} if self.settled is not None else {}),
        }


Settled = Literal["proven", "disproved", "unverified"]
"""How `playbook check` settled a finding: the shadow saw the thread go wrong (proven), drove it through the
flagged step and it behaved as on the deployed code (disproved), or did not run it there (unverified)."""


@dataclass
class ThreadProof:
    """What the shadow proof showed on one thread (`playbook check` settles the gate's findings with it).
    Not in the JSON."""

    graph_id: str
    ran: bool = False
    """The deployed code's side ran at least one run on it and the candidate's side was compared."""
    steps: set[str] = dataclasses.field(default_factory=set)
    """The node names whose tasks ran on the deployed code's side (subgraph tasks by each name on their path)."""
    blocks: set[str] = dataclasses.field(default_factory=set)
    """The blocking codes the candidate got on it."""
    other_values: str | None = None
    """Where the candidate ended with other values than the deployed code (state, custom events, questions),
    beyond what two runs of the deployed code differ in; None when it did not."""
    unproven: str | None = None
    """Why the deployed code's side proves nothing about it (it could not run it, or nothing could be sent)."""
    moved: str | None = None
    """Why the copy it ran on is older than the live thread (the deployment moved on): judged at the copy."""


@dataclass(frozen=True)
class UnprovenThread:
    """A thread `playbook check` could not run: it blocks unless ``--accept-unproven``."""

    thread_id: str
    graph_id: str
    reason: str
    how: str
    """How to have it run next time (the answer or input it needs)."""

    def to_json(self) -> dict[str, str]:
        return dataclasses.asdict(self)


@dataclass
class GraphSummary:
    threads_scanned: int = 0
    by_status: dict[str, int] = dataclasses.field(default_factory=dict)
    in_candidate: bool = True
    pending_at: dict[str, dict[str, int]] = dataclasses.field(default_factory=dict)
    """Node path -> thread status -> threads paused at or about to run that node (`at_nodes`): what the
    Markdown reports draw on the graph."""

    def count(self, thread: ThreadSnapshot) -> None:
        """Count one thread: scanned, by status, and at the nodes it is paused at or about to run."""
        self.threads_scanned += 1
        self.by_status[thread.status] = self.by_status.get(thread.status, 0) + 1
        for node in at_nodes(thread):
            at = self.pending_at.setdefault(node, {})
            at[thread.status] = at.get(thread.status, 0) + 1

    def merge(self, other: GraphSummary) -> None:
        """Add the counts of ``other`` (the same graph, other threads)."""
        self.threads_scanned += other.threads_scanned
        for status, n in other.by_status.items():
            self.by_status[status] = self.by_status.get(status, 0) + n
        for node, by_status in other.pending_at.items():
            at = self.pending_at.setdefault(node, {})
            for status, n in by_status.items():
                at[status] = at.get(status, 0) + n


def at_nodes(thread: ThreadSnapshot) -> tuple[str, ...]:
    """The nodes a thread is paused at or about to run, each once: its pending paths without those that are a
    prefix of another (``review:confirm``, not also ``review``); ``__start__`` when nothing is pending (its
    next input starts there)."""
    pending = tuple(dict.fromkeys(thread.pending))
    deepest = tuple(p for p in pending if not any(q.startswith(p + ":") for q in pending))
    return deepest or ("__start__",)


@dataclass(frozen=True)
class GraphDrawing:
    """The topology a Markdown report draws a graph from, and where it came from."""

    topology: Topology
    drawn_from: Literal["live", "live lock", "candidate"]


def drawings(
    graph_ids: Sequence[str],
    live: Mapping[str, LiveGraph],
    candidates: Mapping[str, CandidateGraph] | None = None,
    *,
    served: bool = True,
) -> dict[str, GraphDrawing]:
    """The topology a Markdown report draws each graph from: the live one (``served``: the server's drawing;
    else the live lock's, as a checkpointer source reads it), else the candidate's."""
    found: dict[str, GraphDrawing] = {}
    for graph_id in graph_ids:
        graph = live.get(graph_id)
        if graph is not None and graph.topology is not None:
            found[graph_id] = GraphDrawing(graph.topology, "live" if served else "live lock")
        elif candidates is not None and graph_id in candidates:
            found[graph_id] = GraphDrawing(candidates[graph_id].topology, "candidate")
    return found


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
    drawings: dict[str, GraphDrawing] = dataclasses.field(default_factory=dict)
    """Graph id -> the topology the Markdown report draws it from (not in the JSON)."""
    proofs: dict[str, ThreadProof] = dataclasses.field(default_factory=dict)
    """The shadow's: thread id -> what it showed there (not in the JSON)."""
    unproven: list[UnprovenThread] | None = None
    """`playbook check` only: the threads it could not run (None elsewhere: not in the JSON)."""
    accept_unproven: bool = False
    """`playbook check --accept-unproven`: unproven threads are named but do not block."""

    @property
    def verdict(self) -> Literal["pass", "block"]:
        if any(f.severity == "block" for f in self.findings):
            return "block"
        return "block" if self.unproven and not self.accept_unproven else "pass"

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
                    "pending_at": {node: dict(sorted(at.items())) for node, at in sorted(summary.pending_at.items())},
                }
                for graph_id, summary in sorted(self.graphs.items())
            },
            "findings": [f.to_json() for f in self.findings],
            **({"unproven": [u.to_json() for u in self.unproven]} if self.unproven is not None else {}),
            **({"accept_unproven": self.accept_unproven} if self.unproven is not None else {}),
            "notes": list(self.notes),
        }
