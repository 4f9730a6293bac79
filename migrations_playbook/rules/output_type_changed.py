"""OUTPUT_TYPE_CHANGED: a key the deployed code's runs return holds a JSON type the candidate's no longer admits."""

from __future__ import annotations

from collections.abc import Iterable

from migrations_playbook.model import OUTPUT_TYPE_CHANGED, ThreadSnapshot
from migrations_playbook.rules import base
from migrations_playbook.rules.base import GraphEvidence, Hit, Rule

COMPATIBLE = {"integer": frozenset({"integer", "number"})}
"""An integer the deployed code returned is still a number where the candidate returns numbers."""


def _shares_a_type(live: frozenset[str], candidate: frozenset[str]) -> bool:
    values = live - {"null"} or live
    return any(COMPATIBLE.get(kind, frozenset({kind})) & candidate for kind in values)


class OutputTypeChanged(Rule):
    """Judged from the two output schemas (evidence, not proof): only where both name the key's types and they
    share none (a string returned as an object, a list as a string), not where one only widens or narrows the
    other. ``playbook check`` settles it by running the threads (the shadow's SHADOW_OUTPUT_TYPE_CHANGED)."""

    code = OUTPUT_TYPE_CHANGED
    severity = "warn"
    evidence = (base.API_SCHEMAS, base.CANDIDATE)
    why = (
        "a run's output is an API: a client that reads a key the deployed code returns as one JSON type breaks "
        "when the candidate returns it as another"
    )
    help = (
        "return the new shape under a new key and keep the old key's type until every client has moved; "
        "`playbook check` runs the threads and shows whether a run's output really changes type"
    )

    def check(self, thread: ThreadSnapshot, graph: GraphEvidence) -> Iterable[Hit]:
        live = graph.live.output_types if graph.live is not None else None
        candidate = graph.candidate.output_types if graph.candidate is not None else None
        if live is None or candidate is None:
            return
        for name in sorted(set(live) & set(candidate)):
            before, after = live[name], candidate[name]
            if not before or not after or _shares_a_type(before, after):
                continue
            yield Hit(
                f"the deployed code's runs return {name!r} as {'/'.join(sorted(before))}, the candidate's output "
                f"schema says {'/'.join(sorted(after))}: a client reading it breaks (unverified: `playbook check` runs "
                "the threads and compares what each run returns)",
                field=name,
                severity="block" if graph.strict else "warn",
            )
