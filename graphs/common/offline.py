"""A deterministic, rule-based chat model that needs no network and no keys.

`OfflineChatModel` is a real `BaseChatModel`: it streams token chunks, binds
tools, emits tool calls (streamed as `tool_call_chunks`), and decides from the
conversation. Its "knowledge" is the text a real model would read as well:

* **Which tool to call.** A bound tool whose description has a line
  ``Keywords: a, b, c`` is chosen when the latest user message contains one of
  those keywords (the most hits wins). When the caller forces a tool
  (``tool_choice`` set to a name, or ``"any"``/``"required"`` with one tool
  bound, as `with_structured_output` does), that tool is called. Forced to
  call one of several tools (``"required"``), it picks by keywords as above;
  when nothing hits, or when tool results already answer the latest call, it
  calls the one bound tool that declares no keywords (an agent's "ready to
  answer" tool): a model that must call a tool, and has nothing left to look up.
* **Which arguments.** Enum arguments pick the value whose keywords occur most
  in the user's text; the keywords are written in the field description as
  ``value (kw1, kw2, ...)``. Free-text arguments get the user's text, numbers
  the first number in it. With no hit the schema default (or the first enum
  value) is used.
* **Replies to its questions.** When the latest user message picks no tool and
  the AI message right before it asked a question, the user's message is read
  as the answer: tool and arguments come from the earlier request plus that
  answer ("과제 마감 언제야?" + "자료구조").
* **What to say.** After tool results it answers with them; otherwise it
  answers with the bullet facts (``- ...`` lines) of the system prompt, in the
  user's language (Korean when the user wrote Hangul, English otherwise).
  Like real chat models reading a speaker-tagged history (seed 001), that
  answer starts with the leading ``[...]`` tag(s) of the latest AI message,
  when it has any.

The same graph code runs with `ChatOpenAI`; nothing in the graphs branches on
which model is in use. Both call paths are native: ``invoke``/``stream`` on the
caller's thread, ``ainvoke``/``astream`` on the event loop (pacing with
``asyncio.sleep``), so an async node never waits on a worker thread for it.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from functools import lru_cache
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel, Field

from graphs.common.messages import LEADING_TAGS, detect_language, latest_human_text, message_text

_TOKEN = re.compile(r"\S+\s*|\s+")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_KEYWORDS_LINE = re.compile(r"^\s*keywords\s*:\s*(.+)$", re.IGNORECASE | re.MULTILINE)
_FREE_TEXT_ARGS = frozenset({"query", "request", "text", "question", "message", "input", "content", "answer"})
_FORCED_CHOICES = frozenset({"any", "required"})


class Decision(BaseModel):
    """What the offline model says next: text, tool calls, or both."""

    text: str = ""
    tool_calls: list[dict[str, Any]] = Field(default_factory=list)


def _count_hits(keywords: Sequence[str], text: str) -> int:
    lowered = text.lower()
    return sum(1 for kw in keywords if kw and kw.lower() in lowered)


def _split_keywords(raw: str) -> list[str]:
    return [kw.strip() for kw in re.split(r"[,/]", raw) if kw.strip()]


def tool_keywords(tool: dict[str, Any]) -> list[str]:
    """Keywords declared in a tool's description (``Keywords: a, b``)."""
    description = tool["function"].get("description") or ""
    keywords: list[str] = []
    for match in _KEYWORDS_LINE.finditer(description):
        keywords.extend(_split_keywords(match.group(1)))
    return keywords


@lru_cache(maxsize=1024)
def enum_keywords(value: str, description: str) -> tuple[str, ...]:
    """Keywords for one enum value, written as ``value (kw1, kw2)``.

    Cached: a structured call asks this for every value of every enum field of its schema,
    whose descriptions do not change (a regex search of the description each: filling the
    recycling guide's classification took 166 us with it, 23 us cached)."""
    match = re.search(rf"(?<![\w-]){re.escape(value)}\s*\(([^)]*)\)", description)
    keywords = [value.replace("_", " ")]
    if match:
        keywords.extend(_split_keywords(match.group(1)))
    return tuple(keywords)


