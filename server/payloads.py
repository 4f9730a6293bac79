"""What a request may write into a thread: messages, state values, ``Command`` fields.

Agent Server writes whatever a client sends into the checkpoint and finds out
later: ``command.update = {"messages": 5}`` fails the run with a
NotImplementedError *after* the write, and from then on every ``get_state``,
``get_history`` and run of the thread answers 500. A tool message without a
``tool_call_id`` or a content block the message classes reject does the same. So
every door that writes a thread applies the same checks first, and a refused
request changes nothing:

* run input, ``command.update``, ``command.goto`` and ``command.resume``: the
  run-creation handler (`server/serving.py`, called from
  `server/auth.py`);
* ``POST /threads/{id}/state`` (``update_state``), whose auth event carries
  only the thread id, and ``POST /threads`` with ``supersteps`` (a new thread's
  history, written as state updates): the middleware of
  `server/payload_middleware.py`.

Rules (each refusal is a `Refused` with the HTTP status and a message that says
what to send instead):

* a message is a string (a human message) or an object with a ``role`` (or
  ``type``) and ``content``; content is text: a string, or a list of strings and
  ``{"type": "text", "text": ...}`` blocks (other blocks, e.g. ``image_url``,
  are refused: this deployment serves text); a ``tool`` message names its
  ``tool_call_id``; an ``id`` is a string; and the message must convert to a
  LangChain message (`langchain_core.messages.convert_to_messages`), so that
  nothing the reducer cannot take is stored: 422;
* a message's text is at most ``message_chars`` characters, and a request's
  messages together at most ``request_chars`` characters and
  ``request_messages`` messages: 413;
* state values (``update_state`` values, ``command.update``, a ``Send``'s input)
  name only fields of the graph's state, and each value has the field's type
  (pydantic, strict; a ``{"__overwrite__": value}`` wrapper is unwrapped): 422;
* ``command.goto`` and ``as_node`` name nodes the graph has: 422;
* a resume of a thread that waits for nothing: 409.

Everything here is pure: it gets the graph's shape (`GraphShape`) and the limits
(`Limits`) from its caller; only `limits` reads the environment, when given none.
"""

from __future__ import annotations

import os
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from langchain_core.messages import convert_to_messages
from pydantic import TypeAdapter, ValidationError

MESSAGE_ROLES = frozenset({"user", "human", "assistant", "ai", "system", "tool", "function", "developer"})
"""Roles (or types) `add_messages` understands in a message dict."""

REMOVE_TYPE = "remove"
"""A `RemoveMessage` (``{"type": "remove", "id": ...}``): accepted in state updates, not in run input."""

TEXT_BLOCK = {"type": "text", "text": "..."}
"""The one content block served here."""

OVERWRITE_KEY = "__overwrite__"
"""``{"__overwrite__": value}`` replaces a reducer channel's value instead of adding to it."""

SPECIAL_AS_NODES = frozenset({"__copy__", "__input__", "__start__"})
"""``as_node`` values LangGraph itself understands besides the graph's nodes."""

END_NODE = "__end__"

MAX_REQUEST_CHARS_ENV = "MAX_REQUEST_CHARS"
DEFAULT_MAX_REQUEST_CHARS = 32_000
"""Most message text one request may write, all messages together (characters); more is a 413."""

MAX_REQUEST_MESSAGES_ENV = "MAX_REQUEST_MESSAGES"
DEFAULT_MAX_REQUEST_MESSAGES = 100
"""Most messages one request may write; more is a 413."""


