"""Message helpers shared by every graph and by the offline model."""

from __future__ import annotations

import re
from collections.abc import Sequence

from langchain_core.messages import BaseMessage, HumanMessage

_HANGUL = re.compile(r"[\uac00-\ud7a3]")

LEADING_TAGS = re.compile(r"^\s*(?:\[[^\[\]\n]{1,30}\]\s*:?\s*)+")
"""One or more bracketed tags at the very start, each with an optional colon:
``[LG 팬] [LG 팬]: `` and ``[삼성 팬]:`` (what models copy from a tagged history).
The offline model copies exactly what `fan_room` strips."""


def detect_language(text: str) -> str:
    """Return ``"ko"`` when the text contains Hangul, else ``"en"``."""
    return "ko" if _HANGUL.search(text or "") else "en"


def message_text(message: BaseMessage) -> str:
    """The plain text of a message, whatever its content format."""
    content = message.content
    if isinstance(content, str):
        return content
    parts = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
    return "".join(parts)


def latest_human_text(messages: Sequence[BaseMessage]) -> str | None:
    """The text of the latest `HumanMessage`, or None when there is none."""
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            return message_text(message)
    return None


def require_human_text(messages: Sequence[BaseMessage], graph_id: str) -> str:
    """The text of the latest `HumanMessage`; a clear error when the input has none."""
    text = latest_human_text(messages)
    if text is None:
        raise ValueError(f"{graph_id} needs at least one human message in 'messages'")
    return text