class OfflineChatModel(BaseChatModel):
    """Deterministic offline chat model (see the module docstring for its rules)."""

    model_name: str = "offline"
    """Reported in response metadata and traces."""

    preamble: bool = True
    """Say a short "let me check" sentence before an unforced tool call, as real
    models often do (stream filters must cope with it)."""

    token_delay_ms: float = 0.0
    """Pacing: wait this long before each streamed token (text and tool-call chunks), as a
    hosted model takes seconds per answer. Off (0) by default; `OFFLINE_TOKEN_DELAY_MS`
    sets it for the deployment (graphs/common/models.py). The answers are the same either way."""

    @property
    def _llm_type(self) -> str:
        return "offline-rules"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": self.model_name, "preamble": self.preamble, "token_delay_ms": self.token_delay_ms}

    def _pace(self) -> None:
        if self.token_delay_ms > 0:
            time.sleep(self.token_delay_ms / 1000)

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Any],
        *,
        tool_choice: str | bool | dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        formatted = [convert_to_openai_tool(tool) for tool in tools]
        if isinstance(tool_choice, dict):
            tool_choice = tool_choice.get("function", {}).get("name")
        elif tool_choice is True:
            tool_choice = "required"
        return super().bind(tools=formatted, tool_choice=tool_choice, **kwargs)

    # -- decision -----------------------------------------------------------

    def decide(
        self,
        messages: Sequence[BaseMessage],
        tools: Sequence[dict[str, Any]] = (),
        tool_choice: str | None = None,
    ) -> Decision:
        """Decide the next message from the conversation and the bound tools."""
        user_text = latest_human_text(messages) or ""
        lang = detect_language(user_text)
        forced = _forced_tool(tools, tool_choice)
        if forced is not None:
            return Decision(tool_calls=[self._call(forced, user_text, messages, 0)])
        tool_results = _trailing_tool_results(messages)
        if tool_choice in _FORCED_CHOICES and (fallback := _keywordless_tool(tools)) is not None:
            chosen, request = (None, user_text) if tool_results else _chosen_tool(tools, user_text, messages)
            return Decision(tool_calls=[self._call(chosen or fallback, request, messages, 0)])
        if tool_results:
            return Decision(text=_answer_from_tools(tool_results))
        if tools and tool_choice != "none":
            chosen, request = _chosen_tool(tools, user_text, messages)
            if chosen is not None:
                text = ""
                if self.preamble:
                    text = "확인해 보겠습니다. " if lang == "ko" else "Let me check. "
                return Decision(text=text, tool_calls=[self._call(chosen, request, messages, 0)])
        return Decision(text=_copied_speaker_prefix(messages) + _answer_from_facts(messages, user_text, lang))

    def _call(
        self,
        tool: dict[str, Any],
        user_text: str,
        messages: Sequence[BaseMessage],
        index: int,
    ) -> dict[str, Any]:
        function = tool["function"]
        args = _fill_arguments(function.get("parameters") or {}, user_text)
        digest = hashlib.sha1(
            json.dumps(
                [function["name"], args, len(messages), user_text, index],
                ensure_ascii=False,
                sort_keys=True,
            ).encode()
        ).hexdigest()[:24]
        return {"name": function["name"], "args": args, "id": f"call_{digest}", "type": "tool_call"}

    # -- BaseChatModel --------------------------------------------------------

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        decision = self.decide(messages, kwargs.get("tools") or (), kwargs.get("tool_choice"))
        message = AIMessage(
            content=decision.text,
            tool_calls=decision.tool_calls,
            response_metadata={"model_name": self.model_name, "finish_reason": _finish(decision)},
        )
        return ChatResult(generations=[ChatGeneration(message=message)])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        """`_generate` on the event loop (the decision is a few string scans): no worker thread."""
        return self._generate(messages, stop, None, **kwargs)

    def _chunks(self, decision: Decision) -> Iterator[tuple[str, ChatGenerationChunk]]:
        """The streamed chunks of ``decision`` (text tokens, tool-call chunks, the last chunk),
        each with the token its callback reports; the last one has none (None is not a token)."""
        for token in _TOKEN.findall(decision.text):
            yield token, ChatGenerationChunk(message=AIMessageChunk(content=token))
        for index, call in enumerate(decision.tool_calls):
            chunk = AIMessageChunk(
                content="",
                tool_call_chunks=[
                    {
                        "name": call["name"],
                        "args": json.dumps(call["args"], ensure_ascii=False),
                        "id": call["id"],
                        "index": index,
                        "type": "tool_call_chunk",
                    }
                ],
            )
            yield "", ChatGenerationChunk(message=chunk)

    def _last_chunk(self, decision: Decision) -> ChatGenerationChunk:
        return ChatGenerationChunk(
            message=AIMessageChunk(
                content="",
                response_metadata={"model_name": self.model_name, "finish_reason": _finish(decision)},
                chunk_position="last",
            )
        )

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        decision = self.decide(messages, kwargs.get("tools") or (), kwargs.get("tool_choice"))
        for token, chunk in self._chunks(decision):
            self._pace()
            if run_manager:
                run_manager.on_llm_new_token(token, chunk=chunk)
            yield chunk
        yield self._last_chunk(decision)

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        """`_stream` on the event loop: the same chunks, paced with ``asyncio.sleep`` (never a
        worker thread per chunk, as langchain's default async stream would use)."""
        decision = self.decide(messages, kwargs.get("tools") or (), kwargs.get("tool_choice"))
        for token, chunk in self._chunks(decision):
            if self.token_delay_ms > 0:
                await asyncio.sleep(self.token_delay_ms / 1000)
            if run_manager:
                await run_manager.on_llm_new_token(token, chunk=chunk)
            yield chunk
        yield self._last_chunk(decision)


def _finish(decision: Decision) -> str:
    return "tool_calls" if decision.tool_calls else "stop"


def _forced_tool(tools: Sequence[dict[str, Any]], tool_choice: str | None) -> dict[str, Any] | None:
    if not tools or tool_choice in (None, "auto", "none"):
        return None
    if tool_choice in _FORCED_CHOICES:
        return tools[0] if len(tools) == 1 else None
    for tool in tools:
        if tool["function"]["name"] == tool_choice:
            return tool
    raise ValueError(f"tool_choice={tool_choice!r} names no bound tool; bound: {[t['function']['name'] for t in tools]}")


