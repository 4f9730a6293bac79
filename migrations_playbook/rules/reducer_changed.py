"""REDUCER_CHANGED: a channel's reducer differs from the live code's while threads hold values."""

from __future__ import annotations

from collections.abc import Iterable

from migrations_playbook.model import REDUCER_CHANGED, ThreadSnapshot
from migrations_playbook.rules import base
from migrations_playbook.rules.base import GraphEvidence, Hit, Rule


class ReducerChanged(Rule):
    code = REDUCER_CHANGED
    severity = "block"
    evidence = (base.API_THREADS, base.LOCK, base.CANDIDATE)
    why = "old values are merged differently: an append becomes an overwrite (or the reverse) on the next write"
    help = "keep the reducer; add a new channel with the new reducer and migrate readers to it (add-then-remove)"

    def check(self, thread: ThreadSnapshot, graph: GraphEvidence) -> Iterable[Hit]:
        for level in base.levels(thread, graph):
            for name in level.values:
                spec, live = level.candidate.fields.get(name), level.live_fields.get(name)
                if spec is None or live is None or live.get("reducer") == spec.reducer:
                    continue
                yield Hit(
                    f"the reducer of {name!r} in {level.wording} changes from {live.get('reducer')} to {spec.reducer} "
                    "while threads hold values for it: old values would be merged differently",
                    node=level.node,
                    field=name,
                )
