"""The model relay of `playbook shadow`: one loopback endpoint that records side A's model calls and replays them.

A shadow run compares the deployed code (side A, and a second copy A2 that shows the noise) with
a candidate (side B) on copies of live threads. A model is not deterministic, so B is only
comparable with A if it gets A's answers: `ModelRelay` serves the OpenAI wire format (whatever
langchain-openai's ``ChatOpenAI`` sends to ``OPENAI_BASE_URL``) on ``127.0.0.1``, under two bases:

* ``base_url("record")`` (side A): every request is forwarded to the upstream as received, the
  whole answer is read (an SSE stream included) and answered with the same status, content type
  and bytes, and it is stored under the request's key (`request_key`: method, path, canonical
  JSON body). Identical requests keep their answers in order.
* ``base_url("replay")`` (A2 and B): a request whose key was recorded is answered with the
  recorded answer, upstream untouched; the n-th identical request gets the n-th recorded answer
  (past the end, the last one), counted per replay lane (``base_url("replay", lane="B")``), so A2
  and B each start at the first.

A request only the replay side sends (B asked the model something A never asked, or asked it
differently) has no recorded answer: it is forwarded upstream like a recorded one, answered with
what the upstream says, stored nowhere, and listed in `ModelRelay.unmatched` (`UnmatchedRequest`),
which is where B's model conversation first differs from A's. When the upstream cannot be reached,
the caller gets a 502 with an OpenAI-shaped error body (type ``relay_upstream_unreachable``), and
the relay goes on serving.

Nothing but the configured upstream is contacted: redirects are not followed, and the proxy
variables of the environment (``HTTP_PROXY`` and the like) are not read. The Authorization header
and the other end-to-end headers are forwarded as received (hop-by-hop ones, Host and
Content-Length are not, nor Accept-Encoding: the answer is stored decoded). Thread-safe: the
server answers requests concurrently, and the recordings and counters are kept under one lock.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Final, Literal, Self, get_args

import httpx

from migrations_playbook.errors import UsageError

Side = Literal["record", "replay"]
"""Which base a caller is given: ``record`` (side A) or ``replay`` (A2 and B)."""

SIDES: Final[tuple[Side, ...]] = get_args(Side)

HOST: Final = "127.0.0.1"
UPSTREAM_ENV: Final = "OPENAI_BASE_URL"
"""Read for the upstream when none is given (the variable langchain-openai reads)."""
DEFAULT_UPSTREAM: Final = "https://api.openai.com/v1"
PREVIEW_CHARS: Final = 200
UNREACHABLE: Final = "relay_upstream_unreachable"
"""The error ``type`` of the 502 answered when the upstream cannot be reached."""
RELAY_HEADER: Final = "X-Playbook-Relay"
"""Response header saying how the relay answered: ``recorded``, ``replayed``, ``forwarded`` or ``refused``."""

_CONNECT_TIMEOUT: Final = 10.0
_POLL_INTERVAL: Final = 0.05
"""How often the serving thread looks for `ModelRelay.stop` (the stdlib's 0.5 s makes every stop that slow)."""
_NOT_FORWARDED: Final = frozenset(
    {
        # hop-by-hop (RFC 9110 7.6.1) and what httpx sets itself
        "connection",
        "keep-alive",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
        # httpx asks for the encodings it decodes: a body stored decoded is served without Content-Encoding
        "accept-encoding",
    }
)


def request_key(method: str, path: str, body: bytes) -> str:
    """The key a request is recorded and looked up under: sha256 of the method, the path below
    ``/v1`` (query included) and the body, as canonical JSON (sorted keys, no spaces) when it
    is JSON, else its raw bytes. Two requests that differ only in key order or spacing share it."""
    try:
        document = json.loads(body)
    except ValueError:  # JSONDecodeError, and UnicodeDecodeError for bytes that are not UTF-8
        payload = b"raw:" + body
    else:
        payload = b"json:" + json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    digest = hashlib.sha256()
    for part in (method.upper().encode(), path.encode(), payload):
        digest.update(len(part).to_bytes(8, "big"))
        digest.update(part)
    return digest.hexdigest()


@dataclass(frozen=True)
class UnmatchedRequest:
    """A request the replay side sent that was never recorded; forwarded upstream instead."""

    method: str
    path: str
    """Below ``/v1``, query included (``/chat/completions``)."""
    model: str | None
    """The body's ``model``, when it is a JSON object that names one."""
    preview: str
    """The last message's text, whitespace collapsed, at most `PREVIEW_CHARS` characters."""
    status: int
    """What the caller was answered (502: the upstream could not be reached)."""


def describe_request(method: str, path: str, body: bytes, status: int) -> UnmatchedRequest:
    """An `UnmatchedRequest` for a request: its model and the text of its last message (Chat
    Completions ``messages``, else Responses ``input``, else legacy ``prompt``)."""
    try:
        document = json.loads(body)
    except ValueError:
        document = None
    if not isinstance(document, Mapping):
        return UnmatchedRequest(method, path, None, "", status)
    model = document.get("model")
    return UnmatchedRequest(method, path, model if isinstance(model, str) else None, _preview(document), status)


def _preview(document: Mapping[str, Any]) -> str:
    last: Any = None
    for field in ("messages", "input", "prompt"):
        value = document.get(field)
        if isinstance(value, list) and value:
            last = value[-1]
            break
        if isinstance(value, str):
            last = value
            break
    if isinstance(last, Mapping):
        last = last.get("content")
    text = " ".join(_text(last).split())
    return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"


def _text(content: Any) -> str:
    """A message content's text: a string, or the text of its parts (``{"type": "text", "text": ...}``)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(_text(part.get("text")) if isinstance(part, Mapping) else _text(part) for part in content)
    return ""


@dataclass(frozen=True)
class _Answer:
    """An HTTP answer as the relay stores and writes it."""

    status: int
    content_type: str | None
    body: bytes


def _error(status: int, message: str, error_type: str) -> _Answer:
    body = {"error": {"message": message, "type": error_type, "param": None, "code": None}}
    return _Answer(status, "application/json", json.dumps(body).encode())


def _route(raw_path: str) -> tuple[Side, str, str] | None:
    """``/record/v1/chat/completions`` -> ``("record", "", "/chat/completions")``; a replay lane's
    ``/replay-B/v1/...`` -> ``("replay", "B", ...)``; None for any other path."""
    for side in SIDES:
        for prefix, lane in ((f"/{side}/v1", ""), *_lane_prefix(raw_path, side)):
            rest = raw_path[len(prefix) :]
            if raw_path.startswith(prefix) and rest[:1] in ("", "/", "?"):
                return side, lane, rest
    return None


def _lane_prefix(raw_path: str, side: Side) -> list[tuple[str, str]]:
    """The ``/replay-<lane>/v1`` prefix of ``raw_path`` with its lane, if it has one."""
    head = f"/{side}-"
    if side != "replay" or not raw_path.startswith(head):
        return []
    lane = raw_path[len(head) :].split("/", 1)[0]
    return [(f"{head}{lane}/v1", lane)] if lane.isalnum() else []


class ModelRelay:
    """The record/replay relay (see the module docstring); serves HTTP on loopback in a daemon
    thread between `start` and `stop`, or inside ``with ModelRelay() as relay:``.

    ``upstream`` is the API base every request is forwarded to (``https://host/v1``); None means
    ``OPENAI_BASE_URL``, else ``https://api.openai.com/v1``. ``timeout`` bounds one upstream
    answer, in seconds (a streamed one is read whole before it is served)."""

    def __init__(self, upstream: str | None = None, *, timeout: float = 600.0) -> None:
        base = upstream if upstream is not None else os.environ.get(UPSTREAM_ENV) or DEFAULT_UPSTREAM
        try:
            url = httpx.URL(base)
        except httpx.InvalidURL as exc:
            raise UsageError(f"model relay: upstream {base!r} is not a URL: {exc}") from exc
        if url.scheme not in ("http", "https") or not url.host:
            raise UsageError(f"model relay: upstream {base!r} must be an http(s) URL such as {DEFAULT_UPSTREAM}")
        self.upstream: Final = base.rstrip("/")
        """Where requests are forwarded; a path below ``/<side>/v1`` is appended to it."""
        self._timeout = httpx.Timeout(timeout, connect=min(timeout, _CONNECT_TIMEOUT))
        self._lock = threading.Lock()
        self._recordings: dict[str, list[_Answer]] = {}
        self._replays: dict[tuple[str, str], int] = {}
        """(replay lane, request key) -> answers of that key the lane was given."""
        self._unmatched: list[UnmatchedRequest] = []
        self._recorded = 0
        self._replayed = 0
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._client: httpx.Client | None = None

    # -- lifecycle -------------------------------------------------------------

    def start(self) -> Self:
        """Bind a free loopback port and serve in a daemon thread (a no-op when already serving)."""
        if self._server is not None:
            return self
        self._client = httpx.Client(timeout=self._timeout, trust_env=False, follow_redirects=False)
        self._server = _Server(self)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": _POLL_INTERVAL}, name="model-relay", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the upstream connections; the recordings and counters stay readable."""
        server, thread, client = self._server, self._thread, self._client
        self._server = self._thread = self._client = None
        if server is not None:
            server.shutdown()
            server.server_close()
        if thread is not None:
            thread.join()
        if client is not None:
            client.close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    # -- what callers read -----------------------------------------------------

    @property
    def port(self) -> int:
        """The loopback port served on (the relay must be started)."""
        if self._server is None:
            raise RuntimeError("model relay: start() it before asking for its port or base URL")
        return self._server.server_address[1]

    def base_url(self, side: Side, *, lane: str = "") -> str:
        """What ``OPENAI_BASE_URL`` should be for one side: ``http://127.0.0.1:PORT/<side>/v1``. A replay
        ``lane`` (letters and digits, e.g. ``B``) keeps its own place in each request's recorded answers,
        so two replaying sides each get the first recorded answer first."""
        if side not in SIDES:
            raise ValueError(f"model relay: side must be one of {', '.join(SIDES)}, not {side!r}")
        if lane and (side != "replay" or not lane.isalnum()):
            raise ValueError(f"model relay: a lane is for the replay side and is letters and digits, not {lane!r}")
        return f"http://{HOST}:{self.port}/{side}{'-' + lane if lane else ''}/v1"

    @property
    def recorded(self) -> int:
        """How many record-side exchanges were stored (an unreachable upstream stores nothing)."""
        with self._lock:
            return self._recorded

    @property
    def replayed(self) -> int:
        """How many replay-side requests were answered from the recordings."""
        with self._lock:
            return self._replayed

    @property
    def unmatched(self) -> list[UnmatchedRequest]:
        """The replay-side requests that were never recorded, in the order they were answered (a copy)."""
        with self._lock:
            return list(self._unmatched)

    # -- one request -----------------------------------------------------------

    def _answer(self, method: str, raw_path: str, headers: list[tuple[str, str]], body: bytes) -> tuple[_Answer, str]:
        """The answer to one request, and how it was found (the `RELAY_HEADER` value)."""
        route = _route(raw_path)
        if route is None:
            message = f"the model relay serves {' and '.join(f'/{side}/v1/...' for side in SIDES)}, not {raw_path}"
            return _error(404, message, "relay_unknown_path"), "refused"
        side, lane, path = route
        key = request_key(method, path, body)
        if side == "replay":
            with self._lock:
                recorded = self._next_recorded(key, lane)
            if recorded is not None:
                return recorded, "replayed"
        answer, reached = self._forward(method, path, headers, body)
        with self._lock:
            if side == "record" and reached:
                self._recordings.setdefault(key, []).append(answer)
                self._recorded += 1
            elif side == "replay":
                self._unmatched.append(describe_request(method, path, body, answer.status))
        return answer, "recorded" if side == "record" and reached else "forwarded"

    def _next_recorded(self, key: str, lane: str) -> _Answer | None:
        """The recorded answer for ``lane``'s next replay of ``key`` (call with the lock held)."""
        answers = self._recordings.get(key)
        if not answers:
            return None
        seen = self._replays.get((lane, key), 0)
        self._replays[(lane, key)] = seen + 1
        self._replayed += 1
        return answers[min(seen, len(answers) - 1)]

    def _forward(self, method: str, path: str, headers: list[tuple[str, str]], body: bytes) -> tuple[_Answer, bool]:
        """The upstream's whole answer, and whether the upstream answered at all."""
        client = self._client
        url = self.upstream + path
        if client is None:
            return _error(503, "the model relay is stopping", UNREACHABLE), False
        try:
            response = client.request(method, url, headers=headers, content=body)
        except httpx.InvalidURL as exc:
            return _error(400, f"the model relay cannot forward to {url}: {exc}", "relay_unknown_path"), False
        except httpx.HTTPError as exc:
            message = f"the model relay could not get an answer from {url}: {type(exc).__name__}: {exc}"
            return _error(502, message, UNREACHABLE), False
        return _Answer(response.status_code, response.headers.get("content-type"), response.content), True


class _Handler(BaseHTTPRequestHandler):
    """Reads one request, asks the relay, writes the answer with a Content-Length (SSE included)."""

    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the relay's counters and `ModelRelay.unmatched` are its log."""

    def do_GET(self) -> None:
        self._relay()

    def do_POST(self) -> None:
        self._relay()

    def do_PUT(self) -> None:
        self._relay()

    def do_PATCH(self) -> None:
        self._relay()

    def do_DELETE(self) -> None:
        self._relay()

    def _relay(self) -> None:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            self.close_connection = True  # the unread body would be taken for the next request
            self._send(_error(411, "the model relay needs a Content-Length", "relay_length_required"), "refused")
            return
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            self.close_connection = True
            self._send(_error(400, "the model relay could not read Content-Length", "relay_length_required"), "refused")
            return
        body = self.rfile.read(length)
        answer, how = self.server.relay._answer(self.command, self.path, _forwarded(self.headers.items()), body)
        self._send(answer, how)

    def _send(self, answer: _Answer, how: str) -> None:
        self.send_response(answer.status)
        if answer.content_type:
            self.send_header("Content-Type", answer.content_type)
        self.send_header("Content-Length", str(len(answer.body)))
        self.send_header(RELAY_HEADER, how)
        self.end_headers()
        self.wfile.write(answer.body)


def _forwarded(headers: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    return [(name, value) for name, value in headers if name.lower() not in _NOT_FORWARDED]


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, relay: ModelRelay) -> None:
        super().__init__((HOST, 0), _Handler)
        self.relay = relay

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client closing its connection is normal; anything else is printed (the server goes on)."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)
