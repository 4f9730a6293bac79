"""STATE_UNCHECKED: the candidate has no inspectable state schema (Functional API).

An `@entrypoint`'s stored values are its last return; the only stored state its next
invocation reads is the saved value it is handed as ``previous``. An entrypoint that takes no
``previous`` reads none, and one that does has its reads and declared type checked against the
thread's values (FIELD_REQUIRED_MISSING, FIELD_TYPE_MISMATCH): neither is "unchecked". What is
left: a saved value the API does not show (``entrypoint.final(save=...)``), and graphs with
neither a schema nor an entrypoint (a hand-built Pregel)."""

from __future__ import annotations

from collections.abc import Iterable

from migrations_playbook.model import STATE_UNCHECKED, ThreadSnapshot
from migrations_playbook.rules.base import API_THREADS, CANDIDATE, GraphEvidence, Hit, Rule

PREVIOUS_CHANNEL = "__previous__"
"""The channel an `@entrypoint` graph keeps its saved value in (only entrypoint graphs have it)."""


class StateUnchecked(Rule):
    code = STATE_UNCHECKED
    severity = "warn"
    evidence = (API_THREADS, CANDIDATE)
    why = "a Functional API entrypoint keeps its state in its own code; there is no schema to check stored values against"
    help = "keep the entrypoint's input and return shapes backward compatible, or register a new graph id"

    def check(self, thread: ThreadSnapshot, graph: GraphEvidence) -> Iterable[Hit]:
        candidate = graph.candidate
        if candidate is None or candidate.state_inspectable or not (isinstance(thread.values, dict) and thread.values):
            return
        if PREVIOUS_CHANNEL in candidate.channels:
            saved = candidate.saved
            if saved is None or saved.visible:
                return  # takes no `previous`, or its saved value is the thread's values and was checked
            yield Hit(
                f"entrypoint {saved.entrypoint!r} returns `entrypoint.final(save=...)`: the saved value it reads as "
                "`previous` is not the thread's values (the API does not show it), so its keys were not checked",
                node=saved.entrypoint,
            )
            return
        yield Hit("the candidate graph has no inspectable state schema (e.g. Functional API); stored values were not checked")
