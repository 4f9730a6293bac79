"""SEND_PAYLOAD_INVALID: a pending `Send` carries a payload the candidate's worker cannot take.

A `Send(worker, payload)` scheduled by the live code keeps its payload in the
checkpoint; the candidate's worker runs on it as it is. The API does not show the
payload, so what it carries is bounded by what the live worker declared and read
(the live lock); a checkpointer shows the payload itself (`TaskFact.send_payload`),
and then its keys are checked, with or without a lock. The candidate worker's needs
come from its input schema (enforced for pydantic models and dataclasses) and its
unguarded reads.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from migrations_playbook.model import SEND_PAYLOAD_INVALID, NodeSpec, TaskFact, ThreadSnapshot
from migrations_playbook.rules import base
from migrations_playbook.rules.base import GraphEvidence, Hit, NodeAt, Rule


def candidate_needs(spec: NodeSpec) -> set[str]:
    """Keys a worker cannot run without: enforced required input fields and unguarded reads."""
    needs = set(spec.reads)
    if spec.input_enforced:
        needs |= {name for name, required in spec.input_fields.items() if required}
    return needs


def pending_sends(thread: ThreadSnapshot, graph: GraphEvidence) -> list[tuple[TaskFact, NodeAt]]:
    """The Send tasks that will still run, resolved in the candidate (those it has)."""
    found = [(t, base.node_at(graph, t.path)) for t in thread.tasks if t.push and not t.finished]
    return [(task, node) for task, node in found if node is not None]


def _keys(payload: Any) -> str:
    return ", ".join(repr(k) for k in sorted(payload, key=str)) if isinstance(payload, dict) and payload else "no key"


class SendPayloadInvalid(Rule):
    code = SEND_PAYLOAD_INVALID
    severity = "block"
    evidence = (base.API_THREADS, base.STORE, base.LOCK, base.CANDIDATE)
    why = "the pending Send's payload was built by the live code; a worker that now needs another key fails on resume"
    help = (
        "make the new key optional in the worker (a default, or payload.get(...)) until the pending sends drain, "
        "or repair the payloads with `playbook migrate`"
    )

    def check(self, thread: ThreadSnapshot, graph: GraphEvidence) -> Iterable[Hit]:
        for task, node in pending_sends(thread, graph):
            if task.send_payload is not None:  # a checkpointer: the payload itself (no lock needed)
                carried = set(task.send_payload) if isinstance(task.send_payload, dict) else set()
                for key in sorted(candidate_needs(node.spec) - carried):
                    yield Hit(
                        f"threads have a pending Send to {node.path!r} whose stored payload has no {key!r} (it "
                        f"carries {_keys(task.send_payload)}); the candidate's {node.name!r} needs it and fails "
                        "on resume",
                        node=node.path,
                        field=key,
                    )
                continue
            if node.live is None:
                continue
            carried = set(node.live.get("reads") or []) | {
                k for k, required in (node.live.get("input_fields") or {}).items() if required
            }
            for key in sorted(candidate_needs(node.spec) - carried):
                yield Hit(
                    f"threads have a pending Send to {node.path!r} whose payload was built by the live code, which "
                    f"neither required nor read {key!r}; the candidate's {node.name!r} needs it and fails on resume",
                    node=node.path,
                    field=key,
                )
