"""State of the fan-room graph.

Compatibility rules (migrations_playbook/docs/rules.md): fields are only ever
added as `NotRequired`; a field is removed only after a drain and a record.

No `from __future__ import annotations` here: with string annotations
`TypedDict` cannot see `NotRequired`, and every field would count as required.
"""

from typing import NotRequired

from typing_extensions import TypedDict

from graphs.common.history import MessageHistory

CURRENT_FLOW_VERSION = 1
"""The flow new threads are stamped with: intake -> draft -> tone -> attribute."""


class FanRoomInput(TypedDict):
    """What a run accepts (the team comes from the context, not the input)."""

    messages: MessageHistory
    """The user's message for this turn."""


class FanRoomOutput(TypedDict):
    """What a run returns (`runs.wait`, the final `values` event): tag-free."""

    answer: NotRequired[str]
    """This turn's answer as the user sees it, without a speaker tag."""
    speaker: NotRequired[str]
    """The team whose fan answered (canonical name, e.g. ``"삼성"``)."""
    answer_id: NotRequired[str]
    """Id of the stored AIMessage holding this answer (its tagged version)."""


class FanRoomState(TypedDict):
    """Full state. Every field but `messages` is NotRequired so that any old
    checkpoint still validates (additive changes only)."""

    messages: MessageHistory
    """The room's conversation: human messages (input) and one AIMessage per turn,
    written untagged by `tone` and replaced, same id, by its tagged version
    (``[<team> 팬] ...``) by `attribute`. Reducer: `add_messages` folded in a
    `DeltaChannel` (graphs/common/history.py). Since v1."""

    flow_version: NotRequired[int]
    """Behavioural version the thread started under. Stamped by `intake` only when
    absent. Since v1."""

    speaker: NotRequired[str]
    """Canonical team whose fan answers the current turn, from the run's context.
    Written by `intake` every turn (last value). Since v1."""

    draft: NotRequired[str]
    """The persona model's raw answer for the current turn, exactly as written (it
    may start with tags copied from the history). Written by `draft`, last value;
    never streamed. Since v1."""

    answer: NotRequired[str]
    """The current turn's final answer without any tag (after the tone step).
    Written by `tone`, last value. Since v1."""

    answer_id: NotRequired[str]
    """Id of the AIMessage `tone` wrote; `attribute` replaces that message by id.
    Written by `tone`, last value. Since v1."""
