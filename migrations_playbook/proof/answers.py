"""Every answer a client may send to a question, read from the question itself.

A paused thread waits for a person's answer, and a client may send any answer the question allows:
approve, edit, reject or respond to a tool call; accept, edit, respond or ignore an Agent Inbox
request; any of the options offered; any value the interrupt's ``response_schema`` admits. The
candidate must take each one the deployed code takes, so the shadow drives a waiting thread once per
answer shape (`answer_shapes`), each on its own copy of the thread. The first shape is the one that
lets the work go on as asked (approve, accept, the first option, the payload's own example); the
others follow in a fixed order. Pure: no I/O.

The shapes come from, in this order of precedence:

* LangChain 1.x ``HumanInTheLoopMiddleware``, batched (``{"action_requests", "review_configs"}``, resumed
  with ``{"decisions": [...]}``): one shape per decision type, each action given that type where its
  review config allows it (else the first it allows);
* its per-call mode (``{"type": "tool_approval", "name", "args"}`` with a ``response_schema`` listing the
  decision types allowed): one decision per allowed type;
* an Agent Inbox request list (``[{"action_request", "config", "description"}]``): one response list per
  allowed response type;
* this repo's typed approvals (``resume_format`` with ``kind`` and ``options``): the example first,
  then ``{"kind", "answer"}`` for every other option;
* ``kind`` and ``options``: ``{"kind", "answer"}`` per option; ``options`` alone: each option;
* a ``response_schema`` (JSON Schema, as LangGraph surfaces it on the interrupt) and nothing above: one
  instance per alternative of the schema (``anyOf``/``oneOf`` branches, ``enum`` values), built from
  ``const``, ``enum``, ``default``, ``examples`` and the declared types.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

ShapeSource = Literal[
    "resume_format", "review_configs", "tool_approval", "agent_inbox", "kind+options", "options", "response_schema"
]
"""Which rule of the question's payload gave an answer shape."""

MAX_SHAPES = 5
"""Answer shapes driven per question (the first and at most four others)."""

REJECT_TEXT = "rejected by the shadow proof"
RESPOND_TEXT = "answered by the shadow proof"


@dataclass(frozen=True)
class Shape:
    """One answer a client may send: a label (``approve``, ``option 'reject'``), the value, its source."""

    label: str
    value: Any
    source: ShapeSource


def answer_shapes(payload: Any, schema: Any = None) -> list[Shape]:
    """Every answer shape the question (its payload, and its ``response_schema`` when the server gives one)
    allows, the one that lets the work go on first; empty when the question says none."""
    found = _from_payload(payload, schema)
    if not found and isinstance(schema, Mapping):
        found = [Shape(f"schema {label}", value, "response_schema") for label, value in schema_instances(schema)]
    unique: list[Shape] = []
    for shape in found:
        if all(shape.value != seen.value for seen in unique):
            unique.append(shape)
    return unique[:MAX_SHAPES]


def _from_payload(payload: Any, schema: Any) -> list[Shape]:
    inbox = inbox_shapes(payload)
    if inbox:
        return inbox
    if not isinstance(payload, Mapping):
        return []
    hitl = hitl_shapes(payload)
    if hitl:
        return hitl
    per_call = tool_approval_shapes(payload, schema)
    if per_call:
        return per_call
    options = payload.get("options")
    kind = payload.get("kind")
    shapes: list[Shape] = []
    example = payload.get("resume_format")
    if example is not None:
        shapes.append(Shape("its resume_format", example, "resume_format"))
    if isinstance(options, list):
        for option in options:
            if isinstance(kind, str):
                shapes.append(Shape(f"option {option!r}", {"kind": kind, "answer": option}, "kind+options"))
            else:
                shapes.append(Shape(f"option {option!r}", option, "options"))
    if example is not None:
        shapes = [shapes[0], *(s for s in shapes[1:] if s.value != example)]
        return [Shape(s.label, s.value, "resume_format") for s in shapes]
    return shapes


HITL_ORDER = ("approve", "edit", "reject", "respond")
"""Decision types in the order they are tried: the first lets the action go on as asked."""


def _decision(kind: str, name: str, args: Any) -> dict[str, Any]:
    if kind == "approve":
        return {"type": "approve"}
    if kind == "edit":
        return {"type": "edit", "edited_action": {"name": name, "args": args if isinstance(args, Mapping) else {}}}
    if kind == "reject":
        return {"type": "reject", "message": REJECT_TEXT}
    return {"type": "respond", "message": RESPOND_TEXT}


