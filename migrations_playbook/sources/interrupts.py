"""The interrupts a paused thread waits on, read from its state, and when two payloads ask the same question.

Pure functions over the ``get_state(subgraphs=True)`` shape (an Agent Server's, or a store's derived
in it): the staging replay (`proof/`) and the migration's proof (`repair/`) both read them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class PendingInterrupt:
    """One interrupt a paused thread waits on."""

    path: str
    """Node path of the task that raised it (``triage``, ``review:confirm``)."""
    value: Any
    """The interrupt payload, as the server returns it."""
    id: str | None = None
    """The interrupt id (the key of a ``{id: value}`` resume); None on servers that give none."""
    schema: Any = None
    """The interrupt's ``response_schema`` (JSON Schema of the value expected back), where the server gives one."""

    @property
    def kind(self) -> str | None:
        """The payload's ``kind`` key (what ``--resume-map`` is keyed by), if it is a string."""
        kind = self.value.get("kind") if isinstance(self.value, Mapping) else None
        return kind if isinstance(kind, str) else None


def pending_interrupts(state: Mapping[str, Any], prefix: str = "") -> list[PendingInterrupt]:
    """Every interrupt a thread waits on, once each, at the deepest task path that holds it
    (a subgraph's interrupt is listed on the parent task too, with the same id)."""
    found: dict[Any, PendingInterrupt] = {}
    for index, task in enumerate(state.get("tasks") or []):
        path = prefix + str(task.get("name"))
        nested = task.get("state")
        if isinstance(nested, Mapping) and "tasks" in nested:
            for inner in pending_interrupts(nested, path + ":"):
                found[inner.id or (path, inner.path)] = inner
        for position, entry in enumerate(task.get("interrupts") or []):
            interrupt_id = entry.get("id")
            key = interrupt_id or (path, index, position)
            if key not in found:
                found[key] = PendingInterrupt(
                    path=path, value=entry.get("value"), id=interrupt_id, schema=entry.get("response_schema")
                )
    return list(found.values())


def _question(value: Any) -> Any:
    """An interrupt payload without the ``error`` a re-ask adds (this repo's approvals do)."""
    if isinstance(value, Mapping):
        return {k: v for k, v in value.items() if k != "error"}
    return value


QUESTION_KEYS = ("kind", "question", "options")
"""What makes two payloads the same question when both carry a ``kind``: a question asked
again by another node (a moved thread) is built afresh, so its timestamps (``requested_at``)
and its own node name (``resume_at``) may differ while it asks the user the same thing."""


def same_question(a: Any, b: Any) -> bool:
    """``a`` and ``b`` ask the user the same thing: equal on `QUESTION_KEYS` when both are
    payloads with a string ``kind``, else equal but for an ``error`` key."""
    if isinstance(a, Mapping) and isinstance(b, Mapping) and isinstance(a.get("kind"), str):
        return all(a.get(k) == b.get(k) for k in QUESTION_KEYS)
    same: bool = _question(a) == _question(b)
    return same


class Answered(Protocol):
    """What answered an interrupt (the replay's ``Answer``): the interrupt it answered."""

    @property
    def interrupt(self) -> PendingInterrupt: ...


def asked_again(answer: Answered, after: Sequence[PendingInterrupt]) -> PendingInterrupt | None:
    """The interrupt that asks ``answer``'s question again after the resume, if one does:
    same path, same payload but for an ``error`` key. (A node that asks the very same
    question twice on purpose looks the same; that is rare and errs towards a report.)"""
    for interrupt in after:
        if interrupt.path == answer.interrupt.path and _question(interrupt.value) == _question(answer.interrupt.value):
            return interrupt
    return None
