"""SEND_PAYLOAD_UNVERIFIED: pending sends whose payload shape the gate cannot know."""

from __future__ import annotations

from collections.abc import Iterable

from migrations_playbook.model import SEND_PAYLOAD_UNVERIFIED, ThreadSnapshot
from migrations_playbook.rules import base
from migrations_playbook.rules.base import GraphEvidence, Hit, Rule
from migrations_playbook.rules.send_payload_invalid import candidate_needs, pending_sends


class SendPayloadUnverified(Rule):
    code = SEND_PAYLOAD_UNVERIFIED
    severity = "warn"
    evidence = (base.API_THREADS, base.STORE, base.LOCK, base.CANDIDATE)
    why = "the Agent Server API does not show a pending Send's payload; only the live lock bounds what it carries"
    help = "pass --live-contract with the deployed commit's locks (format 2), or serve them at GET /playbook/contract"

    def check(self, thread: ThreadSnapshot, graph: GraphEvidence) -> Iterable[Hit]:
        for task, node in pending_sends(thread, graph):
            if task.send_payload is not None or node.live is not None or not candidate_needs(node.spec):
                continue  # a payload read from a checkpointer is checked by SEND_PAYLOAD_INVALID
            yield Hit(
                f"threads have a pending Send to {node.path!r}; without a lock of the live code the payload's keys "
                "are unknown, so the candidate worker's needs were not checked",
                node=node.path,
            )
