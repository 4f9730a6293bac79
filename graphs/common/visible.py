"""What the user should see of a LangGraph run stream: the visible-text filter.

Pure: it consumes ``(event, data)`` stream parts (as `langgraph-sdk`'s
``runs.stream`` yields them, or ``graph.astream`` parts converted with
`part_from_astream`) and yields the text a user should read. No I/O, except
in the small `stream_visible_text` helper at the bottom, which drives a
`langgraph-sdk` client.

Why these rules (seed 000, docs/adr/0001-stream-filter-keys-on-tags.md):

* Only **model token chunks** can be visible. Messages emitted from node outputs
  (complete messages: a node's returned `AIMessage`, tool results, a message a
  node rewrote with a speaker tag) carry no model tags and are never shown.
* Text is held **per model message** until that message ends
  (``chunk_position == "last"``). A message that also calls a tool is a
  preamble ("Let me check the 5th floor") and is dropped; a message without
  tool calls is an answer and is released, token by token.
* Text of runs tagged `SUPERVISOR_TAG` (the supervisor's ReAct runnable) is
  routing narration once that supervisor has called a routing tool
  (`is_route_tool`): it is dropped too ("Transferred to the library agent").
  A supervisor that answers without routing is released like any answer.
* Text of runs tagged `ANSWER_TAG` is released **as it streams**, chunk by chunk:
  the tag marks a model call that has no tools bound and writes the user's
  answer (docs/adr/0002-answer-in-a-step-without-tools.md), so nothing can
  turn it into a preamble or narration after its first token. (With a
  `hide_prefix` such text is held per message like any other, since a prefix
  is only known once it ends.)
* The filter never looks at node names (``langgraph_node``) or parses
  ``checkpoint_ns``: the tag and the tool calls are the contract, so a change
  inside an agent (its model node renamed from ``agent`` to ``model``) changes
  nothing here.

The stream must come from ``stream_mode="messages-tuple"`` (``"messages"``
in-process) with subgraphs streamed (``stream_subgraphs=True``): without it a
nested agent's messages arrive only as node outputs, which are never visible.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from langgraph_sdk.client import LangGraphClient
    from langgraph_sdk.schema import StreamMode

SUPERVISOR_TAG = "supervisor_llm"
"""Tag on the supervisor's ReAct runnable; propagates to its model and tool runs."""

ANSWER_TAG = "answer_llm"
"""Tag on a model call that cannot call tools (none bound) and writes the user's answer:
its text is visible token by token, without waiting for the message to end."""

ROUTE_TOOL_PREFIX = "transfer_to_"
"""Routing tools are named ``transfer_to_<agent>`` (the langgraph-supervisor
convention): a public, model-facing name, unlike node names."""

STREAM_MODE: Final = "messages-tuple"
"""The `runs.stream` mode the filter reads (plus ``metadata`` and ``error``, always sent)."""

SPEAKER_TAG = re.compile(r"^\s*(?:\[[^\[\]\n]{1,40}\]\s*:?\s*)+")
"""Leading speaker tags such as ``[LG 팬] `` (repeated ones too), for `hide_prefix`."""

_AI_CHUNK = "AIMessageChunk"


def is_route_tool(name: str | None) -> bool:
    """Whether a tool name is a routing (transfer) tool."""
    return bool(name and name.startswith(ROUTE_TOOL_PREFIX))


def route_tool_name(agent: str) -> str:
    """The routing tool that hands a turn to ``agent``."""
    return f"{ROUTE_TOOL_PREFIX}{agent}"


class RunStreamError(RuntimeError):
    """The run failed; carries the server's error payload."""

    def __init__(self, payload: Any) -> None:
        self.payload = payload
        if isinstance(payload, Mapping):
            text = f"{payload.get('error', 'Error')}: {payload.get('message', '')}".strip()
        else:
            text = str(payload)
        super().__init__(text)


@dataclass
class _Message:
    """One model message being streamed."""

    supervisor: bool
    answer: bool = False
    """Tagged `ANSWER_TAG` (and no `hide_prefix` to strip): released chunk by chunk, never held."""
    tokens: list[str] = field(default_factory=list)
    calls_tool: bool = False


def _field(message: Any, name: str, default: Any = None) -> Any:
    if isinstance(message, Mapping):
        return message.get(name, default)
    return getattr(message, name, default)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = []
    for block in content or ():
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, Mapping) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
    return "".join(parts)


def _drop_chars(tokens: list[str], count: int) -> list[str]:
    """``tokens`` without their first ``count`` characters (token boundaries kept)."""
    out: list[str] = []
    for token in tokens:
        if count >= len(token):
            count -= len(token)
            continue
        out.append(token[count:])
        count = 0
    return out


