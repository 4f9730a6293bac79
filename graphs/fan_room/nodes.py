"""Nodes of the fan-room graph: intake -> draft -> tone -> attribute.

Only `tone`'s model call reaches a `stream_mode="messages"` client: the draft is
written with the ``nostream`` tag (it may carry tags the model copied from the
tagged history), and `attribute` replaces the stored message by id, which the
messages stream de-duplicates. So the streamed text never has a tag, while the
checkpoint keeps one per AI message.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langgraph.constants import TAG_NOSTREAM
from langgraph.runtime import Runtime

from graphs.common.context import model_spec
from graphs.common.messages import detect_language, message_text, require_human_text
from graphs.common.models import load_chat_model
from graphs.fan_room.context import FanRoomContext, team_of
from graphs.fan_room.prompts import persona_prompt, tone_prompt
from graphs.fan_room.state import CURRENT_FLOW_VERSION, FanRoomState
from graphs.fan_room.teams import other_speakers, strip_speaker_tags, tagged


def _user_text(state: FanRoomState) -> str:
    return require_human_text(state.get("messages") or [], "fan_room")


def intake(state: FanRoomState, runtime: Runtime[FanRoomContext]) -> dict[str, Any]:
    """Check the turn (a team, a user message) and stamp new threads.

    The context is validated when the run starts; this re-check covers runs
    started without any context (then the input is already stored).
    """
    team = team_of(runtime.context)
    _user_text(state)
    return {"flow_version": state.get("flow_version", CURRENT_FLOW_VERSION), "speaker": team}


def draft(state: FanRoomState, runtime: Runtime[FanRoomContext]) -> dict[str, Any]:
    """The persona's answer, from the tagged history, kept out of the token stream."""
    team = state["speaker"]
    system = persona_prompt(team, detect_language(_user_text(state)), other_speakers(state["messages"], team))
    model = load_chat_model(model_spec(runtime.context)).with_config(tags=[TAG_NOSTREAM])
    reply = model.invoke([SystemMessage(system), *state["messages"]])
    return {"draft": message_text(reply)}


def tone(state: FanRoomState, runtime: Runtime[FanRoomContext]) -> dict[str, Any]:
    """Rewrite the (tag-stripped) draft in the fan's voice; this is the streamed answer."""
    team = state["speaker"]
    model = load_chat_model(model_spec(runtime.context))
    reply = model.invoke(
        [
            SystemMessage(tone_prompt(team, strip_speaker_tags(state["draft"]))),
            HumanMessage(_user_text(state)),
        ]
    )
    text = strip_speaker_tags(message_text(reply))
    return {
        "messages": [AIMessage(content=text, id=reply.id)],
        "answer": text,
        "answer_id": reply.id,
    }


def _stored(messages: Sequence[BaseMessage], message_id: str) -> BaseMessage:
    for message in reversed(messages):
        if message.id == message_id:
            return message
    raise LookupError(f"fan_room: the answer {message_id!r} is not in the stored messages")


def attribute(state: FanRoomState) -> dict[str, Any]:
    """Replace the final answer, same id, by its tagged version (add_messages replaces by id)."""
    stored = _stored(state["messages"], state["answer_id"])
    text = tagged(state["speaker"], message_text(stored))
    return {"messages": [stored.model_copy(update={"content": text})]}
