"""CALL_ORDER_UNVERIFIED: threads will replay task/interrupt calls, and the live order is unknown.

From a checkpointer a thread that recorded nothing (no `@task` result, no answer) replays
nothing by position and is not named, unless it waits at an interrupt the candidate's first
``interrupt()`` does not ask (`nothing_replayed`)."""

from __future__ import annotations

from collections.abc import Iterable

from migrations_playbook.graphcode.codeinfo import INTERRUPT, QUESTION_KEYS, sections
from migrations_playbook.model import CALL_ORDER_UNVERIFIED, NodeSpec, TaskFact, ThreadSnapshot
from migrations_playbook.rules import base
from migrations_playbook.rules.base import GraphEvidence, Hit, Rule
from migrations_playbook.rules.call_order_changed import replayed_tasks


def nothing_replayed(task: TaskFact, spec: NodeSpec) -> bool:
    """A checkpointer shows the task recorded no `@task` result and no answer, so the replay hands
    no recorded value to any call by position; for a task waiting at an interrupt, the pending
    answer goes to the candidate's first ``interrupt()``, which must ask the question the thread
    waits at (its payload's ``kind``/``type``/``name``/``question``). From the Agent Server API
    (the facts unknown) never."""
    if task.recorded_results != 0 or task.resume_values != ():
        return False
    if not task.interrupted:
        return True
    first = next((c for c in sections(spec.calls)[""] if c.startswith(INTERRUPT + "(")), None)
    for value in task.interrupt_values[:1]:
        if isinstance(value, dict):
            key = next((k for k in QUESTION_KEYS if isinstance(value.get(k), str)), None)
            return key is not None and first == f"{INTERRUPT}({key}={value[key]!r})"
    return False


class CallOrderUnverified(Rule):
    code = CALL_ORDER_UNVERIFIED
    severity = "warn"
    evidence = (base.API_THREADS, base.STORE, base.LOCK, base.CANDIDATE)
    why = "the Agent Server API does not show a paused node's recorded task results, so only a lock can tell their order"
    help = (
        "pass --live-contract with the deployed commit's locks (written by `playbook contract --write`, format 2), "
        "or serve them at GET /playbook/contract"
    )

    def check(self, thread: ThreadSnapshot, graph: GraphEvidence) -> Iterable[Hit]:
        for task in replayed_tasks(thread):
            node = base.node_at(graph, task.path)
            if node is None or node.live is not None or not node.spec.calls or nothing_replayed(task, node.spec):
                continue
            yield Hit(
                f"threads paused in {task.path!r} replay its @task/interrupt calls on resume, but the live code's "
                "call order is unknown (no contract lock of format 2 for it): call-order changes were not checked",
                node=task.path,
            )
