"""FIELD_REQUIRED_MISSING: threads lack a field the candidate needs (top level or in a subgraph).

Required-ness means what the runtime enforces: a pydantic model or a dataclass
without a default refuses a state without the field. LangGraph never enforces
TypedDict totality, so for a TypedDict a key is needed only when a node the
paused thread will run reads it unguarded (``state["k"]``) and no node on the way
writes it. A requirement the live code already had is not a new breakage.
"""

from __future__ import annotations

from collections.abc import Iterable

from migrations_playbook.model import FIELD_REQUIRED_MISSING, ThreadSnapshot
from migrations_playbook.rules import base
from migrations_playbook.rules.base import GraphEvidence, Hit, Level, Rule
from migrations_playbook.rules.path_changed import reachable


def nodes_ahead(thread: ThreadSnapshot, level: Level) -> set[str]:
    """The nodes (names at this level) a paused thread will still run: its pending ones and what
    the candidate reaches from them (routers evaluated on the stored values)."""
    pending = base.pending_nodes(thread, level.prefix)
    ahead = set(pending)
    graph, values = level.candidate, level.candidate.coerce(level.values)
    for node in pending:
        ahead |= {n for n in reachable(graph.topology, node, routers=graph.routers, values=values) if ":" not in n}
    return ahead


class FieldRequiredMissing(Rule):
    code = FIELD_REQUIRED_MISSING
    severity = "block"
    evidence = (base.API_THREADS, base.LOCK, base.CANDIDATE)
    why = "old checkpoints do not satisfy the new schema: the next step on them fails"
    help = "add the field as optional (NotRequired for a TypedDict, a default for a pydantic model or dataclass)"

    def check(self, thread: ThreadSnapshot, graph: GraphEvidence) -> Iterable[Hit]:
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
        ahead = [n for n in sorted(nodes_ahead(thread, level)) if n in nodes]
        if any(nodes[n].writes is None for n in ahead):
            return  # a node on the way may write anything: no key can be said to be missing
        written = set().union(*(nodes[n].writes or set() for n in ahead))
        code_lock = base.lock_level(graph.code_lock(), level.prefix)
        live_details = (code_lock or {}).get("node_details") if code_lock is not None else None
        for node in ahead:
            if nodes[node].input_fields:
                continue  # it reads its own input (a Send payload, a private schema): SEND_PAYLOAD_* judge it
            for key in sorted(nodes[node].reads):
                if key in level.values or key in written or key in level.candidate.managed:
                    continue
                if key not in level.candidate.fields:
                    continue  # not state (a Send payload key, an attribute of something else)
                if live_details is not None and key in ((live_details.get(node) or {}).get("reads") or []):
                    continue  # the live code read it the same way: not this change
                path = f"{level.prefix}:{node}" if level.prefix else node
                yield Hit(
                    f"threads will run {path!r}, which reads {key!r} unguarded (state[{key!r}]), but they hold no "
                    "value for it and no node on their way writes it: the step fails with a KeyError"
                    + ("" if live_details is not None else " (no lock of the live code: it may have read it too)"),
                    node=level.node,
                    field=key,
                    key=path,
                    severity="block" if live_details is not None else "warn",
                    help=base.fix_for_new_requirement(level.candidate.state_kind, key),
                )
