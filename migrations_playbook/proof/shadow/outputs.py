"""The output contract: what clients read of a run (its output, the questions it asks) under both codes.

A run's output (the last root ``values`` event: the graph's output schema) and a question's payload are an
API: a client reads their keys. So after the same run on both sides, every key path the deployed code
returned (through objects; a list is one value, its items are data) is looked up in what the candidate
returned:

* SHADOW_OUTPUT_KEY_DROPPED (block): a key the deployed code returned with a value is missing on the candidate;
* SHADOW_OUTPUT_TYPE_CHANGED (block): a key holds another JSON type (a string became a list; null and a
  number of either kind are taken as compatible);
* a key only the candidate returns is shown for review (SHADOW_OUTPUT_DIFFERS, field ``output``).

What two runs of the deployed code already differ in (a key present on one run only) is not held against the
candidate: `proof/shadow/run.py` masks every diff the deployed code shows against itself. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

Diff = tuple[str, str | None, str | None, str]
"""(code, node, field, detail): `compare.Diff`'s fields (`compare` builds them)."""

MAX_PATHS = 5
"""Key paths named per finding."""


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, list | tuple):
        return "array"
    return type(value).__name__


def key_paths(value: Any, prefix: str = "") -> dict[str, Any]:
    """Key path (``summary.text``) -> value, through objects only."""
    found: dict[str, Any] = {}
    if isinstance(value, Mapping):
        for key, item in value.items():
            path = f"{prefix}.{key}" if prefix else str(key)
            found[path] = item
            found.update(key_paths(item, path))
    return found


def contract_diffs(what: str, where: str, node: str | None, a: Any, b: Any) -> list[Diff]:
    """How ``b`` (the candidate's) breaks what a client read of ``a`` (the deployed code's), and what it adds."""
    if not isinstance(a, Mapping) or not isinstance(b, Mapping):
        if a is not None and b is not None and json_type(a) != json_type(b):
            return [
                (
                    "SHADOW_OUTPUT_TYPE_CHANGED",
                    node,
                    where,
                    f"{what}: {where} was {json_type(a)} on the deployed code, {json_type(b)} on the candidate",
                )
            ]
        return []
    paths_a, paths_b = key_paths(a), key_paths(b)
    dropped = [
        p
        for p, v in paths_a.items()
        if p not in paths_b and v is not None and not any(p.startswith(d + ".") for d in paths_a if d not in paths_b and d != p)
    ]
    changed = [
        p
        for p, v in paths_a.items()
        if p in paths_b and _incompatible(v, paths_b[p]) and not any(p.startswith(c + ".") for c in paths_a if c != p)
    ]
    diffs: list[Diff] = [
        (
            "SHADOW_OUTPUT_KEY_DROPPED",
            node,
            f"{where}.{path}",
            f"{what}: {where} held {path!r} on the deployed code and lacks it on the candidate: a client reading it breaks",
        )
        for path in dropped[:MAX_PATHS]
    ]
    diffs += [
        (
            "SHADOW_OUTPUT_TYPE_CHANGED",
            node,
            f"{where}.{path}",
            f"{what}: {where}.{path} was {json_type(paths_a[path])} on the deployed code, "
            f"{json_type(paths_b[path])} on the candidate",
        )
        for path in changed[:MAX_PATHS]
    ]
    added = sorted(p for p in paths_b if p not in paths_a and "." not in p)
    if added:
        diffs.append(("SHADOW_OUTPUT_DIFFERS", node, where, f"{what}: the candidate also returns {', '.join(added[:MAX_PATHS])}"))
    return diffs


def _incompatible(a: Any, b: Any) -> bool:
    kinds = {json_type(a), json_type(b)}
    return len(kinds) == 2 and "null" not in kinds


def question_pairs(asked_a: Sequence[tuple[str, Any]], asked_b: Sequence[tuple[str, Any]]) -> list[tuple[str, Any, Any]]:
    """(node, payload A, payload B) for questions asked at the same node in the same order (the caller checked
    that both sides asked the same questions)."""
    return [(na, qa, qb) for (na, qa), (nb, qb) in zip(asked_a, asked_b, strict=False) if na == nb]
