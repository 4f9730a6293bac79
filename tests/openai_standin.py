"""A stand-in for the OpenAI service, for tests: Chat Completions over HTTP on loopback.

`OpenAIStandIn` serves ``POST /v1/chat/completions`` on ``127.0.0.1`` (a free
port) the way api.openai.com does, so `langchain_openai.ChatOpenAI` (pointed at
it with ``OPENAI_BASE_URL`` and a dummy key) runs its real client code: the
openai SDK's HTTP and SSE parsing, ``beta.chat.completions.stream`` for
structured output, and langchain-openai's chunk conversion.

What it decides is not its own: it converts the request's messages to LangChain
messages and asks `OfflineChatModel.decide` (graphs/common/offline.py), with the
request's tools and tool choice, or with the ``response_format`` JSON schema
bound as a forced tool (what the offline model's ``with_structured_output``
does). So the OpenAI path and the offline path must give the same answers, and a
difference is a difference in how the graphs handle ChatOpenAI's chunks.

What it reproduces of the wire (all of it pure, in `completion_chunks` and
`completion_body`, so unit tests need no socket):

* streaming: ``text/event-stream`` in chunked transfer encoding, one
  ``data: {json}`` event per chunk, ``data: [DONE]`` last. The first delta
  carries the role (``content: ""``, or ``content: null`` with the first tool
  call when there is no text), then small content deltas (text split into
  pieces of at most four characters, leading spaces attached, as BPE tokens
  are), then per tool call a delta with ``index``, ``id``, ``type`` and the
  function name (``arguments: ""``) followed by argument fragments, then an
  empty delta with ``finish_reason`` (``stop`` or ``tool_calls``), then, when
  ``stream_options.include_usage`` is set, a chunk with ``choices: []`` and the
  usage (and ``usage: null`` on every chunk before it);
* ``stream: false``: one ``chat.completion`` object, ``content: null`` when the
  answer is only tool calls;
* ``response_format: {"type": "json_schema"}``: the answer is the JSON object
  as text content (compact, UTF-8), and strict schemas are checked the way
  OpenAI refuses them (every property required, ``additionalProperties: false``);
* OpenAI's 400s for a conversation it would refuse: an assistant message with
  ``tool_calls`` not followed by a tool message for each id, a tool message
  answering no call, ``tool_choice`` naming no tool; 401 without a bearer key;
  404 for other paths. Error bodies are ``{"error": {message, type, param, code}}``.

``POST /v1/embeddings`` answers a deterministic unit vector per input (text or token ids), the
dimensions asked for (1536 by default, text-embedding-3-small's), as floats or as OpenAI's base64
little-endian float32 (``encoding_format``), so a store's semantic index (``"embed":
"openai:text-embedding-3-small"``) works with the same client code.

The decisions are pluggable: ``OpenAIStandIn(model=...)`` takes anything with the offline model's
``decide(messages, tools, tool_choice)`` (`Decider`); tests/scripted_standin.py is one that follows
directives written in the conversation, for projects that are not this repo's graphs.

`OpenAIStandIn.handle` answers one request; the HTTP server only writes its
reply (one chunked-encoding chunk per SSE event, flushed), and
`OpenAIStandIn.transport` serves the same replies as an ``httpx.MockTransport``
for the socket-free unit lane. Every request is recorded (`requests`), so a test
can prove the server was really used. Run it by hand with
``python -m tests.openai_standin [--port N]``.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import hashlib
import itertools
import json
import re
import struct
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Protocol

import httpx
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from graphs.common.offline import OfflineChatModel

HOST = "127.0.0.1"
COMPLETIONS_PATH = "/v1/chat/completions"
EMBEDDINGS_PATH = "/v1/embeddings"
DEFAULT_DIMENSIONS = 1536
"""text-embedding-3-small's (and -ada-002's) length, when the request names none."""
SYSTEM_FINGERPRINT = "fp_standin01"
SNAPSHOTS = {"gpt-4o-mini": "gpt-4o-mini-2024-07-18", "gpt-4o": "gpt-4o-2024-08-06"}
"""OpenAI answers with the dated snapshot of the model alias it was asked for."""

_PIECE = re.compile(r"\s*\S{1,4}|\s+")
_ARGUMENT_PIECE = 6
_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_MESSAGE_NAME = re.compile(r"^[^\s<|\\/>]+$")


class RequestError(Exception):
    """A request OpenAI would refuse; becomes its JSON error body."""

    def __init__(self, status: int, message: str, *, param: str | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.param = param
        self.code = code

    def body(self) -> dict[str, Any]:
        return {"error": {"message": str(self), "type": "invalid_request_error", "param": self.param, "code": self.code}}


class Decided(Protocol):
    """A decision: text, tool calls (``{"name", "args", "id"}``), or both."""

    @property
    def text(self) -> str: ...

    @property
    def tool_calls(self) -> Sequence[Mapping[str, Any]]: ...


class Decider(Protocol):
    """What decides the answers: the offline model, or tests/scripted_standin.py's `ScriptedModel`."""

    def decide(
        self, messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]] = (), tool_choice: str | None = None
    ) -> Decided: ...


