"""State of the recycling-guide graph.

Compatibility rules (migrations_playbook/docs/rules.md): fields are only ever
added as `NotRequired`; a field is removed only after a drain and a record.

No `from __future__ import annotations` here: with string annotations
`TypedDict` cannot see `NotRequired`, and every field would count as required.
"""

import operator
from typing import Annotated, Literal, NotRequired

from typing_extensions import TypedDict

from graphs.common.history import MessageHistory

CURRENT_FLOW_VERSION = 1
"""The flow new threads are stamped with: intake -> classify -> lookup|recap|chat -> compose."""

Intent = Literal["waste", "summary", "general"]
"""What a turn asks for: how to throw something away, a recap of the conversation, anything else."""


class Analysis(TypedDict):
    """What `classify` read from the latest message alone (no context yet)."""

    intent: Intent
    """The turn's intent."""
    item: str
    """Item id the message names, or ``"none"``."""
    part: str
    """``body``, ``label`` or ``cap``."""


class GuideInput(TypedDict):
    """What a run accepts."""

    messages: MessageHistory
    """The user's message for this turn."""


class GuideState(TypedDict):
    """Full state. Every field but `messages` is NotRequired so that any old
    checkpoint still validates (additive changes only)."""

    messages: MessageHistory
    """Conversation: the user's messages (input) and one AIMessage per turn (written
    by `compose`). Reducer: `add_messages` folded in a `DeltaChannel`
    (graphs/common/history.py). Since v1."""

    flow_version: NotRequired[int]
    """Behavioural version the thread started under. Stamped by `intake` only when
    absent. Since v1."""

    turn: NotRequired[int]
    """Number of the current turn, 1 for the first. Written by `intake` (last value);
    carried in every progress event. Since v1."""

    analysis: NotRequired[Analysis]
    """The latest message's intent, item and part. Written by `classify` every turn
    (last value). Since v1."""

    intent_history: NotRequired[Annotated[list[str], operator.add]]
    """One intent label per turn, oldest first. `classify` appends exactly one entry
    per turn. Reducer: `operator.add`. Since v1."""

    topic: NotRequired[str]
    """Item id under discussion, so that follow-ups ("라벨은?") know what they are
    about. Written by `lookup` when a turn resolves an item (last value). Since v1."""

    covered: NotRequired[Annotated[list[str], operator.add]]
    """Rule ids answered so far (``pet_bottle``, ``pet_bottle.label``, ...), read by
    `recap`. `lookup` appends one per answered waste turn. Reducer: `operator.add`.
    Since v1."""

    facts: NotRequired[list[str]]
    """The facts the current turn's answer is written from, in the user's language.
    Written by `lookup`, `recap` or `chat` (last value), read by `compose`. Since v1."""

    answer: NotRequired[str]
    """The current turn's answer text (also appended to `messages`). Written by
    `compose` (last value). Since v1."""


class GuideOutput(TypedDict):
    """What a run returns (`output_schema`): the keys clients read from a run's output and its
    `values` stream events, nothing else. On Agent Server (langgraph-api 0.16.7, checked on a real
    server) `runs.wait`'s output and every `stream_mode="values"` event hold these keys only;
    the thread record's `values`, `threads.get_state`, `threads.search` and `get_history` still
    hold the whole `GuideState` (so `playbook` keeps reading `flow_version` there). Every key but
    `messages` is NotRequired, as in `GuideState`."""

    messages: MessageHistory
    """The conversation: the user's messages and one answer per turn (what chat clients and
    Studio render from `values` events). Since v1."""

    answer: NotRequired[str]
    """This turn's answer text, the same text as the last message and the `answer` custom
    event. Since v1."""

    topic: NotRequired[str]
    """The item the conversation is about: what a follow-up ("라벨은?") was read as. Since v1."""

    intent_history: NotRequired[Annotated[list[str], operator.add]]
    """One intent per turn, oldest first. Reducer: `operator.add` (the state's channel). Since v1."""
