"""STATE_INVALID: the candidate's whole state model rejects the stored values (validators included).

Pydantic state is validated as a whole when a node reads it, so a `field_validator`
or `model_validator` that rejects stored values breaks the thread even when every
annotation fits; a dataclass runs its `__post_init__`. Checked in-process, as the
runtime does it.
"""

from __future__ import annotations

from collections.abc import Iterable

from migrations_playbook.model import STATE_INVALID, ThreadSnapshot
from migrations_playbook.rules import base
from migrations_playbook.rules.base import GraphEvidence, Hit, Level, Rule


class StateInvalid(Rule):
    code = STATE_INVALID
    severity = "block"
    evidence = (base.API_THREADS, base.LOCK, base.CANDIDATE)
    why = "the runtime validates the whole state model on every step; a validator that rejects stored values fails it"
    help = (
        "let the validator accept the stored values (convert them in a `mode='before'` validator), or migrate the "
        "values first (`playbook migrate`)"
    )

    def check(self, thread: ThreadSnapshot, graph: GraphEvidence) -> Iterable[Hit]:
        for level in base.levels(thread, graph):
            candidate = level.candidate
            failed = candidate.validate_state(level.values) if candidate.state_kind in ("pydantic", "dataclass") else None
            if failed is None:
                continue
            field, error = failed
            spec = candidate.fields.get(field)
            if spec is not None and (
                (field not in level.values and spec.enforced) or candidate.validate(field, level.values.get(field)) is not None
            ):
                continue  # FIELD_REQUIRED_MISSING / FIELD_TYPE_MISMATCH say it
            already = level.live is not None and self._unchanged(level)
            yield Hit(
                f"the candidate's {candidate.state_kind} state rejects the values stored in {level.wording}: {error}"
                + (" (the live code has the same model and validators: these threads already fail)" if already else ""),
                node=level.node,
                field=field or None,
                severity="warn" if already else None,
            )

    @staticmethod
    def _unchanged(level: Level) -> bool:
        same_fields = {n: (s.type, s.required) for n, s in level.candidate.fields.items()} == {
            n: (f.get("type"), f.get("required")) for n, f in level.live_fields.items()
        }
        return same_fields and (level.live or {}).get("validators") == level.candidate.validators