@dataclass(frozen=True)
class Answer:
    """What the stand-in answers: text (JSON text for a schema), tool calls, or both."""

    text: str = ""
    tool_calls: tuple[dict[str, Any], ...] = ()

    @property
    def finish_reason(self) -> str:
        return "tool_calls" if self.tool_calls else "stop"


@dataclass
class RecordedRequest:
    """One request the stand-in received."""

    path: str
    body: dict[str, Any]
    status: int = 200

    @property
    def streamed(self) -> bool:
        return bool(self.body.get("stream"))

    @property
    def tool_names(self) -> list[str]:
        return [t["function"]["name"] for t in self.body.get("tools") or ()]

    @property
    def schema_name(self) -> str | None:
        response_format = self.body.get("response_format") or {}
        if response_format.get("type") != "json_schema":
            return None
        return str(response_format["json_schema"]["name"])


# -- request -> LangChain messages -> the offline model's decision -------------


def _text(content: Any) -> str:
    if content is None or isinstance(content, str):
        return content or ""
    return "".join(part.get("text", "") for part in content if isinstance(part, Mapping) and part.get("type") == "text")


def to_langchain_messages(wire: Sequence[Mapping[str, Any]]) -> list[BaseMessage]:
    """The request's ``messages`` as LangChain messages; refuses what OpenAI refuses."""
    if not wire:
        raise RequestError(400, "[] is too short - 'messages'", param="messages")
    out: list[BaseMessage] = []
    pending: dict[str, int] = {}
    for index, message in enumerate(wire):
        role = message.get("role")
        if message.get("name") is not None and not _MESSAGE_NAME.match(message["name"]):
            raise RequestError(
                400,
                f"Invalid 'messages[{index}].name': string does not match pattern. Expected a "
                "string that matches the pattern '^[^\\s<|\\\\/>]+$'.",
                param=f"messages[{index}].name",
                code="invalid_value",
            )
        if role != "tool" and pending:
            raise _unanswered(pending)
        if role in ("system", "developer"):
            out.append(SystemMessage(_text(message.get("content"))))
        elif role == "user":
            out.append(HumanMessage(_text(message.get("content")), name=message.get("name")))
        elif role == "assistant":
            calls = []
            for call in message.get("tool_calls") or ():
                arguments = call["function"].get("arguments") or "{}"
                calls.append({"name": call["function"]["name"], "args": json.loads(arguments), "id": call["id"]})
                pending[call["id"]] = index
            out.append(AIMessage(_text(message.get("content")), tool_calls=calls, name=message.get("name")))
        elif role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in pending:
                raise RequestError(
                    400,
                    "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
                    param=f"messages.[{index}].role",
                )
            del pending[call_id]
            out.append(ToolMessage(_text(message.get("content")), tool_call_id=call_id))
        else:
            raise RequestError(
                400,
                f"Invalid value: '{role}'. Supported values are: 'system', 'assistant', "
                "'user', 'function', 'tool', and 'developer'.",
                param=f"messages[{index}].role",
            )
    if pending:
        raise _unanswered(pending)
    return out


def _unanswered(pending: Mapping[str, int]) -> RequestError:
    index = min(pending.values())
    return RequestError(
        400,
        "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
        f"'tool_call_id'. The following tool_call_ids did not have response messages: {', '.join(pending)}",
        param=f"messages.[{index}].role",
    )


def _tool_choice(body: Mapping[str, Any]) -> str | None:
    """The request's ``tool_choice`` as the offline model takes it: a mode or a tool name."""
    choice = body.get("tool_choice")
    if choice is not None and not body.get("tools"):
        raise RequestError(
            400, "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.", param="tool_choice"
        )
    if isinstance(choice, Mapping):
        name = str(choice.get("function", {}).get("name"))
        if name not in [t["function"]["name"] for t in body["tools"]]:
            raise RequestError(400, f"Invalid value for 'tool_choice': tool '{name}' not found in 'tools'.", param="tool_choice")
        return name
    return None if choice is None else str(choice)


