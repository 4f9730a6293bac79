"""The model relay of `playbook shadow` (migrations_playbook/proof/shadow/relay.py) on real sockets.

The upstream is the OpenAI stand-in (tests/openai_standin.py), and the callers are langchain-openai's
`ChatOpenAI` (the openai SDK's real HTTP and SSE code) pointed at ``relay.base_url("record")``, as
side A is, then at ``relay.base_url("replay")``, as A2 and B are. The stand-in's request log shows
whether the upstream was contacted; it answers 401 without a bearer key, so every 200 also shows
that the Authorization header was forwarded.
"""

from __future__ import annotations

import functools
import operator
import socket
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
from langchain_core.language_models import LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import Runnable
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from pydantic import SecretStr

from graphs.common.offline import OfflineChatModel
from migrations_playbook.proof.shadow.relay import (
    PREVIEW_CHARS,
    RELAY_HEADER,
    UNREACHABLE,
    ModelRelay,
    Side,
    UnmatchedRequest,
)
from tests.openai_standin import OpenAIStandIn

pytestmark = pytest.mark.integration

MODEL = "gpt-4o-mini"
AUTH = {"Authorization": "Bearer sk-relay-test"}
SEATS = "How many seats are free on floor 3?"


@tool
def seat_status(floor: int) -> str:
    """Seat availability for one library floor.

    Keywords: seat, seats
    """
    return f"{floor}: 12 seats free"


@pytest.fixture
def standin() -> Iterator[OpenAIStandIn]:
    with OpenAIStandIn() as server:
        yield server


@pytest.fixture
def relay(standin: OpenAIStandIn) -> Iterator[ModelRelay]:
    with ModelRelay(upstream=standin.base_url) as server:
        yield server


def _chat(relay: ModelRelay, side: Side, lane: str = "") -> Runnable[LanguageModelInput, AIMessage]:
    """ChatOpenAI on one side of the relay, with the seat tool bound (the stand-in calls it for SEATS)."""
    model = ChatOpenAI(
        model=MODEL, api_key=SecretStr("sk-relay-test"), base_url=relay.base_url(side, lane=lane), max_retries=0, temperature=0
    )
    return model.bind_tools([seat_status])


def _streamed(relay: ModelRelay, side: Side, prompt: str) -> tuple[AIMessage, int]:
    chunks = list(_chat(relay, side).stream(prompt))
    return functools.reduce(operator.add, chunks), len(chunks)


def _seen(message: BaseMessage) -> tuple[Any, ...]:
    """What a caller gets from one answer: the completion id (``chatcmpl-...``, a new one for every
    answer the stand-in gives; langchain-openai keeps none for a stream), the text and the tool calls."""
    assert isinstance(message, AIMessage)
    return message.response_metadata.get("id"), message.content, message.tool_calls


def _post(url: str, content: bytes | str) -> httpx.Response:
    headers = {**AUTH, "Content-Type": "application/json"}
    return httpx.post(f"{url}/chat/completions", content=content, headers=headers, trust_env=False)


def _body(prompt: str, *, reverse: bool = False) -> str:
    fields = [f'"model": "{MODEL}"', f'"messages": [{{"role": "user", "content": "{prompt}"}}]']
    return "{" + ", ".join(reversed(fields) if reverse else fields) + "}"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def test_recorded_answers_are_replayed_without_the_upstream(relay: ModelRelay, standin: OpenAIStandIn) -> None:
    invoked = _chat(relay, "record").invoke(SEATS)
    streamed, chunk_count = _streamed(relay, "record", SEATS)
    assert [request.streamed for request in standin.requests] == [False, True]
    assert invoked.tool_calls and invoked.tool_calls[0]["name"] == "seat_status"
    assert streamed.tool_calls and streamed.content == "Let me check. "

    replayed = _chat(relay, "replay").invoke(SEATS)
    replayed_stream, replayed_chunk_count = _streamed(relay, "replay", SEATS)

    assert len(standin.requests) == 2, "the replay side contacted the upstream"
    assert _seen(replayed) == _seen(invoked)
    assert _seen(replayed_stream) == _seen(streamed)
    assert replayed_chunk_count == chunk_count > 2, "the replayed stream is the recorded SSE, event for event"
    assert (relay.recorded, relay.replayed, relay.unmatched) == (2, 2, [])


def test_request_only_the_replay_side_sends_is_forwarded_and_listed(relay: ModelRelay, standin: OpenAIStandIn) -> None:
    _chat(relay, "record").invoke(SEATS)
    question = "Where   is the\nlibrary? " + "x" * 300

    answer = _chat(relay, "replay").invoke(question)

    assert len(standin.requests) == 2
    assert answer.text.startswith("I have noted your message: Where")
    (unmatched,) = relay.unmatched
    preview = "Where is the library? " + "x" * (PREVIEW_CHARS - 23) + "…"
    assert unmatched == UnmatchedRequest("POST", "/chat/completions", MODEL, preview, 200)
    assert len(unmatched.preview) == PREVIEW_CHARS
    assert (relay.recorded, relay.replayed) == (1, 0)


