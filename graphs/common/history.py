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

from collections.abc import Sequence
from functools import reduce
from typing import Annotated, Any, get_args

from langchain_core.messages import AnyMessage, BaseMessage, RemoveMessage
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


def add_messages_batch(state: list[AnyMessage], writes: Sequence[Any]) -> list[AnyMessage]:
    """`add_messages` over a batch of writes, oldest first.

    Folding one write at a time makes the reducer batching-invariant, as
    `DeltaChannel` requires: ``f(f(s, xs), ys) == f(s, xs + ys)``.
    """
    return reduce(add_messages, (_revive(write) for write in writes), _revive(state))


MessageHistory = Annotated[
    list[AnyMessage],
    DeltaChannel(add_messages_batch, snapshot_frequency=SNAPSHOT_FREQUENCY),
]
"""The type of a chat graph's ``messages`` field (same semantics as ``add_messages``)."""