class Refused(Exception):
    """A payload refused before anything is written: HTTP ``status`` with ``message``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True, kw_only=True)
class Limits:
    """How much text a message, and one request, may carry."""

    message_chars: int
    """Longest text of one message (``MAX_MESSAGE_CHARS``)."""
    request_chars: int = DEFAULT_MAX_REQUEST_CHARS
    """Most text of all messages of one request together (``MAX_REQUEST_CHARS``)."""
    request_messages: int = DEFAULT_MAX_REQUEST_MESSAGES
    """Most messages in one request (``MAX_REQUEST_MESSAGES``)."""


def _positive_int(environ: Mapping[str, str], name: str, default: int) -> int:
    raw = environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{name} must be a positive integer, got {raw!r}") from None
    if value <= 0:
        raise ValueError(f"{name} must be a positive integer, got {raw!r}")
    return value


def limits(message_chars: int, environ: Mapping[str, str] | None = None) -> Limits:
    """The limits, with ``$MAX_REQUEST_CHARS`` and ``$MAX_REQUEST_MESSAGES`` or their defaults."""
    env = os.environ if environ is None else environ
    return Limits(
        message_chars=message_chars,
        request_chars=_positive_int(env, MAX_REQUEST_CHARS_ENV, DEFAULT_MAX_REQUEST_CHARS),
        request_messages=_positive_int(env, MAX_REQUEST_MESSAGES_ENV, DEFAULT_MAX_REQUEST_MESSAGES),
    )


# -- the graph's shape ------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class GraphShape:
    """What a graph's state and wiring accept: its nodes, and its state fields' types."""

    graph_id: str
    nodes: frozenset[str]
    fields: Mapping[str, Any]
    """State key -> its annotation (``NotRequired`` and ``Annotated`` reducers included)."""
    message_keys: frozenset[str] = field(default=frozenset({"messages"}))
    """Keys holding a message list (checked as messages, not by type)."""

    @classmethod
    def from_builder(cls, graph_id: str, builder: Any) -> GraphShape:
        """The shape of a `StateGraph` builder (its state schema and nodes)."""
        return _shape(graph_id, builder)


@cache
def _shape(graph_id: str, builder: Any) -> GraphShape:
    hints = typing.get_type_hints(builder.state_schema, include_extras=True)
    return GraphShape(graph_id=graph_id, nodes=frozenset(builder.nodes), fields=hints)


def _bare(annotation: Any) -> Any:
    """The type without ``NotRequired``/``Required`` (a TypedDict key marker pydantic refuses alone)."""
    while typing.get_origin(annotation) in (typing.NotRequired, typing.Required):
        (annotation,) = typing.get_args(annotation)
    return annotation


def _build_adapter(annotation: Any) -> TypeAdapter[Any] | None:
    try:
        return TypeAdapter(_bare(annotation))
    except Exception:  # noqa: BLE001 - a type pydantic cannot check is not checked; the key still is
        return None


_cached_adapter = cache(_build_adapter)


def _adapter(annotation: Any) -> TypeAdapter[Any] | None:
    """The validator of a field's type (built once per annotation; None: not checkable)."""
    try:
        return _cached_adapter(annotation)
    except TypeError:  # an annotation that cannot be a cache key (unhashable metadata)
        return _build_adapter(annotation)


# -- messages ---------------------------------------------------------------------------


def _text_length(content: Any) -> int:
    if isinstance(content, str):
        return len(content)
    return sum(len(b) if isinstance(b, str) else len(b["text"]) for b in content)


def _check_content(where: str, content: Any) -> None:
    if isinstance(content, str):
        return
    if not isinstance(content, list):
        raise Refused(422, f"{where}.content must be a string or a list of content blocks, got {type(content).__name__}")
    for index, block in enumerate(content):
        if isinstance(block, str):
            continue
        if isinstance(block, Mapping) and block.get("type") == "text" and isinstance(block.get("text"), str):
            continue
        kind = block.get("type") if isinstance(block, Mapping) else type(block).__name__
        raise Refused(
            422,
            f"{where}.content[{index}] is not text ({kind!r}); this deployment serves text only: send a string "
            f"or {TEXT_BLOCK} blocks (put a link to an image or file in the text).",
        )


def check_message(where: str, message: Any, limit: int, *, update: bool = False) -> int:
    """Refuse a message the graph cannot store; return its text length.

    ``update``: the message comes from a state update, where a `RemoveMessage`
    (``{"type": "remove", "id": ..., "content": ""}``) is allowed.
    """
    if isinstance(message, str):
        content: Any = message
    elif isinstance(message, Mapping):
        role = message.get("role", message.get("type"))
        if update and role == REMOVE_TYPE:
            if not isinstance(message.get("id"), str):
                raise Refused(422, f"{where} removes a message: it needs the 'id' (a string) of the message to remove")
        elif not isinstance(role, str) or role not in MESSAGE_ROLES:
            raise Refused(422, f"{where} needs a 'role' (user, assistant, ...), got {role!r}")
        if "content" not in message:
            raise Refused(422, f"{where} has no 'content'; send its text as 'content' ('' for a removal)")
        content = message["content"]
        _check_content(where, content)
        if role == "tool" and not isinstance(message.get("tool_call_id"), str):
            raise Refused(422, f"{where} is a tool message: it needs 'tool_call_id', the id of the tool call it answers")
        if "id" in message and message["id"] is not None and not isinstance(message["id"], str):
            raise Refused(422, f"{where}.id must be a string, got {type(message['id']).__name__}")
    else:
        raise Refused(
            422,
            f"{where} must be a message object like {{'role': 'user', 'content': '...'}}, got {type(message).__name__}",
        )
    try:
        convert_to_messages([dict(message) if isinstance(message, Mapping) else message])
    except Exception as exc:  # noqa: BLE001 - any failure to build the message is the client's input
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise Refused(422, f"{where} is not a valid message ({type(exc).__name__}: {reason}); fix it and send it again") from None
    length = _text_length(content)
    if length > limit:
        raise Refused(
            413,
            f"{where} has {length} characters; the limit is {limit} (MAX_MESSAGE_CHARS). "
            "Split the text or send a file reference.",
        )
    return length


