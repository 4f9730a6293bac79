"""The JSON types a JSON Schema admits, and the keys (with their types) a graph's output schema names: what the
gate's output rules (OUTPUT_KEY_DROPPED, OUTPUT_TYPE_CHANGED) compare between the live server's schemas and the
candidate's."""

from __future__ import annotations

from typing import Any

JSON_TYPES = frozenset({"string", "integer", "number", "boolean", "array", "object", "null"})


def json_types_of(schema: Any) -> frozenset[str]:
    """The JSON types a JSON Schema admits (``type``, and the alternatives of ``anyOf``/``oneOf``); empty when it
    does not say (a ``$ref``, ``{}``, an ``enum`` alone): unknown, never "none"."""
    if not isinstance(schema, dict):
        return frozenset()
    declared = schema.get("type")
    if isinstance(declared, str) and declared in JSON_TYPES:
        return frozenset({declared})
    if isinstance(declared, list) and declared and all(t in JSON_TYPES for t in declared):
        return frozenset(declared)
    alternatives = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(alternatives, list) and alternatives:
        found = [json_types_of(one) for one in alternatives]
        return frozenset().union(*found) if all(found) else frozenset()
    return frozenset()


def output_types_of(schema: Any) -> dict[str, frozenset[str]] | None:
    """The keys a graph's runs return, each with its JSON types (`json_types_of`), from its output JSON schema
    (``get_output_jsonschema``, what the server serves as ``output_schema``): its ``properties``; None when it
    names none (a Functional API entrypoint, a ``__root__`` output)."""
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(properties, dict) or not properties or "__root__" in properties:
        return None
    return {str(key): json_types_of(value) for key, value in properties.items()}
