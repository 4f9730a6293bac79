"""FIELD_TYPE_MISMATCH: stored values do not validate against the candidate's declared type."""

from __future__ import annotations

from collections.abc import Iterable

from migrations_playbook.model import FIELD_TYPE_MISMATCH, ThreadSnapshot
from migrations_playbook.rules import base
from migrations_playbook.rules.base import GraphEvidence, Hit, Rule


class FieldTypeMismatch(Rule):
    code = FIELD_TYPE_MISMATCH
    severity = "block"
    evidence = (base.API_THREADS, base.LOCK, base.CANDIDATE)
    why = "a narrowed type no longer fits old checkpoints (pydantic refuses them; other code reads values it does not expect)"
    help = "keep the type accepting the stored values, or migrate them first (`playbook migrate`)"

    def check(self, thread: ThreadSnapshot, graph: GraphEvidence) -> Iterable[Hit]:
        yield from _saved_value_types(thread, graph)
        for level in base.levels(thread, graph):
            for name, value in level.values.items():
                spec = level.candidate.fields.get(name)
                if spec is None or level.live_fields.get(name, {}).get("type") == spec.type:
                    continue  # the live code declared the same type: not this change (asked first: it is cheap)
                error = level.candidate.validate(name, value)
                if error is None:
                    continue
                yield Hit(
                    f"stored values of {name!r} in {level.wording} do not validate against the candidate's {spec.type}: {error}",
                    node=level.node,
                    field=name,
                    help=base.fix_for_narrowed_type(level.candidate.state_kind, name),
                )


def _saved_value_types(thread: ThreadSnapshot, graph: GraphEvidence) -> Iterable[Hit]:
    """A Functional API thread's saved value does not fit the declared type of the candidate
    entrypoint's ``previous``: key by key for a TypedDict, pydantic model or dataclass, as a whole
    otherwise. The runtime hands ``previous`` over as stored (no validation, no conversion), so
    code written for the declared type meets a value it does not expect."""
    found = base.saved_value(thread, graph)
    if found is None or found[0].type is None:
        return
    spec, values = found
    checks = [(key, values[key]) for key in sorted(spec.fields) if key in values] if spec.fields else [(None, values)]
    for key, value in checks:
        error = spec.validate(key, value)
        if error is None:
            continue
        what = f"{key!r} in the saved value" if key is not None else "the saved value"
        yield Hit(
            f"stored {what} of entrypoint {spec.entrypoint!r} does not validate against the candidate's "
            f"`previous: {spec.type}`: {error}",
            node=spec.entrypoint,
            field=key,
            help="keep `previous` accepting the stored saved values (widen the type), or migrate them first",
        )
