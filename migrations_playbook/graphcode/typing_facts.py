"""How a declared type reads as text (for the lock and the messages), and what a structured type
(TypedDict, pydantic model, dataclass) declares: its fields and whether each is required."""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from typing import Any, Literal, Union, get_args, get_origin

import typing_extensions

WRAPPERS = frozenset({"NotRequired", "Required", "ReadOnly"})
"""Type qualifiers that say how a field is declared, not what it holds (`unwrap` removes them)."""


def render_type(tp: Any, _seen: frozenset[int] = frozenset()) -> str:
    """A stable, readable rendering of a type annotation (reducers and NotRequired dropped)."""
    from langchain_core.messages import AnyMessage

    if tp is AnyMessage:
        return "AnyMessage"
    origin, args = get_origin(tp), get_args(tp)
    if origin is typing.Annotated:
        return render_type(args[0], _seen)
    if getattr(origin, "_name", None) in WRAPPERS:
        return render_type(args[0], _seen)
    if origin is Literal:
        return f"Literal[{', '.join(repr(a) for a in args)}]"
    if origin is Union or origin is types.UnionType:
        return " | ".join(render_type(a, _seen) for a in args)
    if origin is not None:
        name = getattr(origin, "__name__", None) or repr(origin).replace("typing.", "")
        return f"{name}[{', '.join(render_type(a, _seen) for a in args)}]" if args else name
    if tp is type(None):
        return "None"
    if isinstance(tp, type):
        if id(tp) in _seen:
            return tp.__name__
        inner = structured_fields(tp)
        if inner is not None:
            seen = _seen | {id(tp)}
            body = ", ".join(f"{key}{'' if req else '?'}: {render_type(val, seen)}" for key, (val, req) in inner.items())
            return f"{tp.__name__}{{{body}}}"
        return tp.__name__
    return repr(tp).replace("typing.", "")


def structured_fields(tp: type) -> dict[str, tuple[Any, bool]] | None:
    """Fields of a TypedDict, pydantic model or dataclass: name -> (annotation, required)."""
    if typing_extensions.is_typeddict(tp):
        hints = typing.get_type_hints(tp, include_extras=True)
        required = getattr(tp, "__required_keys__", frozenset(hints))
        return {k: (v, k in required) for k, v in hints.items()}
    model_fields = getattr(tp, "model_fields", None)
    if isinstance(model_fields, dict):
        return {k: (f.annotation, f.is_required()) for k, f in model_fields.items()}
    if dataclasses.is_dataclass(tp):
        hints = typing.get_type_hints(tp, include_extras=True)
        return {
            f.name: (
                hints.get(f.name, Any),
                f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING,
            )
            for f in dataclasses.fields(tp)
        }
    return None


def unwrap(tp: Any) -> Any:
    """Strip Annotated reducer metadata and NotRequired/Required wrappers."""
    while True:
        origin = get_origin(tp)
        if origin is typing.Annotated:
            base, *meta = get_args(tp)
            kept = [m for m in meta if type(m).__module__.startswith("pydantic")]
            tp = typing.Annotated[(base, *kept)] if kept else base
            if kept:
                return tp
        elif getattr(origin, "_name", None) in WRAPPERS:
            tp = get_args(tp)[0]
        else:
            return tp


def short(value: Any, limit: int = 60) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def validation_error(exc: Any) -> tuple[str | None, str]:
    """(first field, message) of a pydantic validation error: ``due: Input should be ... (got "x")``."""
    first = exc.errors()[0]
    loc = [str(p) for p in first.get("loc", ())]
    return (loc[0] if loc else None), f"{'.'.join(loc) or 'value'}: {first.get('msg')} (got {short(first.get('input'))})"
