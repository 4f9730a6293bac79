"""How chat graphs store their message history: a `DeltaChannel` over `add_messages`.

With the usual ``Annotated[list[AnyMessage], add_messages]`` the checkpointer
writes the whole list again at every step that touches it, so a thread's
storage grows with the square of its length. A `DeltaChannel` stores only each
step's new writes and, every `SNAPSHOT_FREQUENCY` updates, one full snapshot;
readers rebuild the list from the nearest snapshot plus the writes after it.
Growth becomes linear, and reads replay at most `SNAPSHOT_FREQUENCY` writes.

Measured on `langgraph dev` 0.16.7 (in-memory runtime, langgraph 1.2.24): state,
history, `threads.copy` and a server restart (pickled persistence) all return
the same messages, with the same ids, as `add_messages` did; replace-by-id
works, because the batch reducer below folds `add_messages` one write at a time.
See graphs/recycling_guide/README.md for the figures and the caveats
(`DeltaChannel` is beta; never prune these threads with ``keep_latest``).
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable, Sequence
from functools import reduce
from typing import Annotated, Any, cast, get_args

from langchain_core.messages import AnyMessage, BaseMessage, RemoveMessage, convert_to_messages
from langgraph.channels import DeltaChannel
from langgraph.graph.message import add_messages

SNAPSHOT_FREQUENCY = 30
"""Every 30th update of the channel writes a full snapshot (about every 10 to 15
chat turns: a turn writes the human message and one or two AI writes)."""


_MESSAGE_TYPES: dict[str, type[BaseMessage]] = {
    cls.model_fields["type"].default: cls
    for cls in (
        *(get_args(member)[0] for member in get_args(get_args(AnyMessage)[0])),
        RemoveMessage,
    )
}
"""Message class per serialized ``type`` (``ai``, ``human``, ``tool``, ``remove``, ...)."""


def _revive(value: Any) -> Any:
    """A message in its dumped form (a dict with ``type``), as the message it was.

    Agent Server reads state for its API with a JSON-only unpack hook, so the
    writes replayed here arrive as ``model_dump()`` dicts. `add_messages` would
    turn them back through `convert_to_messages`, which moves fields it does not
    know (``invalid_tool_calls``, ``usage_metadata``) into ``additional_kwargs``;
    validating the dump against its own class restores the message exactly.
    """
    if isinstance(value, list):
        return [_revive(item) for item in value]
    if isinstance(value, dict) and value.get("type") in _MESSAGE_TYPES and "content" in value:
        return _MESSAGE_TYPES[value["type"]].model_validate(value)
    return value


def _stable_ids(state: Sequence[BaseMessage], write: Any) -> Any:
    """``write`` with an id on every message that has none, derived from the state it
    is added to and its place in the write.

    `DeltaChannel` stores the writes themselves and replays them on every read. A
    message written without an id (input ``{"messages": ["plain string"]}``, a dict
    without ``id``) would get a new random id from `add_messages` at each replay:
    three reads, three ids. Derived ids are the same at every replay, and unique: a
    message added to the same list of ids at the same place is that message.
    """
    items = write if isinstance(write, list) else [write]
    if all(isinstance(item, BaseMessage) and item.id for item in items):
        return write
    base = hashlib.sha256("\n".join(str(message.id) for message in state).encode()).hexdigest()
    stamped = []
    for index, message in enumerate(convert_to_messages(items)):
        if not message.id:
            message = message.model_copy(update={"id": str(uuid.uuid5(_ID_NAMESPACE, f"{base}:{index}"))})
        stamped.append(message)
    return stamped


_ID_NAMESPACE = uuid.UUID("0b6f9d1e-5f43-4c3e-9a8e-6d1f2f6c2a10")
"""Namespace of the derived message ids (any fixed UUID; changing it changes stored threads' ids)."""


def _add_one(state: list[AnyMessage], write: Any) -> list[AnyMessage]:
    # langgraph types add_messages over the invariant list[MessageLikeRepresentation] both ways;
    # it takes any list of messages and returns the merged list of messages
    merge = cast(Callable[[list[AnyMessage], Any], list[AnyMessage]], add_messages)
    return merge(state, _stable_ids(state, write))


def add_messages_batch(state: list[AnyMessage], writes: Sequence[Any]) -> list[AnyMessage]:
    """`add_messages` over a batch of writes, oldest first, with stable ids (`_stable_ids`).

    Folding one write at a time makes the reducer batching-invariant, as
    `DeltaChannel` requires: ``f(f(s, xs), ys) == f(s, xs + ys)``.
    """
    return reduce(_add_one, (_revive(write) for write in writes), _revive(state))


MessageHistory = Annotated[
    list[AnyMessage],
    DeltaChannel(add_messages_batch, snapshot_frequency=SNAPSHOT_FREQUENCY),
]
"""The type of a chat graph's ``messages`` field (same semantics as ``add_messages``)."""