def _chosen_tool(
    tools: Sequence[dict[str, Any]], user_text: str, messages: Sequence[BaseMessage]
) -> tuple[dict[str, Any] | None, str]:
    """The tool the user's message picks by keywords, else the one the earlier request plus
    this reply picks (`_answered_request`), with the text that picked it (None: no tool fits)."""
    chosen = _best_tool(tools, user_text)
    if chosen is None and (request := _answered_request(messages)):
        return _best_tool(tools, request), request
    return chosen, user_text


def _keywordless_tool(tools: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The one bound tool that declares no keywords (None when there are none or several)."""
    plain = [tool for tool in tools if not tool_keywords(tool)]
    return plain[0] if len(plain) == 1 else None


def _answered_request(messages: Sequence[BaseMessage]) -> str:
    """The earlier request plus the latest user message, when that message answers
    an AI question (the message right before it asks something: it has a ``?``).
    Empty otherwise. A short reply ("2층") completes the request it answers."""
    humans = [i for i, m in enumerate(messages) if isinstance(m, HumanMessage)]
    if len(humans) < 2:
        return ""
    before = messages[humans[-1] - 1]
    if not isinstance(before, AIMessage) or before.tool_calls or "?" not in message_text(before):
        return ""
    return f"{message_text(messages[humans[-2]]).strip()} {message_text(messages[humans[-1]]).strip()}"


def _best_tool(tools: Sequence[dict[str, Any]], user_text: str) -> dict[str, Any] | None:
    best, best_hits = None, 0
    for tool in tools:
        hits = _count_hits(tool_keywords(tool), user_text)
        if hits > best_hits:
            best, best_hits = tool, hits
    return best


def _trailing_tool_results(messages: Sequence[BaseMessage]) -> list[ToolMessage]:
    """Tool results that answer the latest AI tool call, if it is the last turn."""
    results: list[ToolMessage] = []
    for message in reversed(messages):
        if isinstance(message, ToolMessage):
            results.append(message)
            continue
        break
    return list(reversed(results))


def _answer_from_tools(results: Sequence[ToolMessage]) -> str:
    return "\n".join(message_text(m).strip() for m in results if message_text(m).strip())


def _copied_speaker_prefix(messages: Sequence[BaseMessage]) -> str:
    """The leading tag(s) of the latest AI message (``[LG 팬] ``), copied as models do."""
    for message in reversed(messages):
        if isinstance(message, AIMessage):
            match = LEADING_TAGS.match(message_text(message))
            return match.group(0) if match else ""
    return ""


def _answer_from_facts(messages: Sequence[BaseMessage], user_text: str, lang: str) -> str:
    facts: list[str] = []
    for message in messages:
        if isinstance(message, SystemMessage):
            for line in message_text(message).splitlines():
                if line.startswith("- "):
                    facts.append(line[2:].strip())
    if facts:
        return " ".join(facts)
    if lang == "ko":
        return f"말씀하신 내용을 확인했습니다: {user_text.strip()}"
    return f"I have noted your message: {user_text.strip()}"


def _fill_arguments(schema: dict[str, Any], user_text: str) -> dict[str, Any]:
    args: dict[str, Any] = {}
    for name, prop in (schema.get("properties") or {}).items():
        args[name] = _fill_value(name, _resolve(prop, schema), user_text)
    return args


def _resolve(prop: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    """Inline a local ``$ref`` and unwrap a single-branch ``anyOf``."""
    if "$ref" in prop:
        name = prop["$ref"].rsplit("/", 1)[-1]
        target = (root.get("$defs") or root.get("definitions") or {}).get(name, {})
        prop = {**target, **{k: v for k, v in prop.items() if k != "$ref"}}
    if "anyOf" in prop and "type" not in prop:
        branches = [b for b in prop["anyOf"] if b.get("type") != "null"]
        if len(branches) == 1:
            prop = {**branches[0], **{k: v for k, v in prop.items() if k != "anyOf"}}
    return prop


def _fill_value(name: str, prop: dict[str, Any], user_text: str) -> Any:
    description = prop.get("description") or ""
    if "enum" in prop:
        best, best_hits = None, 0
        for value in prop["enum"]:
            hits = _count_hits(enum_keywords(str(value), description), user_text)
            if hits > best_hits:
                best, best_hits = value, hits
        if best is not None:
            return best
        return prop.get("default", prop["enum"][0])
    kind = prop.get("type")
    if kind in ("integer", "number"):
        match = _NUMBER.search(user_text)
        if match:
            return int(float(match.group())) if kind == "integer" else float(match.group())
        return prop.get("default", 0)
    if kind == "boolean":
        return bool(prop.get("default", False))
    if kind == "array":
        return list(prop.get("default", []))
    if kind == "object":
        return _fill_arguments(prop, user_text)
    if "default" in prop and name not in _FREE_TEXT_ARGS:
        return prop["default"]
    return user_text.strip()
