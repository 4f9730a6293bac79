"""STATE_UNCHECKED: the candidate has no inspectable state schema (Functional API)."""

from __future__ import annotations

from collections.abc import Iterable

from migrations_playbook.model import STATE_UNCHECKED, ThreadSnapshot
from migrations_playbook.rules.base import API_THREADS, CANDIDATE, GraphEvidence, Hit, Rule


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
        yield Hit("the candidate graph has no inspectable state schema (e.g. Functional API); stored values were not checked")