def _check_tools(tools: Sequence[Mapping[str, Any]]) -> None:
    for index, tool in enumerate(tools):
        name = tool.get("function", {}).get("name", "")
        if tool.get("type") != "function" or not _TOOL_NAME.match(name):
            raise RequestError(
                400,
                f"Invalid 'tools[{index}].function.name': string does not match pattern. "
                "Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.",
                param=f"tools[{index}].function.name",
                code="invalid_value",
            )


def check_strict_schema(name: str, schema: Mapping[str, Any], path: tuple[str, ...] = ()) -> None:
    """Refuse a strict schema the way OpenAI does: objects need every property in
    ``required`` and ``additionalProperties: false`` (``$defs`` and nested ones too)."""
    where = f"In context=({', '.join(repr(p) for p in path)})"
    if schema.get("type") == "object" or "properties" in schema:
        properties = schema.get("properties") or {}
        missing = [key for key in properties if key not in (schema.get("required") or ())]
        if missing:
            raise RequestError(
                400,
                f"Invalid schema for response_format '{name}': {where}, 'required' is required "
                "to be supplied and to be an array including every key in properties. Missing "
                f"'{missing[0]}'.",
                param="response_format",
                code="invalid_json_schema",
            )
        if schema.get("additionalProperties") is not False:
            raise RequestError(
                400,
                f"Invalid schema for response_format '{name}': {where}, 'additionalProperties' "
                "is required to be supplied and to be false.",
                param="response_format",
                code="invalid_json_schema",
            )
        for key, sub in properties.items():
            check_strict_schema(name, sub, (*path, "properties", key))
    for keyword in ("anyOf", "allOf"):
        for number, sub in enumerate(schema.get(keyword) or ()):
            check_strict_schema(name, sub, (*path, keyword, str(number)))
    if isinstance(schema.get("items"), Mapping):
        check_strict_schema(name, schema["items"], (*path, "items"))
    for key, sub in (schema.get("$defs") or {}).items():
        check_strict_schema(name, sub, (*path, "$defs", key))


def decide(body: Mapping[str, Any], model: Decider | None = None) -> Answer:
    """What the offline model (or ``model``) answers to this Chat Completions request."""
    model = model or OfflineChatModel()
    if not body.get("model"):
        raise RequestError(400, "you must provide a model parameter", param="model")
    messages = to_langchain_messages(body.get("messages") or [])
    tools = list(body.get("tools") or ())
    _check_tools(tools)
    choice = _tool_choice(body)
    response_format = body.get("response_format") or {"type": "text"}
    if response_format.get("type") == "json_schema" and not tools:
        spec = response_format["json_schema"]
        if spec.get("strict"):
            check_strict_schema(spec["name"], spec["schema"])
        schema_tool = {
            "type": "function",
            "function": {"name": spec["name"], "description": spec.get("description", ""), "parameters": spec["schema"]},
        }
        decision = model.decide(messages, [schema_tool], spec["name"])
        (call,) = decision.tool_calls
        return Answer(text=json.dumps(call["args"], ensure_ascii=False, separators=(",", ":")))
    try:
        decision = model.decide(messages, tools, choice)
    except ValueError as exc:
        raise RequestError(400, f"Invalid value for 'tool_choice': {exc}", param="tool_choice") from exc
    return Answer(text=decision.text, tool_calls=tuple(dict(c) for c in decision.tool_calls))


def embedding(item: Any, dimensions: int) -> list[float]:
    """A unit vector of ``dimensions`` that depends on ``item`` only (a text, or token ids)."""
    seed = json.dumps(item, ensure_ascii=False, separators=(",", ":")).encode()
    raw: list[float] = []
    block = 0
    while len(raw) < dimensions:
        digest = hashlib.sha256(seed + block.to_bytes(4, "big")).digest()
        raw.extend((byte - 127.5) / 127.5 for byte in digest)
        block += 1
    vector = raw[:dimensions]
    norm = sum(v * v for v in vector) ** 0.5 or 1.0
    return [v / norm for v in vector]


