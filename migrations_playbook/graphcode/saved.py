"""What a Functional API graph's entrypoint reads of its thread's saved value (``previous``).

An ``@entrypoint`` keeps its saved value in the ``__previous__`` channel and hands it to the next
invocation as ``previous``: that value is state, and the keys the entrypoint reads of it and the
type it declares for it are checked like a graph's state (FIELD_REQUIRED_MISSING, FIELD_TYPE_MISMATCH).
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Callable
from typing import Any, Union, get_args, get_origin

from migrations_playbook.graphcode import codeinfo
from migrations_playbook.graphcode.typing_facts import render_type, structured_fields, unwrap, validation_error
from migrations_playbook.model import SavedValueSpec


def _saved_type(annotation: Any) -> Any:
    """The type a stored saved value must fit: ``X | None`` is X (``previous`` is None only on a
    thread's first invocation, and nothing is stored then)."""
    annotation = unwrap(annotation)
    args = get_args(annotation)
    if get_origin(annotation) in (Union, types.UnionType) and type(None) in args:
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1:
            return unwrap(rest[0])
    return annotation


def _saved_validator(annotation: Any) -> tuple[frozenset[str], Callable[[str | None, Any], str | None]]:
    """The keys a declared ``previous`` type names, and ``validate(key, value)`` for a stored saved
    value: a TypedDict, pydantic model or dataclass key by key (the runtime hands ``previous`` over as
    stored, and the keys its code reads are FIELD_REQUIRED_MISSING's), any other type as a whole."""
    from pydantic import TypeAdapter, ValidationError

    declared = _saved_type(annotation)
    structured = structured_fields(declared) if isinstance(declared, type) else None
    adapters: dict[str | None, TypeAdapter[Any] | None] = {}

    def adapter(key: str | None) -> TypeAdapter[Any] | None:
        if key not in adapters:
            tp = declared if key is None or structured is None else unwrap(structured[key][0])
            try:
                adapters[key] = TypeAdapter(tp)
            except Exception:  # noqa: BLE001 - arbitrary types cannot be validated from JSON
                adapters[key] = None
        return adapters[key]

    def validate(key: str | None, value: Any) -> str | None:
        if (key is None) != (structured is None) or (structured is not None and key not in structured):
            return None
        checker = adapter(key)
        if checker is None:
            return None
        try:
            checker.validate_python(value)
        except ValidationError as exc:
            return validation_error(exc)[1]
        return None

    return frozenset(structured or ()), validate


def saved_value_of(graph: Any) -> SavedValueSpec | None:
    """What a Functional API graph's entrypoint reads of its thread's saved value (``previous``)."""
    for name, node in (getattr(graph, "nodes", None) or {}).items():
        if name.startswith("__"):
            continue
        facts = codeinfo.saved_value(getattr(node, "bound", None))
        if facts is None:
            continue
        spec = SavedValueSpec(entrypoint=name, reads=frozenset(facts.reads), visible=not facts.saves_other)
        if facts.annotation is None or facts.annotation is Any:
            return spec
        fields, validate = _saved_validator(facts.annotation)
        return dataclasses.replace(spec, type=render_type(facts.annotation), fields=fields, validate=validate)
    return None
