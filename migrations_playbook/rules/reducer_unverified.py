"""REDUCER_UNVERIFIED: threads hold values and the live reducers are unknown."""

from __future__ import annotations

from collections.abc import Iterable

from migrations_playbook.model import REDUCER_UNVERIFIED, ThreadSnapshot
from migrations_playbook.rules.base import API_THREADS, CANDIDATE, LOCK, GraphEvidence, Hit, Rule


class ReducerUnverified(Rule):
    code = REDUCER_UNVERIFIED
    severity = "warn"
    evidence = (API_THREADS, LOCK, CANDIDATE)
    why = "the Agent Server API does not expose reducers, so a changed reducer is invisible without a lock"
    help = "pass --live-contract with the deployed commit's locks, or serve them at GET /playbook/contract"
    strict_help = (
        "--strict blocks on what it cannot prove: pass --live-contract with the deployed commit's locks "
        "(or serve them at GET /playbook/contract) so the reducers are compared, or run without --strict"
    )

    def check(self, thread: ThreadSnapshot, graph: GraphEvidence) -> Iterable[Hit]:
        candidate = graph.candidate
        if candidate is None or graph.lock is not None or not candidate.state_inspectable:
            return
        if isinstance(thread.values, dict) and any(name in candidate.fields for name in thread.values):
            yield Hit(
                "the live reducers are unknown (no contract lock for the live code: pass "
                "--live-contract); reducer changes on channels holding values were not checked",
                # --strict: a change the gate cannot prove safe is not passed.
                severity="block" if graph.strict else None,
                help=self.strict_help if graph.strict else None,
            )
