"""The proof on staging: resume a repaired thread there and check the pending step really runs.

Through a source that runs the candidate (a staging copy: capability ``staging_server``): its
`pending_state` and `run_updates`. The answers come from ``rule`` (duck-typed: the replay's
`ResumeRule`, an object with ``answer(interrupt)`` that returns an answer with ``value`` and
``source``, or something else with a ``reason``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from migrations_playbook.sources.base import Source
from migrations_playbook.sources.interrupts import PendingInterrupt, asked_again, same_question
from migrations_playbook.sources.repair_model import ThreadOutcome, ThreadView


class AnswerRule(Protocol):
    """How questions are answered on staging (the replay's `ResumeRule`)."""

    @property
    def active(self) -> bool: ...

    def answer(self, interrupt: PendingInterrupt) -> Any: ...


@runtime_checkable
class Answer(Protocol):
    """An answer to one interrupt (the replay's ``Answer``; its ``Unanswered`` has a ``reason`` instead)."""

    @property
    def interrupt(self) -> PendingInterrupt: ...

    @property
    def value(self) -> Any: ...

    @property
    def source(self) -> str: ...


@dataclass
class Proof:
    """What resuming one repaired thread on staging showed."""

    thread_id: str
    graph_id: str
    node: str
    """The node the pending step must run in (the move's target, else the thread's next)."""
    ok: bool
    """Nothing went wrong: the step ran, or (unanswered) the question was asked again."""
    proven: bool = False
    """The pending step ran under the candidate (with the answer, for a question)."""
    asked_again: bool | None = None
    """For a moved interrupt: the node asked the thread's pending question again."""
    answer: Any = None
    answer_source: str | None = None
    ran: list[str] = field(default_factory=list)
    wrote: Any = None
    """What the node wrote when it ran with the answer (its update)."""
    message: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "thread_id": self.thread_id,
            "graph_id": self.graph_id,
            "node": self.node,
            "ok": self.ok,
            "proven": self.proven,
            "asked_again": self.asked_again,
            "answer": self.answer,
            "answer_source": self.answer_source,
            "ran": self.ran,
            "wrote": self.wrote,
            "message": self.message,
        }


async def prove_thread(source: Source, outcome: ThreadOutcome, view: ThreadView, rule: AnswerRule | None) -> Proof | None:
    """Resume a repaired thread on staging (``source``) and check the pending step really runs there.

    A moved interrupt: continue the thread (no input) and check the new node asks the same
    question; then answer it (``rule``, applied to the question as the live thread showed it)
    and check the new node ran with it and did not ask again. Another thread with pending work:
    continue it and check its next node ran."""
    change = outcome.change
    state = await source.pending_state(outcome.thread_id)
    nxt = list(state.next)
    if change is None or not nxt:
        return None
    node = change.move.to_node if change.move is not None else nxt[0]
    questions = [i for i in view.interrupts if change.move is None or i.path == change.move.from_node] or list(view.interrupts)
    proof = Proof(outcome.thread_id, outcome.graph_id, node, ok=False)
    if not questions:
        ran, error = await source.run_updates(outcome.thread_id, outcome.graph_id)
        proof.ran = sorted(ran)
        proof.ok = proof.proven = error is None and node in ran
        proof.wrote = (ran.get(node) or [None])[0]
        proof.message = error or ("the pending step ran" if proof.ok else f"{node!r} never ran")
        return proof
    # 1. the question is asked again, by the new node
    ran, error = await source.run_updates(outcome.thread_id, outcome.graph_id)
    proof.ran = sorted(ran)
    now = (await source.pending_state(outcome.thread_id)).interrupts
    original = questions[0]
    again = [i for i in now if i.path == node and same_question(i.value, original.value)]
    proof.asked_again = bool(again)
    if error is not None or not again:
        proof.message = error or (
            f"{node!r} did not ask the pending question again (it waits on "
            f"{json.dumps([i.value for i in now], default=str)[:200]})"
        )
        return proof
    # 2. the answer lands there
    answer = rule.answer(PendingInterrupt(path=node, value=original.value, id=again[0].id)) if rule is not None else None
    if not isinstance(answer, Answer):
        proof.ok = True
        proof.message = (
            f"{node!r} asked the question again; not answered on staging: "
            f"{getattr(answer, 'reason', 'pass --auto-resume, --resume-map or --resume')}"
        )
        return proof
    proof.answer, proof.answer_source = answer.value, answer.source
    ran, error = await source.run_updates(outcome.thread_id, outcome.graph_id, command={"resume": answer.value})
    proof.ran = sorted(set(proof.ran) | set(ran))
    proof.wrote = (ran.get(node) or [None])[0]
    final = (await source.pending_state(outcome.thread_id)).interrupts
    asked = asked_again(answer, final) if "__interrupt__" in ran else None
    proof.ok = proof.proven = error is None and node in ran and asked is None
    if error is not None:
        proof.message = error
    elif node not in ran:
        proof.message = f"resumed with {json.dumps(answer.value, default=str)}, but {node!r} never ran"
    elif asked is not None:
        proof.message = f"{node!r} asked the same question again after {json.dumps(answer.value, default=str)}"
    else:
        proof.message = f"{node!r} asked the pending question again and ran with the answer"
    return proof
