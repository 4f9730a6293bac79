"""Progress events on the custom stream (``stream_mode="custom"``).

Each turn emits, in this order::

    queued -> intent (label) -> stage (lookup | recap | chat) -> stage (compose) -> answer -> done

Every event is a JSON object with ``event`` and ``turn``; `intent` adds
``intent``, `stage` adds ``node``, `answer` adds ``text``, `done` adds ``intent``.
"""

from __future__ import annotations

from typing import Any, Literal

from langgraph.config import get_stream_writer

ProgressEvent = Literal["queued", "intent", "stage", "answer", "done"]
"""The kinds of progress event, in the order a turn emits them."""


def emit(event: ProgressEvent, turn: int, **fields: Any) -> None:
    """Send one progress event to custom-stream listeners (a no-op for other modes)."""
    get_stream_writer()({"event": event, "turn": turn, **fields})