def check_messages(where: str, messages: Any, limits: Limits, *, update: bool = False) -> tuple[int, int]:
    """Refuse a message list (``where`` names it); return (messages, characters) it carries.

    Run input needs at least one message; a state update may send none.
    """
    if not isinstance(messages, list):
        raise Refused(
            422,
            f"{where} must be a list of messages, got {type(messages).__name__}; "
            "send e.g. [{'role': 'user', 'content': '...'}]",
        )
    if not messages and not update:
        raise Refused(422, f"{where} is empty: send at least one message")
    chars = sum(
        check_message(f"{where}[{index}]", message, limits.message_chars, update=update) for index, message in enumerate(messages)
    )
    count = (len(messages), chars)
    check_request_size(*count, limits)
    return count


def check_request_size(messages: int, chars: int, limits: Limits) -> None:
    """Refuse a request whose messages together exceed the per-request bounds (413)."""
    if messages > limits.request_messages:
        raise Refused(
            413,
            f"this request carries {messages} messages; one request may write at most {limits.request_messages} "
            "(MAX_REQUEST_MESSAGES). Send them in several requests.",
        )
    if chars > limits.request_chars:
        raise Refused(
            413,
            f"this request carries {chars} characters of message text; one request may write at most "
            f"{limits.request_chars} (MAX_REQUEST_CHARS). Send the messages in several requests.",
        )


# -- state values -----------------------------------------------------------------------


def _pairs(where: str, values: Any, *, pairs_allowed: bool) -> list[tuple[str, Any]]:
    if isinstance(values, Mapping):
        return [(str(k), v) for k, v in values.items()]
    if (
        pairs_allowed
        and isinstance(values, list)
        and all(isinstance(p, (list, tuple)) and len(p) == 2 and isinstance(p[0], str) for p in values)
    ):
        return [(p[0], p[1]) for p in values]
    shape = "an object like {'messages': [...]}" + (" or a list of [key, value] pairs" if pairs_allowed else "")
    raise Refused(422, f"{where} must be {shape}, got {type(values).__name__}")


def check_values(where: str, values: Any, shape: GraphShape, limits: Limits, *, pairs_allowed: bool = False) -> tuple[int, int]:
    """Refuse state values ``shape``'s graph cannot store; return (messages, characters) they carry."""
    pairs = _pairs(where, values, pairs_allowed=pairs_allowed)
    unknown = sorted({key for key, _ in pairs} - set(shape.fields))
    if unknown:
        raise Refused(
            422,
            f"{where} has unknown field(s) {', '.join(unknown)}; the {shape.graph_id} state has: "
            f"{', '.join(sorted(shape.fields))}; send only those",
        )
    messages = chars = 0
    for key, value in pairs:
        if key in shape.message_keys:
            count, length = check_messages(f"{where}.{key}", value, limits, update=True)
            messages, chars = messages + count, chars + length
            check_request_size(messages, chars, limits)
            continue
        if isinstance(value, Mapping) and set(value) == {OVERWRITE_KEY}:
            value = value[OVERWRITE_KEY]
        adapter = _adapter(shape.fields[key])
        if adapter is None:
            continue
        try:
            adapter.validate_python(value, strict=True)
        except ValidationError as exc:
            first = exc.errors()[0]
            at = "".join(f"[{p!r}]" if isinstance(p, int) else f".{p}" for p in first.get("loc", ()))
            raise Refused(
                422,
                f"{where}.{key}{at}: {first.get('msg', 'invalid value')} (got {first.get('input')!r:.80}); "
                f"send a value of the field's type ({_bare(shape.fields[key])!r:.120})",
            ) from None
    return messages, chars