def hitl_shapes(payload: Mapping[str, Any]) -> list[Shape]:
    """``{"decisions": [...]}`` per decision type of a batched ``HumanInTheLoopMiddleware`` request: each action
    given that type where its review config allows it, else the first type it allows."""
    actions, configs = payload.get("action_requests"), payload.get("review_configs")
    if not isinstance(actions, list) or not actions or not isinstance(configs, list):
        return []
    allowed: dict[str, list[str]] = {}
    for config in configs:
        if isinstance(config, Mapping):
            allowed[str(config.get("action_name"))] = [str(d) for d in config.get("allowed_decisions") or []]
    if not all(isinstance(a, Mapping) for a in actions):
        return []
    per_action = []
    for action in actions:
        kinds = [k for k in HITL_ORDER if k in allowed.get(str(action.get("name")), list(HITL_ORDER))]
        if not kinds:
            return []
        per_action.append(kinds)
    shapes = []
    for kind in HITL_ORDER:
        if not any(kind in kinds for kinds in per_action):
            continue
        decisions = [
            _decision(kind if kind in kinds else kinds[0], str(a.get("name")), a.get("args"))
            for a, kinds in zip(actions, per_action, strict=True)
        ]
        shapes.append(Shape(kind, {"decisions": decisions}, "review_configs"))
    return shapes


def tool_approval_shapes(payload: Mapping[str, Any], schema: Any) -> list[Shape]:
    """One decision per type a per-call ``HumanInTheLoopMiddleware`` approval allows (its ``response_schema``
    names them; without one, every type)."""
    if payload.get("type") != "tool_approval" or "name" not in payload:
        return []
    allowed = _decision_types(schema) or list(HITL_ORDER)
    name, args = str(payload.get("name")), payload.get("args")
    return [Shape(kind, _decision(kind, name, args), "tool_approval") for kind in HITL_ORDER if kind in allowed]


def _decision_types(schema: Any) -> list[str]:
    """The ``type`` constants of a decision schema's alternatives."""
    if not isinstance(schema, Mapping):
        return []
    defs = _defs(schema)
    found = []
    for branch in _branches(schema, defs):
        kind = _resolve(branch, defs).get("properties", {}).get("type", {})
        kind = _resolve(kind, defs) if isinstance(kind, Mapping) else {}
        for value in [kind.get("const"), *(kind.get("enum") or [])]:
            if isinstance(value, str) and value not in found:
                found.append(value)
    return found


INBOX_ORDER = (("allow_accept", "accept"), ("allow_edit", "edit"), ("allow_respond", "response"), ("allow_ignore", "ignore"))
"""Agent Inbox response types in the order they are tried, and the config flag that allows each."""


def _inbox_response(kind: str, action: Mapping[str, Any]) -> dict[str, Any]:
    if kind in ("accept", "edit"):
        return {"type": kind, "args": {"action": action.get("action"), "args": action.get("args") or {}}}
    if kind == "response":
        return {"type": "response", "args": "ok"}
    return {"type": "ignore", "args": None}


def inbox_shapes(payload: Any) -> list[Shape]:
    """A response list per response type an Agent Inbox interrupt (``[{"action_request": {"action", "args"},
    "config": {"allow_accept", ...}, "description"}]``) allows: each request given that type where its config
    allows it, else the first type it allows."""
    if not isinstance(payload, list) or not payload:
        return []
    per_request: list[tuple[Mapping[str, Any], list[str]]] = []
    for request in payload:
        if not isinstance(request, Mapping) or not isinstance(request.get("action_request"), Mapping):
            return []
        given = request.get("config")
        config: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
        kinds = [kind for flag, kind in INBOX_ORDER if config.get(flag)]
        if not kinds:
            return []
        per_request.append((request["action_request"], kinds))
    shapes = []
    for _, kind in INBOX_ORDER:
        if any(kind in kinds for _, kinds in per_request):
            value = [_inbox_response(kind if kind in kinds else kinds[0], action) for action, kinds in per_request]
            shapes.append(Shape(kind, value, "agent_inbox"))
    return shapes


# -- JSON Schema instances ---------------------------------------------------------------------

SCALARS: dict[str, Any] = {"string": "ok", "integer": 0, "number": 0, "boolean": True, "null": None}


