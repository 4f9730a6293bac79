"""OUTPUT_KEY_DROPPED: the deployed code's runs return a key that the candidate's runs no longer return."""

from __future__ import annotations

from collections.abc import Iterable

from migrations_playbook.model import OUTPUT_KEY_DROPPED, ThreadSnapshot
from migrations_playbook.rules import base
from migrations_playbook.rules.base import GraphEvidence, Hit, Rule


class OutputKeyDropped(Rule):
    """Judged from the two output schemas, so it is evidence, not proof: a key the schema drops that no run ever
    filled changes nothing a client reads. ``playbook check`` settles it by running the graph's threads on both
    codes and comparing what each run returns (the shadow's SHADOW_OUTPUT_KEY_DROPPED)."""

    code = OUTPUT_KEY_DROPPED
    severity = "warn"
    evidence = (base.API_SCHEMAS, base.CANDIDATE)
    why = (
        "a run's output is an API: a client (runs.wait, the last values event, a parent graph) that reads a key the "
        "deployed code returns breaks when the candidate stops returning it, though every checkpoint keeps its value"
    )
    help = (
        "keep returning the key (declare it in the output schema) until every client has moved to the new one; "
        "`playbook check` runs the threads and shows whether a run's output really loses it"
    )

    def check(self, thread: ThreadSnapshot, graph: GraphEvidence) -> Iterable[Hit]:
        live = graph.live.output_types if graph.live is not None else None
        candidate = graph.candidate if graph.candidate is not None else None
        if live is None or candidate is None or candidate.output_types is None:
            return
        for name in sorted(set(live) - set(candidate.output_types) - candidate.managed):
            yield Hit(
                f"the deployed code's runs return {name!r} (its output schema) and the candidate's do not: a client "
                "reading it from a run of these threads breaks (unverified: `playbook check` runs them and compares "
                "what each run returns)",
                field=name,
                severity="block" if graph.strict else "warn",
            )
