"""What every gate rule shares: the evidence it reads, the hit it returns, and lookups.

A rule is pure: given one thread (or one stored assistant) and the evidence about
its graph, it yields `Hit`s. The evaluator turns hits into aggregated findings.
Each rule declares the evidence it needs (`Rule.evidence`), its finding code, its
default severity, why the change breaks (`why`) and the default fix (`help`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

from migrations_playbook.model import CandidateGraph, LiveGraph, NodeSpec, SavedValueSpec, Severity, ThreadSnapshot, Topology

END = "__end__"
LOCK_FORMAT_WITH_CODE_FACTS = 2
"""Locks from this format on record per-node call order, defer, reads and Send inputs."""

Evidence = str
API_THREADS: Evidence = "threads"
"""`threads.search` values and statuses, `get_state(subgraphs=True)` tasks, next and nested values."""
API_TOPOLOGY: Evidence = "live-topology"
"""`assistants.get_graph(xray=True)` of the live graph."""
API_SCHEMAS: Evidence = "live-schemas"
"""`assistants.get_schemas` and `get_subgraphs(recurse=True)`: the keys the live state can hold
(`LiveGraph.schema_keys`)."""
API_HISTORY: Evidence = "history"
"""`threads.get_history` (which nodes a thread ever scheduled)."""
API_ASSISTANTS: Evidence = "assistants"
"""`assistants.search` with every stored context."""
LOCK: Evidence = "lock"
"""The contract lock of the live code (`--live-contract`, or `GET /playbook/contract`)."""
CANDIDATE: Evidence = "candidate"
"""The candidate code, loaded in-process (schemas, topology, routers, source)."""
STORE: Evidence = "checkpointer"
"""What only a checkpointer shows (`--checkpointer`): a pending Send's payload, where a finished
task's pending writes route, a paused task's recorded @task results and answers (the store-only
`TaskFact` fields, None from the Agent Server API)."""


@dataclass(frozen=True)
class Hit:
    """One occurrence of a rule's finding on one thread (or assistant)."""

    message: str
    node: str | None = None
    field: str | None = None
    key: str = ""
    """Extra aggregation key (findings with the same code/graph/node/field/key merge)."""
    severity: Severity | None = None
    """Overrides the rule's default severity."""
    help: str | None = None
    """Overrides the rule's default help."""


@dataclass(frozen=True)
class GraphEvidence:
    """Everything a rule may read about one graph."""

    graph_id: str
    registered: bool
    """The candidate's langgraph.json registers the graph id."""
    candidate: CandidateGraph | None
    live: LiveGraph | None
    strict: bool = False
    bad_assistants: frozenset[str] = frozenset()
    """Assistants of this graph whose stored context the candidate rejects."""

    @property
    def lock(self) -> dict[str, Any] | None:
        return self.live.lock if self.live is not None else None

    @property
    def topology(self) -> Topology | None:
        return self.live.topology if self.live is not None else None

    def code_lock(self) -> dict[str, Any] | None:
        """The live lock when it records code facts (format 2 or later), else None."""
        lock = self.lock
        if not lock or int(lock.get("lock_version") or 0) < LOCK_FORMAT_WITH_CODE_FACTS:
            return None
        return lock


class Rule:
    """One finding code. Subclasses set the class attributes and implement `check`."""

    code: ClassVar[str]
    severity: ClassVar[Severity]
    evidence: ClassVar[tuple[Evidence, ...]]
    why: ClassVar[str]
    help: ClassVar[str]

    def check(self, thread: ThreadSnapshot, graph: GraphEvidence) -> Iterable[Hit]:
        """Hits for one thread of ``graph`` (default: none)."""
        return ()


class AssistantRule(Rule):
    """A rule over the stored assistants of a graph rather than over threads."""

    def check_assistant(self, assistant: dict[str, Any], graph: GraphEvidence) -> Iterable[Hit]:
        return ()


# -- lookups shared by rules ----------------------------------------------------------------


def split_path(path: str) -> tuple[str, str]:
    """``review:confirm`` -> (``review``, ``confirm``); ``triage`` -> (``""``, ``triage``)."""
    prefix, _, name = path.rpartition(":")
    return prefix, name


def candidate_level(candidate: CandidateGraph | None, prefix: str) -> CandidateGraph | None:
    """The candidate (sub)graph that runs the nodes under ``prefix`` (``""``: the graph itself)."""
    level = candidate
    for part in [p for p in prefix.split(":") if p]:
        if level is None:
            return None
        level = level.subgraphs.get(part)
    return level


def lock_level(lock: dict[str, Any] | None, prefix: str) -> dict[str, Any] | None:
    """The part of a lock that describes the (sub)graph under ``prefix``."""
    if lock is None:
        return None
    if not prefix:
        return lock
    return (lock.get("subgraphs") or {}).get(prefix)


def level_nodes(candidate: CandidateGraph, prefix: str) -> set[str]:
    """Names of the nodes of the (sub)graph under ``prefix``, from the candidate's topology."""
    if not prefix:
        return {n for n in candidate.topology.nodes if ":" not in n}
    level = candidate_level(candidate, prefix)
    if level is not None:
        return {n for n in level.topology.nodes if ":" not in n}
    head = prefix + ":"
    return {n[len(head) :] for n in candidate.topology.nodes if n.startswith(head) and ":" not in n[len(head) :]}