def embeddings_body(body: Mapping[str, Any]) -> dict[str, Any]:
    """The ``list`` of embeddings OpenAI returns for ``input`` (a text, texts, or token id lists)."""
    if not body.get("model"):
        raise RequestError(400, "you must provide a model parameter", param="model")
    given = body.get("input")
    if given is None or given == [] or given == "":
        raise RequestError(400, "'input' : input must be a string or an array of strings or tokens", param="input")
    items = [given] if isinstance(given, str) or (isinstance(given, list) and given and isinstance(given[0], int)) else given
    dimensions = int(body.get("dimensions") or DEFAULT_DIMENSIONS)
    data = []
    for index, item in enumerate(items):
        vector = embedding(item, dimensions)
        value: Any = vector
        if body.get("encoding_format") == "base64":
            value = base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
        data.append({"object": "embedding", "index": index, "embedding": value})
    tokens = sum(len(i) if isinstance(i, list) else len(text_pieces(str(i))) for i in items)
    return {"object": "list", "data": data, "model": body["model"], "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}


# -- the answer in OpenAI's wire format (pure) ---------------------------------


def text_pieces(text: str) -> list[str]:
    """``text`` as small deltas: up to four characters each, leading spaces attached."""
    return _PIECE.findall(text)


def argument_pieces(arguments: str) -> list[str]:
    return [arguments[i : i + _ARGUMENT_PIECE] for i in range(0, len(arguments), _ARGUMENT_PIECE)] or [""]


def _arguments(call: Mapping[str, Any]) -> str:
    return json.dumps(call["args"], ensure_ascii=False, separators=(",", ":"))


def usage(body: Mapping[str, Any], answer: Answer) -> dict[str, Any]:
    """Token counts in OpenAI's shape (counted as pieces, which is close enough)."""
    prompt = sum(len(text_pieces(_text(m.get("content")))) for m in body.get("messages") or ())
    completion = len(text_pieces(answer.text)) + sum(len(argument_pieces(_arguments(c))) for c in answer.tool_calls)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def _envelope(completion_id: str, model: str, created: int, obj: str) -> dict[str, Any]:
    return {
        "id": completion_id,
        "object": obj,
        "created": created,
        "model": SNAPSHOTS.get(model, model),
        "service_tier": "default",
        "system_fingerprint": SYSTEM_FINGERPRINT,
    }


def _tool_call_deltas(calls: Sequence[Mapping[str, Any]]) -> Iterator[dict[str, Any]]:
    for index, call in enumerate(calls):
        yield {"index": index, "id": call["id"], "type": "function", "function": {"name": call["name"], "arguments": ""}}
        for piece in argument_pieces(_arguments(call)):
            yield {"index": index, "function": {"arguments": piece}}


def completion_chunks(body: Mapping[str, Any], answer: Answer, *, completion_id: str, created: int) -> list[dict[str, Any]]:
    """The ``chat.completion.chunk`` objects OpenAI streams for ``answer``."""
    envelope = _envelope(completion_id, body["model"], created, "chat.completion.chunk")
    with_usage = bool((body.get("stream_options") or {}).get("include_usage"))

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        out = {**envelope, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}]}
        if with_usage:
            out["usage"] = None
        return out

    deltas: list[dict[str, Any]] = [{"content": piece} for piece in text_pieces(answer.text)]
    deltas.extend({"tool_calls": [call]} for call in _tool_call_deltas(answer.tool_calls))
    first = {"role": "assistant", "content": "", "refusal": None}
    if not answer.text and answer.tool_calls:
        first = {"role": "assistant", "content": None, **deltas.pop(0), "refusal": None}
    chunks = [chunk(first), *(chunk(delta) for delta in deltas), chunk({}, answer.finish_reason)]
    if with_usage:
        chunks.append({**envelope, "choices": [], "usage": usage(body, answer)})
    return chunks