class VisibleTextFilter:
    """Turns stream parts into visible text; one instance per run stream.

    ``feed(event, data)`` returns the tokens that became visible with that part
    (often none: text is held until its message ends); ``finish()`` releases what
    is still held when the stream ends without a final chunk.
    """

    def __init__(
        self,
        *,
        supervisor_tag: str = SUPERVISOR_TAG,
        answer_tag: str = ANSWER_TAG,
        route_tool: Callable[[str | None], bool] = is_route_tool,
        hide_prefix: re.Pattern[str] | None = None,
    ) -> None:
        self.supervisor_tag = supervisor_tag
        self.answer_tag = answer_tag
        self.route_tool = route_tool
        self.hide_prefix = hide_prefix
        self.run_id: str | None = None
        """The run's id, from the stream's ``metadata`` part."""
        self._open: dict[str, _Message] = {}
        self._routed = False

    def feed(self, event: str, data: Any) -> list[str]:
        """Process one stream part; return the tokens it makes visible."""
        kind = event.split("|", 1)[0]
        if kind == "metadata" and isinstance(data, Mapping):
            self.run_id = data.get("run_id", self.run_id)
            return []
        if kind == "error":
            raise RunStreamError(data)
        if kind != "messages" or not isinstance(data, (list, tuple)) or len(data) != 2:
            return []
        message, metadata = data
        if _field(message, "type") != _AI_CHUNK:
            return []  # a node's output, a tool result, the user's input: never shown
        key = str(_field(message, "id"))
        current = self._open.get(key)
        if current is None:
            tags = (metadata or {}).get("tags") or ()
            answer = self.answer_tag in tags and self.hide_prefix is None
            current = self._open[key] = _Message(supervisor=self.supervisor_tag in tags, answer=answer)
            if not current.supervisor:
                self._routed = False  # another agent took over: a new supervisor episode starts clean
        text = _text(_field(message, "content"))
        if current.answer:
            return self._stream_answer(key, text, _field(message, "chunk_position") == "last")
        if text:
            current.tokens.append(text)
        for call in [*(_field(message, "tool_call_chunks") or ()), *(_field(message, "tool_calls") or ())]:
            current.calls_tool = True
            if current.supervisor and self.route_tool(_field(call, "name")):
                self._routed = True
        if _field(message, "chunk_position") == "last":
            return self._close(key)
        return []

    def finish(self) -> list[str]:
        """Release held answers at the end of the stream."""
        out: list[str] = []
        for key in list(self._open):
            out.extend(self._close(key))
        return out

    def _stream_answer(self, key: str, text: str, last: bool) -> list[str]:
        """An answer step's chunk: visible now."""
        if last:
            self._open.pop(key, None)
        return [text] if text else []

    def _close(self, key: str) -> list[str]:
        message = self._open.pop(key)
        if message.answer:
            return []  # already released chunk by chunk
        if message.calls_tool:
            return []  # preamble before a tool call (or before a transfer)
        if message.supervisor and self._routed:
            return []  # routing narration
        tokens = message.tokens
        if self.hide_prefix is not None:
            match = self.hide_prefix.match("".join(tokens))
            if match:
                tokens = _drop_chars(tokens, match.end())
        return [t for t in tokens if t]


def _event_and_data(part: Any) -> tuple[str, Any]:
    event = getattr(part, "event", None)
    if event is not None:
        return event, part.data
    return part[0], part[1]


def part_from_astream(chunk: tuple[Any, ...]) -> tuple[str, Any]:
    """Convert an item of ``graph.(a)stream(..., stream_mode=[...], subgraphs=True)``,
    ``(ns, mode, data)``, or of the same without subgraphs, ``(mode, data)``, to the
    server's ``(event, data)`` shape. ``stream_mode`` must be a list: with a single
    mode string LangGraph leaves the mode out of each item."""
    if len(chunk) == 3:
        ns, mode, data = chunk
        return (f"{mode}|{'|'.join(ns)}" if ns else mode), data
    mode, data = chunk
    return mode, data


def visible_text(parts: Iterable[Any], text_filter: VisibleTextFilter | None = None) -> Iterator[str]:
    """Visible tokens of a finished or synchronous stream of parts."""
    text_filter = text_filter or VisibleTextFilter()
    for part in parts:
        yield from text_filter.feed(*_event_and_data(part))
    yield from text_filter.finish()


async def avisible_text(parts: AsyncIterable[Any], text_filter: VisibleTextFilter | None = None) -> AsyncIterator[str]:
    """Visible tokens of an async stream of parts (e.g. `runs.stream`)."""
    text_filter = text_filter or VisibleTextFilter()
    async for part in parts:
        for token in text_filter.feed(*_event_and_data(part)):
            yield token
    for token in text_filter.finish():
        yield token


def open_run_stream(
    client: LangGraphClient,
    thread_id: str | None,
    assistant_id: str,
    *,
    extra_stream_modes: Sequence[StreamMode] = (),
    **run_kwargs: Any,
) -> AsyncIterator[Any]:
    """``client.runs.stream`` with the stream mode and subgraph streaming the filter needs.

    ``extra_stream_modes`` are streamed too (the filter ignores them);
    ``run_kwargs`` go to ``runs.stream`` (``input=``, ``command=``, ``context=``...).
    """
    return client.runs.stream(
        thread_id,
        assistant_id,
        stream_mode=[STREAM_MODE, *extra_stream_modes],
        stream_subgraphs=True,
        **run_kwargs,
    )


async def stream_visible_text(
    client: LangGraphClient,
    thread_id: str | None,
    assistant_id: str,
    *,
    text_filter: VisibleTextFilter | None = None,
    **run_kwargs: Any,
) -> AsyncIterator[str]:
    """Run ``assistant_id`` on a thread with `langgraph-sdk` and yield only visible text.

    Raises `RunStreamError` if the run fails. Example::

        async for token in stream_visible_text(client, thread_id, "campus_supervisor",
                                               input={"messages": [{"role": "user", "content": "3층 좌석?"}]}):
            print(token, end="")
    """
    async for token in avisible_text(open_run_stream(client, thread_id, assistant_id, **run_kwargs), text_filter):
        yield token