def namespaces(thread: ThreadSnapshot) -> Iterator[tuple[str, dict[str, Any]]]:
    """(prefix, values) for the thread itself (``""``) and every subgraph checkpoint it holds."""
    if isinstance(thread.values, dict) and thread.values:
        yield "", thread.values
    for path, values in sorted(thread.namespaces.items()):
        if isinstance(values, dict) and values:
            yield path, values


def fix_for_new_requirement(kind: str, name: str) -> str:
    """The fix for a field old threads lack, for the state kind at hand."""
    if kind == "pydantic":
        return f"give {name!r} a default (`{name}: T | None = None`) so old checkpoints still validate"
    if kind == "dataclass":
        return f"give {name!r} a default (`{name}: T | None = None`, or `field(default_factory=...)`)"
    return f"declare {name!r} as NotRequired[...] and read it with state.get({name!r}) (TypedDict keys are never enforced)"


def fix_for_narrowed_type(kind: str, name: str) -> str:
    if kind in ("pydantic", "dataclass"):
        return (
            f"keep {name!r} accepting the stored values (widen the type, or a `mode='before'` validator "
            "that converts them), or migrate the stored values first (`playbook migrate`)"
        )
    return f"keep {name!r} accepting the stored values, or migrate them before the rollout (`playbook migrate`)"


def pending_nodes(thread: ThreadSnapshot, prefix: str) -> set[str]:
    """Names of the nodes the thread will (re)run at the level ``prefix``."""
    head = prefix + ":" if prefix else ""
    found = set()
    for path in thread.pending:
        if path.startswith(head) and ":" not in path[len(head) :]:
            found.add(path[len(head) :])
    tasked = {t.path for t in thread.tasks}
    unfinished = {t.path for t in thread.tasks if not t.finished}
    return {n for n in found if head + n in unfinished or head + n not in tasked}


@dataclass(frozen=True)
class Level:
    """One namespace of a thread with the (sub)graph that owns it, candidate and live side."""

    prefix: str
    """``""`` for the graph itself, else the subgraph path (``review``)."""
    values: dict[str, Any]
    candidate: CandidateGraph
    live: dict[str, Any] | None
    """The lock's part for this (sub)graph; None without a lock."""

    @property
    def node(self) -> str | None:
        """What a finding names as its node: the subgraph path, or None at the top."""
        return self.prefix or None

    @property
    def wording(self) -> str:
        return "the state" if not self.prefix else f"the state of subgraph {self.prefix!r}"

    @property
    def live_fields(self) -> dict[str, Any]:
        return (self.live or {}).get("fields") or {}


@dataclass
class _LevelsCache:
    """(thread, graph, inspectable, levels) of the last call: the rules of one thread ask in a row."""

    thread: ThreadSnapshot | None = None
    graph: GraphEvidence | None = None
    inspectable: bool | None = None
    levels: tuple[Level, ...] = ()


_last_levels = _LevelsCache()


def levels(thread: ThreadSnapshot, graph: GraphEvidence, *, inspectable: bool = True) -> tuple[Level, ...]:
    """Every namespace of the thread whose (sub)graph the candidate has (and can inspect).

    Computed once per thread (the evaluator runs its rules one after another on the same
    snapshot, which is immutable); the cache holds the last thread, so it is never another one."""
    last = _last_levels
    if last.thread is thread and last.graph is graph and last.inspectable is inspectable:
        return last.levels
    found = []
    for prefix, values in namespaces(thread):
        level = candidate_level(graph.candidate, prefix)
        if level is None or (inspectable and not level.state_inspectable):
            continue
        found.append(Level(prefix=prefix, values=values, candidate=level, live=lock_level(graph.lock, prefix)))
    last.thread, last.graph, last.inspectable, last.levels = thread, graph, inspectable, tuple(found)
    return last.levels


@dataclass(frozen=True)
class NodeAt:
    """A node path of a thread resolved on both sides: the candidate's spec and the live lock's details."""

    path: str
    prefix: str
    name: str
    spec: NodeSpec
    live: dict[str, Any] | None
    """The live lock's ``node_details`` entry (format 2); None when the lock has none."""


def node_at(graph: GraphEvidence, path: str) -> NodeAt | None:
    """Resolve ``path`` (``review:confirm``) in the candidate; None when it lacks the node."""
    prefix, name = split_path(path)
    level = candidate_level(graph.candidate, prefix)
    if level is None or name not in level.nodes:
        return None
    live_level = lock_level(graph.code_lock(), prefix)
    live = ((live_level or {}).get("node_details") or {}).get(name) if live_level is not None else None
    return NodeAt(path=path, prefix=prefix, name=name, spec=level.nodes[name], live=live)


def saved_value(thread: ThreadSnapshot, graph: GraphEvidence) -> tuple[SavedValueSpec, dict[str, Any]] | None:
    """A Functional API thread's saved value with what the candidate's entrypoint reads of it, when the
    candidate takes ``previous`` and the thread shows a saved value: its values are the entrypoint's last
    return, which is what it saved unless it returns ``entrypoint.final(save=...)`` (`SavedValueSpec.visible`,
    judged from the candidate's code). Empty values: nothing saved yet (a first invocation, still paused),
    or a value that is not a dict (the API does not show it)."""
    candidate = graph.candidate
    spec = candidate.saved if candidate is not None else None
    if spec is None or not spec.visible or not isinstance(thread.values, dict) or not thread.values:
        return None
    return spec, thread.values