def completion_body(body: Mapping[str, Any], answer: Answer, *, completion_id: str, created: int) -> dict[str, Any]:
    """The ``chat.completion`` object OpenAI returns for ``stream: false``."""
    message: dict[str, Any] = {
        "role": "assistant",
        "content": answer.text or (None if answer.tool_calls else ""),
        "refusal": None,
        "annotations": [],
    }
    if answer.tool_calls:
        message["tool_calls"] = [
            {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": _arguments(c)}}
            for c in answer.tool_calls
        ]
    return {
        **_envelope(completion_id, body["model"], created, "chat.completion"),
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": answer.finish_reason}],
        "usage": usage(body, answer),
    }


def sse_event(chunk: Mapping[str, Any] | str) -> bytes:
    """One server-sent event as OpenAI writes it (``data: [DONE]`` for the end)."""
    data = chunk if isinstance(chunk, str) else json.dumps(chunk, ensure_ascii=False, separators=(",", ":"))
    return f"data: {data}\n\n".encode()


# -- one request, answered (pure apart from the request log) ----------------------


@dataclass(frozen=True)
class Reply:
    """An HTTP answer: a JSON document, or (``streamed``) the SSE events in order."""

    status: int
    parts: tuple[bytes, ...]
    streamed: bool = False

    @property
    def headers(self) -> dict[str, str]:
        if self.streamed:
            return {"Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache"}
        return {"Content-Type": "application/json"}


def _json_reply(status: int, payload: Mapping[str, Any]) -> Reply:
    return Reply(status, (json.dumps(payload, ensure_ascii=False).encode(),))


# -- the HTTP server -------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the recorded requests are the log."""

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._send(self.server.standin.handle("POST", self.path, self.headers.get("Authorization"), raw))

    def do_GET(self) -> None:
        self._send(self.server.standin.handle("GET", self.path, self.headers.get("Authorization"), b""))

    def _send(self, reply: Reply) -> None:
        self.send_response(reply.status)
        for name, value in reply.headers.items():
            self.send_header(name, value)
        if not reply.streamed:
            (data,) = reply.parts
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for event in reply.parts:  # one HTTP chunk per event, flushed: the client sees each delta as sent
            self.wfile.write(f"{len(event):x}\r\n".encode() + event + b"\r\n")
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    standin: OpenAIStandIn

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client closing its keep-alive connection is normal; anything else is printed."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


@dataclass
class OpenAIStandIn:
    """The stand-in: `handle` answers one request; as a context manager it serves
    HTTP on loopback in a background thread; `transport` serves an
    ``httpx.MockTransport`` instead (no socket, for the unit lane)."""

    host: str = HOST
    port: int = 0
    model: Decider = field(default_factory=OfflineChatModel)
    requests: list[RecordedRequest] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _ids: Iterator[int] = field(default_factory=itertools.count, repr=False)
    _server: _Server | None = field(default=None, repr=False)
    _thread: threading.Thread | None = field(default=None, repr=False)

    @property
    def base_url(self) -> str:
        """What ``OPENAI_BASE_URL`` should be."""
        return f"http://{self.host}:{self.port}/v1"

    def handle(self, method: str, path: str, authorization: str | None, raw: bytes) -> Reply:
        """Answer one request as OpenAI would; the request is recorded."""
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            body = None
        record = RecordedRequest(path=path, body=body if isinstance(body, dict) else {})
        with self._lock:
            self.requests.append(record)
        try:
            reply = self._answer(method, path, authorization, body)
        except RequestError as exc:
            reply = _json_reply(exc.status, exc.body())
        record.status = reply.status
        return reply

    def _answer(self, method: str, path: str, authorization: str | None, body: Any) -> Reply:
        route = (method, path.split("?", 1)[0])
        if route not in (("POST", COMPLETIONS_PATH), ("POST", EMBEDDINGS_PATH)):
            raise RequestError(404, f"Invalid URL ({method} {path})")
        if not (authorization or "").startswith("Bearer ") or not (authorization or "")[7:].strip():
            raise RequestError(
                401,
                "You didn't provide an API key. You need to provide your API key in an "
                "Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
            )
        if not isinstance(body, dict):
            raise RequestError(400, "We could not parse the JSON body of your request.")
        if route[1] == EMBEDDINGS_PATH:
            return _json_reply(200, embeddings_body(body))
        answer = decide(body, self.model)
        completion_id, created = self._next_id(), int(time.time())
        if not body.get("stream"):
            return _json_reply(200, completion_body(body, answer, completion_id=completion_id, created=created))
        chunks = completion_chunks(body, answer, completion_id=completion_id, created=created)
        return Reply(200, (*(sse_event(c) for c in chunks), sse_event("[DONE]")), streamed=True)

    def _next_id(self) -> str:
        with self._lock:
            number = next(self._ids)
        return "chatcmpl-" + hashlib.sha1(f"{id(self)}:{number}".encode()).hexdigest()[:29]

    def transport(self) -> httpx.MockTransport:
        """An ``httpx.MockTransport`` answering through `handle` (pass it as ChatOpenAI's
        ``http_client=httpx.Client(transport=...)``)."""

        def answer(request: httpx.Request) -> httpx.Response:
            reply = self.handle(
                request.method, request.url.raw_path.decode(), request.headers.get("Authorization"), request.read()
            )
            content = iter(reply.parts) if reply.streamed else reply.parts[0]
            return httpx.Response(reply.status, headers=reply.headers, content=content)

        return httpx.MockTransport(answer)

    def start(self) -> OpenAIStandIn:
        self._server = _Server((self.host, self.port), _Handler)
        self._server.standin = self
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, name="openai-standin", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> OpenAIStandIn:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Serve the OpenAI stand-in on loopback (for manual runs).")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    with OpenAIStandIn(port=args.port) as standin:
        print(f"OPENAI_BASE_URL={standin.base_url} OPENAI_API_KEY=dummy", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()


if __name__ == "__main__":
    main()