def test_unreachable_upstream_answers_502_and_the_relay_keeps_serving() -> None:
    port = _free_port()
    with ModelRelay(upstream=f"http://127.0.0.1:{port}/v1") as relay:
        for side in ("record", "replay"):
            refused = _post(relay.base_url(side), _body("hi"))
            assert refused.status_code == 502
            assert refused.json()["error"]["type"] == UNREACHABLE
            assert f"127.0.0.1:{port}" in refused.json()["error"]["message"]
        assert relay.recorded == 0
        assert [(u.preview, u.status) for u in relay.unmatched] == [("hi", 502)]

        with OpenAIStandIn(port=port):  # the upstream comes up: the same relay forwards and records
            recorded = _post(relay.base_url("record"), _body("hi"))
            replayed = _post(relay.base_url("replay"), _body("hi"))

        assert (recorded.status_code, recorded.headers[RELAY_HEADER]) == (200, "recorded")
        assert (replayed.headers[RELAY_HEADER], replayed.content) == ("replayed", recorded.content)


def test_identical_requests_replay_their_answers_in_order(relay: ModelRelay, standin: OpenAIStandIn) -> None:
    first = _chat(relay, "record").invoke(SEATS)
    standin.model = OfflineChatModel(preamble=False)  # the same request, another answer (as a sampled model gives)
    second = _chat(relay, "record").invoke(SEATS)
    assert (first.content, second.content) == ("Let me check. ", "")

    replays = [_chat(relay, "replay").invoke(SEATS) for _ in range(3)]

    assert [_seen(r) for r in replays] == [_seen(first), _seen(second), _seen(second)]
    assert (len(standin.requests), relay.recorded, relay.replayed) == (2, 2, 3)


def test_each_replay_lane_gets_the_recorded_answers_from_the_first(relay: ModelRelay, standin: OpenAIStandIn) -> None:
    """A2 and B replay the same recording: each starts at the first answer (one shared cursor would hand
    B the answers A2 had already used, and B would differ from A for a reason of the relay's)."""
    first = _chat(relay, "record").invoke(SEATS)
    standin.model = OfflineChatModel(preamble=False)
    second = _chat(relay, "record").invoke(SEATS)
    lanes = {}
    for lane in ("A2", "B"):
        lanes[lane] = [_seen(_chat(relay, "replay", lane).invoke(SEATS)) for _ in range(2)]
    assert lanes == {"A2": [_seen(first), _seen(second)], "B": [_seen(first), _seen(second)]}
    assert len(standin.requests) == 2
    with pytest.raises(ValueError, match="lane"):
        relay.base_url("record", lane="B")


def test_concurrent_requests_are_recorded_and_replayed_each_under_its_own_key(relay: ModelRelay, standin: OpenAIStandIn) -> None:
    prompts = [f"seats on floor {floor}?" for floor in range(1, 9)] * 2  # each one twice: two recordings a key

    with ThreadPoolExecutor(max_workers=8) as pool:
        recorded = list(pool.map(lambda prompt: _chat(relay, "record").invoke(prompt), prompts))
        replayed = list(pool.map(lambda prompt: _chat(relay, "replay").invoke(prompt), prompts))

    assert sorted(_seen(r) for r in replayed) == sorted(_seen(r) for r in recorded)
    assert [r.tool_calls[0]["args"] for r in replayed] == [{"floor": floor} for floor in [*range(1, 9)] * 2]
    assert (len(standin.requests), relay.recorded, relay.replayed, relay.unmatched) == (16, 16, 16, [])


def test_the_key_ignores_json_key_order_and_spacing(relay: ModelRelay, standin: OpenAIStandIn) -> None:
    recorded = _post(relay.base_url("record"), _body("hi"))
    replayed = _post(relay.base_url("replay"), _body("hi", reverse=True).replace(": ", ":"))
    other = _post(relay.base_url("replay"), _body("hi there"))

    assert replayed.headers[RELAY_HEADER] == "replayed"
    assert (replayed.status_code, replayed.content) == (recorded.status_code, recorded.content)
    assert other.headers[RELAY_HEADER] == "forwarded"
    assert len(standin.requests) == 2


def test_paths_and_sides_outside_record_and_replay_are_refused(relay: ModelRelay, standin: OpenAIStandIn) -> None:
    with pytest.raises(ValueError, match="record, replay"):
        relay.base_url("live")  # type: ignore[arg-type]  # the wrong side on purpose
    origin = relay.base_url("record").removesuffix("/record/v1")
    refused = httpx.post(f"{origin}/v1/chat/completions", content=_body("hi"), headers=AUTH, trust_env=False)
    assert refused.status_code == 404
    assert refused.json()["error"]["type"] == "relay_unknown_path"
    assert standin.requests == []
