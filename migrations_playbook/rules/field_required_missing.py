"""FIELD_REQUIRED_MISSING: threads lack a field the candidate needs (top level or in a subgraph).

Required-ness means what the runtime enforces: a pydantic model or a dataclass
without a default refuses a state without the field. LangGraph never enforces
TypedDict totality, so for a TypedDict a key is needed only when a node the
paused thread will run reads it unguarded (``state["k"]``) and neither the
thread's values nor a write before that read (`available_keys`) provide it.
A requirement the live code already had is not a new breakage. Without a lock a new
unguarded read is a warning (the live code may have read the key too), unless the live
graph's schema (`LiveGraph.schema_keys`, served by the Agent Server) never had the key: then
no live thread can hold it, and the read blocks.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from migrations_playbook.model import FIELD_REQUIRED_MISSING, ThreadSnapshot
from migrations_playbook.rules import base
from migrations_playbook.rules.base import GraphEvidence, Hit, Level, Rule

_TERMINALS = frozenset({"__start__", "__end__"})

Keys = frozenset[str] | None
"""A set of state keys; None stands for every key (a node whose writes the code does not show)."""


def _successors(level: Level, node: str, values: dict[str, object]) -> set[str]:
    """The nodes (names at this level) ``node`` can hand over to: its drawn edges, a conditional
    edge's targets narrowed to what its router picks on ``values`` when it can be evaluated (as
    `path_changed.reachable` walks), and its ``Command(goto=...)``/``Send`` targets."""
    graph = level.candidate
    routers = graph.routers.get(node) or []
    picked: set[str] | None = set() if routers else None
    for router in routers:
        targets = router(values)
        if targets is None or picked is None:
            picked = None
            break
        picked = picked | targets
    found = {t for s, t, conditional in graph.topology.edges if s == node and (not conditional or picked is None or t in picked)}
    spec = graph.nodes.get(node)
    if spec is not None:
        found |= spec.targets
    return {t for t in found if t not in _TERMINALS and ":" not in t}


def _finished_writes(thread: ThreadSnapshot, level: Level) -> Keys:
    """What the finished siblings of the paused tasks at this level write when the step completes
    (their recorded results; their code's writes when the result is not shown)."""
    head = level.prefix + ":" if level.prefix else ""
    found: set[str] = set()
    for task in thread.tasks:
        name = task.path[len(head) :] if task.path.startswith(head) else None
        if not task.finished or name is None or ":" in name:
            continue
        if isinstance(task.result, Mapping):
            found |= {str(k) for k in task.result}
            continue
        spec = level.candidate.nodes.get(name)
        if spec is None or spec.writes is None:
            return None
        found |= spec.writes
    return frozenset(found)


def _union(*parts: Keys) -> Keys:
    if any(p is None for p in parts):
        return None
    return frozenset().union(*(p for p in parts if p is not None))


def _meet(left: Keys, right: Keys) -> Keys:
    if left is None:
        return right
    if right is None:
        return left
    return left & right


def available_keys(thread: ThreadSnapshot, level: Level) -> dict[str, Keys]:
    """Per node the paused thread will still run (names at this level): the keys its state holds
    when it starts, on every path that leads there (None: any key may be there).

    The pending nodes run first, on the thread's values alone: nothing written after counts for
    their reads, their own writes included. A node further on sees the values, plus what the
    first step writes (the pending nodes and their finished siblings), plus what every path from
    there to it writes before it: a node's writes count only for the nodes after it, and a node
    whose writes the code does not show (a subgraph node, a return that is not a literal dict)
    covers every key only downstream of itself. Paths join by intersection, so a key written on
    one branch only is not there after the branches meet. Loops are followed to a fixed point."""
    graph = level.candidate
    values = graph.coerce(level.values)
    held = frozenset(level.values)
    pending = sorted(n for n in base.pending_nodes(thread, level.prefix) if n in graph.nodes)
    first_step = _union(held, _finished_writes(thread, level), *(graph.nodes[n].writes for n in pending))
    successors: dict[str, set[str]] = {}
    stack = list(pending)
    while stack:
        node = stack.pop()
        if node in successors:
            continue
        successors[node] = _successors(level, node, values)
        stack.extend(successors[node] - successors.keys())
    predecessors: dict[str, set[str]] = {n: set() for n in successors}
    for node, targets in successors.items():
        for target in targets:
            predecessors[target].add(node)
    entry: dict[str, Keys] = {n: held if n in pending else None for n in successors}

    def leaving(node: str) -> Keys:
        if node in pending:
            return first_step
        spec = graph.nodes.get(node)
        return _union(entry[node], spec.writes if spec is not None else None)

    changed = True
    while changed:
        changed = False
        for node in sorted(successors):
            if node in pending:
                continue
            keys: Keys = None
            for before in predecessors[node]:
                keys = _meet(keys, leaving(before))
            if keys != entry[node]:
                entry[node], changed = keys, True
    return entry


class FieldRequiredMissing(Rule):
    code = FIELD_REQUIRED_MISSING
    severity = "block"
    evidence = (base.API_THREADS, base.LOCK, base.API_SCHEMAS, base.CANDIDATE)
    why = "old checkpoints do not satisfy the new schema: the next step on them fails"
    help = "add the field as optional (NotRequired for a TypedDict, a default for a pydantic model or dataclass)"

    def check(self, thread: ThreadSnapshot, graph: GraphEvidence) -> Iterable[Hit]:
        yield from _saved_value_reads(thread, graph)
        for level in base.levels(thread, graph):
            kind = level.candidate.state_kind
            for name, spec in level.candidate.fields.items():
                if name in level.values or not spec.enforced:
                    continue
                live = level.live_fields.get(name, {})
                if live.get("required") and live.get("enforced", True):
                    continue  # the live code already required it: not this change
                yield Hit(
                    f"the candidate requires {name!r} ({spec.type}) in {level.wording}, but these threads have no "
                    f"value for it; the {kind} state refuses them on the next step",
                    node=level.node,
                    field=name,
                    help=base.fix_for_new_requirement(kind, name),
                )
            if thread.pending:
                yield from self._unguarded_reads(thread, graph, level)

    @staticmethod
    def _unguarded_reads(thread: ThreadSnapshot, graph: GraphEvidence, level: Level) -> Iterable[Hit]:
        nodes = level.candidate.nodes
        code_lock = base.lock_level(graph.code_lock(), level.prefix)
        live_details = (code_lock or {}).get("node_details") if code_lock is not None else None
        schema_keys = graph.live.schema_keys if graph.live is not None else None
        live_keys = (schema_keys or {}).get(level.prefix)  # None: the live schema of this level is unknown
        pending = base.pending_nodes(thread, level.prefix)
        for node, keys in sorted(available_keys(thread, level).items()):
            if keys is None or node not in nodes or nodes[node].input_fields:
                continue  # any key may be there; or it reads its own input (a Send payload): SEND_PAYLOAD_* judge it
            for key in sorted(nodes[node].reads - keys - level.candidate.managed):
                if key not in level.candidate.fields:
                    continue  # not state (a Send payload key, an attribute of something else)
                if level.candidate.state_kind in ("pydantic", "dataclass") and not level.candidate.fields[key].required:
                    continue  # a model or dataclass fills its default: the attribute is there
                if live_details is not None and key in ((live_details.get(node) or {}).get("reads") or []):
                    continue  # the live code read it the same way: not this change
                # without a lock, a key the live schema never had is one no live thread can hold
                never_held = live_details is None and live_keys is not None and key not in live_keys
                path = f"{level.prefix}:{node}" if level.prefix else node
                where = "it runs first on their values" if node in pending else "no node before it writes it on every path there"
                if live_details is not None:
                    basis = ""
                elif never_held:
                    basis = f" (the live graph's schema never had {key!r}, so no live thread holds it)"
                else:
                    basis = " (no lock of the live code: it may have read it too)"
                yield Hit(
                    f"threads will run {path!r}, which reads {key!r} unguarded (state[{key!r}]), but they hold no "
                    f"value for it and {where}: the step fails with a KeyError" + basis,
                    node=level.node,
                    field=key,
                    key=path,
                    severity="block" if live_details is not None or never_held else "warn",
                    help=base.fix_for_new_requirement(level.candidate.state_kind, key),
                )


def _saved_value_reads(thread: ThreadSnapshot, graph: GraphEvidence) -> Iterable[Hit]:
    """A Functional API thread's saved value lacks a key the candidate's entrypoint reads unguarded
    from ``previous``: the thread's next invocation (or the replay of a paused one) fails with a
    KeyError (an AttributeError for ``previous.k``). The lock records no reads of ``previous``, so
    whether the live code read it too is unknown; its threads failing the same way would be in error."""
    found = base.saved_value(thread, graph)
    if found is None:
        return
    spec, values = found
    for key in sorted(spec.reads - set(values)):
        yield Hit(
            f"the candidate's entrypoint {spec.entrypoint!r} reads {key!r} unguarded from `previous` (the value "
            f"the thread saved), but these threads' saved values have no {key!r}: their next invocation fails",
            node=spec.entrypoint,
            field=key,
            help=f"read it with `previous.get({key!r}, default)` (or getattr), or migrate the saved values first",
        )
