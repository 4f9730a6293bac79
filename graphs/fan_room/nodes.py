"""Nodes of the fan-room graph: intake -> draft -> tone -> attribute.

The two model steps have a sync body (`graph.invoke`) and an async twin (`adraft`, `atone`:
`graph.ainvoke` and the server), wired with `graphs.common.dual.both`.

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
from langchain_core.runnables import Runnable
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


def _draft_call(
    team: str, messages: Sequence[BaseMessage], user_text: str, runtime: Runtime[FanRoomContext]
) -> tuple[Runnable[Any, BaseMessage], list[BaseMessage]]:
    system = persona_prompt(team, detect_language(user_text), other_speakers(messages, team))
    model = load_chat_model(model_spec(runtime.context)).with_config(tags=[TAG_NOSTREAM])
    return model, [SystemMessage(system), *messages]


def draft(state: FanRoomState, runtime: Runtime[FanRoomContext]) -> dict[str, Any]:
    """The persona's answer, from the tagged history, kept out of the token stream."""
    model, prompt = _draft_call(state["speaker"], state["messages"], _user_text(state), runtime)
    return {"draft": message_text(model.invoke(prompt))}


async def adraft(state: FanRoomState, runtime: Runtime[FanRoomContext]) -> dict[str, Any]:
    """`draft` under `graph.ainvoke`: the same call, awaited."""
    model, prompt = _draft_call(state["speaker"], state["messages"], _user_text(state), runtime)
    return {"draft": message_text(await model.ainvoke(prompt))}


def _tone_call(
    team: str, draft: str, user_text: str, runtime: Runtime[FanRoomContext]
) -> tuple[Runnable[Any, BaseMessage], list[BaseMessage]]:
    model = load_chat_model(model_spec(runtime.context))
    return model, [SystemMessage(tone_prompt(team, strip_speaker_tags(draft))), HumanMessage(user_text)]


def _toned(reply: BaseMessage) -> dict[str, Any]:
    text = strip_speaker_tags(message_text(reply))
    return {
        "messages": [AIMessage(content=text, id=reply.id)],
        "answer": text,
        "answer_id": reply.id,
    }


def tone(state: FanRoomState, runtime: Runtime[FanRoomContext]) -> dict[str, Any]:
    """Rewrite the (tag-stripped) draft in the fan's voice; this is the streamed answer."""
    model, prompt = _tone_call(state["speaker"], state["draft"], _user_text(state), runtime)
    return _toned(model.invoke(prompt))


async def atone(state: FanRoomState, runtime: Runtime[FanRoomContext]) -> dict[str, Any]:
    """`tone` under `graph.ainvoke`: the same call, awaited (its tokens stream as they come)."""
    model, prompt = _tone_call(state["speaker"], state["draft"], _user_text(state), runtime)
    return _toned(await model.ainvoke(prompt))


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
