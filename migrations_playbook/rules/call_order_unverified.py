"""CALL_ORDER_UNVERIFIED: threads will replay task/interrupt calls, and the live order is unknown."""

from __future__ import annotations

from collections.abc import Iterable

from migrations_playbook.model import CALL_ORDER_UNVERIFIED, ThreadSnapshot
from migrations_playbook.rules import base
from migrations_playbook.rules.base import GraphEvidence, Hit, Rule
from migrations_playbook.rules.call_order_changed import replayed_tasks


class CallOrderUnverified(Rule):
    code = CALL_ORDER_UNVERIFIED
    severity = "warn"
    evidence = (base.API_THREADS, base.LOCK, base.CANDIDATE)
    why = "the Agent Server API does not show a paused node's recorded task results, so only a lock can tell their order"
    help = (
        "pass --live-contract with the deployed commit's locks (written by `playbook contract --write`, format 2), "
        "or serve them at GET /playbook/contract"
    )

    def check(self, thread: ThreadSnapshot, graph: GraphEvidence) -> Iterable[Hit]:
        for task in replayed_tasks(thread):
            node = base.node_at(graph, task.path)
            if node is None or node.live is not None or not node.spec.calls:
                continue
            yield Hit(
                f"threads paused in {task.path!r} replay its @task/interrupt calls on resume, but the live code's "
                "call order is unknown (no contract lock of format 2 for it): call-order changes were not checked",
                node=task.path,
            )