# -- Command ----------------------------------------------------------------------------


def _gotos(goto: Any) -> Iterable[Any]:
    return goto if isinstance(goto, list) else [goto]


def check_node(where: str, node: Any, shape: GraphShape, *, special: Iterable[str] = ()) -> None:
    """Refuse a node name the graph does not have (422)."""
    if isinstance(node, str) and (node in shape.nodes or node in special):
        return
    raise Refused(
        422,
        f"{where} names node {node!r}, which {shape.graph_id} does not have; its nodes are: {', '.join(sorted(shape.nodes))}",
    )


def check_command(
    command: Any, shape: GraphShape, limits: Limits, *, waits: bool | None, where: str = "command"
) -> tuple[int, int]:
    """Refuse a run ``command`` (``update``, ``goto``, ``resume``) before it is written;
    return (messages, characters) it carries.

    ``waits``: whether the thread waits for an answer (None: unknown, or the graph
    checks resumes itself); a resume of a thread that waits for nothing is a 409.
    """
    if command is None:
        return 0, 0
    if not isinstance(command, Mapping):
        raise Refused(422, f"{where} must be an object with update, goto and/or resume, got {type(command).__name__}")
    messages = chars = 0
    if command.get("update") is not None:
        messages, chars = check_values(f"{where}.update", command["update"], shape, limits, pairs_allowed=True)
    for index, target in enumerate(_gotos(command.get("goto")) if command.get("goto") is not None else ()):
        at = f"{where}.goto" if not isinstance(command["goto"], list) else f"{where}.goto[{index}]"
        if isinstance(target, Mapping):  # a Send: {"node": ..., "input": {...}}
            check_node(f"{at}.node", target.get("node"), shape)
            count, length = check_values(f"{at}.input", target.get("input"), shape, limits)
            messages, chars = messages + count, chars + length
            check_request_size(messages, chars, limits)
        else:
            check_node(at, target, shape, special=(END_NODE,))
    if "resume" in command and waits is False:
        raise Refused(
            409,
            f"this {shape.graph_id} thread is not waiting for an answer: there is nothing to resume. "
            "Send input={'messages': [...]} to start a new turn.",
        )
    return messages, chars


def check_state_update(values: Any, as_node: Any, shape: GraphShape, limits: Limits, *, where: str = "") -> tuple[int, int]:
    """Refuse an ``update_state`` (``values``, ``as_node``) before it is written; return
    (messages, characters) it carries. ``where`` prefixes the names in messages.

    ``values`` may be None (a checkpoint with no writes, e.g. ``as_node="__copy__"``).
    """
    prefix = f"{where}." if where else ""
    if as_node is not None:
        check_node(f"{prefix}as_node", as_node, shape, special=SPECIAL_AS_NODES)
    return check_values(f"{prefix}values", values, shape, limits) if values is not None else (0, 0)


def check_supersteps(supersteps: Any, shape: GraphShape, limits: Limits) -> None:
    """Refuse ``POST /threads`` ``supersteps`` (a new thread's history, written as state
    updates) that the graph cannot store; the bounds apply to all of them together."""
    if not isinstance(supersteps, list):
        raise Refused(422, f"supersteps must be a list of {{'updates': [...]}}, got {type(supersteps).__name__}")
    messages = chars = 0
    for step, superstep in enumerate(supersteps):
        updates = superstep.get("updates") if isinstance(superstep, Mapping) else None
        if not isinstance(updates, list):
            raise Refused(422, f"supersteps[{step}] must be {{'updates': [{{'values': ..., 'as_node': ...}}]}}")
        for index, update in enumerate(updates):
            where = f"supersteps[{step}].updates[{index}]"
            if not isinstance(update, Mapping):
                raise Refused(422, f"{where} must be an object like {{'values': {{...}}, 'as_node': '...'}}")
            if update.get("command"):
                count, length = check_command(update["command"], shape, limits, waits=None, where=f"{where}.command")
            else:
                count, length = check_state_update(update.get("values"), update.get("as_node"), shape, limits, where=where)
            messages, chars = messages + count, chars + length
            check_request_size(messages, chars, limits)
