"""The OpenAI stand-in speaks Chat Completions as OpenAI does, and answers as the offline model would.

No socket: the wire shapes are checked as data, against the openai SDK's own
types, and `ChatOpenAI` itself is driven through ``httpx.MockTransport``
(`OpenAIStandIn.transport`), so its real streaming and structured-output code
reads the stand-in's SSE.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import openai
import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from graphs.common.models import load_chat_model
from graphs.common.offline import OfflineChatModel
from graphs.recycling_guide.prompts import CLASSIFY_SYSTEM, TurnAnalysis
from graphs.ticket_triage.prompts import TRIAGE_SYSTEM, TicketClassification
from tests.openai_standin import (
    Answer,
    OpenAIStandIn,
    RequestError,
    check_strict_schema,
    completion_body,
    completion_chunks,
    decide,
    sse_event,
    text_pieces,
    to_langchain_messages,
)

BODY = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}
CALL = {"name": "seat_status", "args": {"floor": 3}, "id": "call_abc", "type": "tool_call"}


@tool
def seat_status(floor: int) -> str:
    """Seat availability for one library floor.

    Keywords: 좌석, 자리, seat, seats
    """
    return f"{floor}층 좌석 12석 남음"


def _chunks(answer: Answer, **body: Any) -> list[dict[str, Any]]:
    return completion_chunks({**BODY, **body}, answer, completion_id="chatcmpl-test", created=1)


def _deltas(chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [c["choices"][0]["delta"] for c in chunks if c["choices"]]


def _wire_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def _chat_openai(standin: OpenAIStandIn) -> ChatOpenAI:
    return ChatOpenAI(
        model="gpt-4o-mini",
        api_key="sk-standin-dummy",
        base_url="http://openai-standin.invalid/v1",
        http_client=httpx.Client(transport=standin.transport()),
        http_socket_options=(),  # no TCP options to probe: this lane has no sockets
        temperature=0,
        streaming=True,
        stream_usage=True,
    )


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("3층 열람실에는 80석 중 12석이 남아 있습니다.", id="korean"),
        pytest.param("Let me check. ", id="trailing-space"),
        pytest.param("[LG 팬]  line one\nline two", id="tag-newline-double-space"),
        pytest.param("", id="empty"),
    ],
)
def test_text_is_split_into_small_deltas_that_rejoin_exactly(text: str) -> None:
    pieces = text_pieces(text)
    assert "".join(pieces) == text
    assert all(len(piece.strip()) <= 4 for piece in pieces)


def test_text_answer_streams_role_then_content_then_finish_then_usage() -> None:
    chunks = _chunks(Answer(text="Floor 2 reading room"), stream_options={"include_usage": True})
    deltas = _deltas(chunks)
    assert deltas[0] == {"role": "assistant", "content": "", "refusal": None}
    assert "".join(d["content"] for d in deltas[1:-1]) == "Floor 2 reading room"
    assert len(deltas) > 4, "several content deltas"
    assert chunks[-2]["choices"][0] == {"index": 0, "delta": {}, "logprobs": None, "finish_reason": "stop"}
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["total_tokens"] > 0
    assert all(c["usage"] is None for c in chunks[:-1])
    assert {c["id"] for c in chunks} == {"chatcmpl-test"}
    assert {c["model"] for c in chunks} == {"gpt-4o-mini-2024-07-18"}


def test_usage_chunk_and_usage_fields_only_when_asked() -> None:
    chunks = _chunks(Answer(text="hi"))
    assert all("usage" not in c for c in chunks)
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"


def test_tool_call_after_text_streams_name_then_argument_fragments_in_the_same_message() -> None:
    deltas = _deltas(_chunks(Answer(text="확인해 보겠습니다. ", tool_calls=(CALL,))))
    text = [d["content"] for d in deltas if "content" in d]
    calls = [d["tool_calls"][0] for d in deltas if "tool_calls" in d]
    assert "".join(text) == "확인해 보겠습니다. "
    assert deltas.index({"tool_calls": [calls[0]]}) > max(i for i, d in enumerate(deltas) if "content" in d)
    assert calls[0] == {"index": 0, "id": "call_abc", "type": "function", "function": {"name": "seat_status", "arguments": ""}}
    assert all(set(c) == {"index", "function"} for c in calls[1:])
    assert json.loads("".join(c["function"]["arguments"] for c in calls)) == {"floor": 3}
    assert deltas[-1] == {}


def test_tool_call_without_text_starts_with_null_content_and_the_first_call() -> None:
    chunks = _chunks(Answer(tool_calls=(CALL,)))
    first = chunks[0]["choices"][0]["delta"]
    assert first["role"] == "assistant" and first["content"] is None
    assert first["tool_calls"][0]["function"]["name"] == "seat_status"
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param(Answer(text="hello there"), id="text"),
        pytest.param(Answer(text="Let me check. ", tool_calls=(CALL,)), id="text-and-tool"),
        pytest.param(Answer(tool_calls=(CALL, {**CALL, "id": "call_def"})), id="two-tools"),
    ],
)
def test_wire_objects_validate_as_the_openai_sdks_types(answer: Answer) -> None:
    for chunk in _chunks(answer, stream_options={"include_usage": True}):
        ChatCompletionChunk.model_validate(chunk)
    body = ChatCompletion.model_validate(completion_body(BODY, answer, completion_id="chatcmpl-test", created=1))
    message = body.choices[0].message
    assert message.content == (answer.text or None)
    assert [c.function.name for c in message.tool_calls or ()] == [c["name"] for c in answer.tool_calls]


def test_sse_events_are_data_lines_and_the_stream_ends_with_done() -> None:
    assert sse_event({"a": "좌석"}) == 'data: {"a":"좌석"}\n\n'.encode()
    assert sse_event("[DONE]") == b"data: [DONE]\n\n"


def test_wire_messages_become_langchain_messages() -> None:
    messages = to_langchain_messages(
        [
            {"role": "developer", "content": "- fact"},
            {"role": "user", "content": [{"type": "text", "text": "3층 "}, {"type": "text", "text": "좌석?"}]},
            {
                "role": "assistant",
                "content": None,
                "name": "library",
                "tool_calls": [_wire_call("call_1", "seat_status", '{"floor":3}')],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "12석"},
        ]
    )
    assert [type(m) for m in messages] == [SystemMessage, HumanMessage, AIMessage, ToolMessage]
    assert messages[1].content == "3층 좌석?"
    assert messages[2].tool_calls[0]["args"] == {"floor": 3} and messages[2].name == "library"


@pytest.mark.parametrize(
    ("wire", "message"),
    [
        pytest.param(
            [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "tool_calls": [_wire_call("call_1", "f", "{}")]},
                {"role": "user", "content": "again"},
            ],
            "did not have response messages: call_1",
            id="tool-call-without-result",
        ),
        pytest.param(
            [{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "call_9", "content": "x"}],
            "must be a response to a preceeding message with 'tool_calls'",
            id="result-without-call",
        ),
        pytest.param([], "too short", id="no-messages"),
        pytest.param(
            [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "x", "name": "LG 팬"}],
            "messages\\[1\\].name': string does not match pattern",
            id="name-with-a-space",
        ),
    ],
)
def test_conversations_openai_refuses_are_refused_with_its_message(wire: list[dict[str, Any]], message: str) -> None:
    with pytest.raises(RequestError, match=message) as refused:
        to_langchain_messages(wire)
    assert refused.value.status == 400
    assert refused.value.body()["error"]["type"] == "invalid_request_error"


def test_tool_choice_without_tools_is_refused() -> None:
    with pytest.raises(RequestError, match="only allowed when 'tools' are specified"):
        decide({**BODY, "tool_choice": "required"})


def test_strict_schema_needs_every_property_required_and_no_additional_properties() -> None:
    two = {"type": "object", "properties": {"a": {}, "b": {}}, "required": ["a"], "additionalProperties": False}
    with pytest.raises(RequestError, match="Missing 'b'"):
        check_strict_schema("S", two)
    with pytest.raises(RequestError, match="'additionalProperties' is required"):
        check_strict_schema("S", {"type": "object", "properties": {"a": {}}, "required": ["a"]})
    check_strict_schema("S", {"type": "object", "properties": {"a": {}}, "required": ["a"], "additionalProperties": False})


@pytest.mark.parametrize(
    ("method", "path", "authorization", "status"),
    [
        pytest.param("POST", "/v1/chat/completions", None, 401, id="no-key"),
        pytest.param("POST", "/v1/responses", "Bearer sk-x", 404, id="other-path"),
        pytest.param("GET", "/v1/models", "Bearer sk-x", 404, id="get"),
    ],
)
def test_requests_outside_the_protocol_get_openai_errors(method: str, path: str, authorization: str | None, status: int) -> None:
    standin = OpenAIStandIn()
    reply = standin.handle(method, path, authorization, json.dumps(BODY).encode())
    assert reply.status == status
    assert json.loads(reply.parts[0])["error"]["message"]
    assert [r.status for r in standin.requests] == [status]


# -- ChatOpenAI itself, over httpx.MockTransport --------------------------------


SEAT_QUESTION: list[BaseMessage] = [SystemMessage("You are the library agent."), HumanMessage("3층 좌석 남았어?")]
TOOL_TURN: list[BaseMessage] = [
    *SEAT_QUESTION,
    AIMessage("확인해 보겠습니다. ", tool_calls=[{"name": "seat_status", "args": {"floor": 3}, "id": "call_1"}]),
    ToolMessage("3층 좌석 12석 남음", tool_call_id="call_1"),
]


@pytest.mark.parametrize(
    "messages", [pytest.param(SEAT_QUESTION, id="calls-a-tool"), pytest.param(TOOL_TURN, id="answers-from-the-result")]
)
def test_chatopenai_streams_what_the_offline_model_says(messages: list[BaseMessage]) -> None:
    standin = OpenAIStandIn()
    chunks = list(_chat_openai(standin).bind_tools([seat_status]).stream(messages))
    offline = OfflineChatModel().bind_tools([seat_status]).invoke(messages)

    merged = chunks[0]
    for chunk in chunks[1:]:
        merged += chunk
    assert merged.content == offline.content
    assert [(c["name"], c["args"], c["id"]) for c in merged.tool_calls] == [
        (c["name"], c["args"], c["id"]) for c in offline.tool_calls
    ]
    assert sum(1 for c in chunks if c.content) > 1, "the text arrived in several deltas"
    assert merged.usage_metadata and merged.usage_metadata["total_tokens"] > 0
    assert merged.response_metadata["finish_reason"] == ("tool_calls" if offline.tool_calls else "stop")
    (request,) = standin.requests
    assert request.streamed and request.tool_names == ["seat_status"]
    assert request.body["stream_options"] == {"include_usage": True}


def test_chatopenai_without_streaming_gets_the_same_answer() -> None:
    standin = OpenAIStandIn()
    model = _chat_openai(standin).bind_tools([seat_status])
    reply = model.invoke(SEAT_QUESTION, stream=False)
    offline = OfflineChatModel().bind_tools([seat_status]).invoke(SEAT_QUESTION)
    assert (reply.content, reply.tool_calls[0]["args"]) == (offline.content, offline.tool_calls[0]["args"])
    assert not standin.requests[0].streamed


@pytest.mark.parametrize(
    ("schema", "system", "text"),
    [
        pytest.param(
            TicketClassification, TRIAGE_SYSTEM, "Please refund the double charge on my invoice, it is urgent", id="ticket"
        ),
        pytest.param(TurnAnalysis, CLASSIFY_SYSTEM, "라벨은 어떻게 해?", id="recycling"),
    ],
)
@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "not-streamed"])
# langchain-openai dumps the SDK's stream events, whose `parsed` the SDK types as None
# (langchain-ai/langchain#35538, #37723): a warning about its own dump, not about the answer.
@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings:UserWarning")
def test_structured_output_over_response_format_equals_the_offline_models(
    schema: type, system: str, text: str, stream: bool
) -> None:
    standin = OpenAIStandIn()
    messages = [SystemMessage(system), HumanMessage(text)]
    model = _chat_openai(standin)
    if not stream:
        model = model.model_copy(update={"streaming": False})
    result = model.with_structured_output(schema).invoke(messages)
    assert result == OfflineChatModel().with_structured_output(schema).invoke(messages)
    (request,) = standin.requests
    assert request.streamed is stream
    assert request.schema_name == schema.__name__
    assert request.body["response_format"]["json_schema"]["strict"] is True


def test_a_refused_conversation_reaches_chatopenai_as_a_bad_request() -> None:
    dangling = [*SEAT_QUESTION, TOOL_TURN[2], HumanMessage("2층은?")]
    with pytest.raises(openai.BadRequestError, match="did not have response messages"):
        _chat_openai(OpenAIStandIn()).invoke(dangling)


def test_the_model_seam_asks_for_the_usage_chunk_also_behind_a_base_url(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without ``stream_usage=True`` ChatOpenAI leaves ``stream_options`` out whenever
    ``OPENAI_BASE_URL`` is set: the stand-in lane would then test another chunk shape
    than api.openai.com sends."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-standin-dummy")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://openai-standin.invalid/v1")
    monkeypatch.setenv("LANGCHAIN_OPENAI_TCP_KEEPALIVE", "0")  # no TCP options to probe: this lane has no sockets
    model = load_chat_model("openai:gpt-4o-mini-usage-check")
    assert isinstance(model, ChatOpenAI)
    assert model.stream_usage is True and model.streaming is True
