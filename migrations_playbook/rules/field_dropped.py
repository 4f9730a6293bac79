"""FIELD_DROPPED: threads hold a value under a key the candidate no longer declares."""

from __future__ import annotations

from collections.abc import Iterable

from migrations_playbook.model import FIELD_DROPPED, ThreadSnapshot
from migrations_playbook.rules import base
from migrations_playbook.rules.base import GraphEvidence, Hit, Rule


class FieldDropped(Rule):
    code = FIELD_DROPPED
    severity = "warn"
    evidence = (base.API_THREADS, base.CANDIDATE)
    why = "a renamed or removed key loses the value old threads hold (the candidate neither reads nor keeps it)"
    help = "keep the old key declared for a drain period and dual-read (new key, falling back to the old one)"

    def check(self, thread: ThreadSnapshot, graph: GraphEvidence) -> Iterable[Hit]:
        for level in base.levels(thread, graph):
            for name in level.values:
                if name in level.candidate.fields or name in level.candidate.managed:
                    continue
                yield Hit(
                    f"threads hold a value under {name!r} in {level.wording}, which the candidate no longer "
                    "declares: a rename or removal loses it (keep the old key for a drain period, dual-read)",
                    node=level.node,
                    field=name,
                    severity="block" if graph.strict else "warn",
                )