def schema_instances(schema: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """One (label, instance) per alternative of ``schema``: each ``anyOf``/``oneOf`` branch, each ``enum``
    value; an instance holds every required property. Empty when no instance can be built (a ``$ref`` to
    nowhere, a ``not``)."""
    defs = _defs(schema)
    found: list[tuple[str, Any]] = []
    for index, branch in enumerate(_branches(schema, defs)):
        resolved = _resolve(branch, defs)
        enum = resolved.get("enum")
        values = list(enum) if isinstance(enum, list) and enum else [_instance(resolved, defs, 0)]
        for value in values:
            if value is _NONE:
                continue
            found.append((_label(resolved, value, index), value))
    return found


class _Missing:
    pass


_NONE: Any = _Missing()


def _defs(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    found = schema.get("$defs") or schema.get("definitions") or {}
    return found if isinstance(found, Mapping) else {}


def _resolve(node: Mapping[str, Any], defs: Mapping[str, Any], depth: int = 0) -> Mapping[str, Any]:
    ref = node.get("$ref")
    if isinstance(ref, str) and depth < 20:
        target = defs.get(ref.rsplit("/", 1)[-1])
        if isinstance(target, Mapping):
            return _resolve({**target, **{k: v for k, v in node.items() if k != "$ref"}}, defs, depth + 1)
        return {"not": {}}
    return node


def _branches(schema: Mapping[str, Any], defs: Mapping[str, Any], depth: int = 0) -> list[Mapping[str, Any]]:
    """The alternatives of a schema, nested unions flattened (``allOf`` of one is the one)."""
    node = _resolve(schema, defs)
    for key in ("anyOf", "oneOf"):
        options = node.get(key)
        if isinstance(options, list) and options and depth < 10:
            rest = {k: v for k, v in node.items() if k != key}
            return [b for o in options if isinstance(o, Mapping) for b in _branches({**rest, **o}, defs, depth + 1)]
    all_of = node.get("allOf")
    if isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], Mapping):
        rest = {k: v for k, v in node.items() if k != "allOf"}
        return _branches({**rest, **all_of[0]}, defs, depth + 1)
    return [node]


def _instance(node: Mapping[str, Any], defs: Mapping[str, Any], depth: int) -> Any:
    node = _resolve(node, defs)
    if depth > 12 or "not" in node:
        return _NONE
    for key in ("const", "default"):
        if key in node:
            return node[key]
    for key in ("enum", "examples"):
        values = node.get(key)
        if isinstance(values, list) and values:
            return values[0]
    branches = _branches(node, defs)
    if len(branches) > 1 or branches[0] is not node:
        for branch in branches:
            value = _instance(branch, defs, depth + 1)
            if value is not _NONE:
                return value
        return _NONE
    kind = node.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), kind[0] if kind else None)
    if kind == "object" or (kind is None and "properties" in node):
        properties = node.get("properties") or {}
        built: dict[str, Any] = {}
        for name in node.get("required") or []:
            value = _instance(properties.get(name) or {}, defs, depth + 1) if isinstance(properties, Mapping) else "ok"
            if value is _NONE:
                return _NONE
            built[str(name)] = value
        return built
    if kind == "array":
        items = node.get("items")
        least = node.get("minItems") or 0
        if not least:
            return []
        value = _instance(items if isinstance(items, Mapping) else {}, defs, depth + 1)
        return _NONE if value is _NONE else [value] * int(least)
    if kind == "string":
        least = int(node.get("minLength") or 0)
        return "ok" if least <= 2 else "o" * least
    if kind in ("integer", "number"):
        low = node.get("minimum", node.get("exclusiveMinimum"))
        return (low + (1 if "exclusiveMinimum" in node and "minimum" not in node else 0)) if isinstance(low, int | float) else 0
    if isinstance(kind, str) and kind in SCALARS:
        return SCALARS[kind]
    return "ok" if kind is None else _NONE


def _label(node: Mapping[str, Any], value: Any, index: int) -> str:
    if isinstance(value, Mapping) and isinstance(value.get("type"), str):
        return repr(value["type"])
    title = node.get("title")
    if isinstance(value, str | int | float | bool):
        return repr(value)
    return str(title) if isinstance(title, str) else f"alternative {index + 1}"


def first_shape(payload: Any, schema: Any = None) -> Shape | None:
    """The answer that lets the work go on as asked, or None when the question says none."""
    shapes = answer_shapes(payload, schema)
    return shapes[0] if shapes else None


def labels(shapes: Sequence[Shape]) -> str:
    return ", ".join(s.label for s in shapes)
