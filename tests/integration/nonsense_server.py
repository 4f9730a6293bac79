"""A stand-in HTTP server on loopback that answers like an Agent Server, except where it answers nonsense.

Not an Agent Server: a `http.server` that knows the few routes `playbook` reads (and LangSmith's run
query, for `playbook activity`) and answers them with a minimal, well-formed answer about one graph
(``greeter``, tests/fixtures/layout_projects/loose) and one paused thread, unless the route is in the
server's ``scope``: then it answers with the nonsense ``kind`` names (HTML, an empty body, JSON cut off,
a scalar, lists and objects swapped, objects without their keys, keys of the wrong types, a 200 that
carries an error, a body shorter than its Content-Length, an event stream of garbage), or stalls in a
way of `STALLS` (the same full page whatever the offset, a new full page every time, a header line
every `TRICKLE_SECONDS`, one byte of the body every `TRICKLE_SECONDS`): a client that only times out
single reads waits for those forever.
"""

from __future__ import annotations

import itertools
import json
import re
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

KINDS = (
    "html",
    "empty",
    "cut_json",
    "scalar",
    "flipped",
    "missing_keys",
    "wrong_types",
    "error_payload",
    "short_body",
    "sse_garbage",
)
"""Every kind of nonsense the stand-in answers."""

STALLS = ("endless_pages", "fresh_pages", "header_trickle", "body_trickle")
"""Every way the stand-in stalls: a paged route answers a full page of the same items whatever the offset (or
``before``, or cursor), or a full page of new items every time (a search that never ends); any route sends its
headers, or its body, a line or a byte at a time without end."""

TRICKLE_SECONDS = 0.5
"""Between two header lines, or two bytes of a body, of a trickle: far under any read timeout."""

PAGED = re.compile(r"^/(assistants/search|threads/search|threads/[^/]+/history|store/items/search|api/v2/runs/query)$")
"""The routes `playbook` pages through: `endless_pages` and `fresh_pages` answer them; other routes answer well."""

SCOPES = {
    "all": re.compile(r"^/(?!ok$).*"),
    "threads": re.compile(r"^/threads/(search|count)$"),
    "thread": re.compile(r"^/threads/[^/]+(/state.*|/history)?$"),
    "ok": re.compile(r"^/ok$"),
    "langsmith": re.compile(r"^/api/"),
}
"""Which routes answer nonsense: every one but ``/ok``; thread listing; one thread's reads; ``/ok`` alone."""

THREAD = "00000000-0000-0000-0000-000000000001"
ASSISTANT = "00000000-0000-0000-0000-0000000000a1"
CHECKPOINT = "1f000000-0000-0000-0000-000000000001"


def _state() -> dict[str, Any]:
    return {
        "values": {"name": "kim", "messages": [{"type": "human", "content": "hello", "id": "m1"}]},
        "next": ["greet"],
        "tasks": [{"id": "task-1", "name": "greet", "path": ["__pregel_pull", "greet"], "error": None, "interrupts": []}],
        "metadata": {"graph_id": "greeter", "source": "loop", "step": 1},
        "created_at": "2026-01-01T00:00:00+00:00",
        "checkpoint": {"thread_id": THREAD, "checkpoint_ns": "", "checkpoint_id": CHECKPOINT},
        "parent_checkpoint": None,
        "checkpoint_id": CHECKPOINT,
        "parent_checkpoint_id": None,
    }


def good_answer(method: str, path: str, body: Any) -> tuple[int, Any]:
    """What a small Agent Server would answer (404 for what it does not know)."""
    offset = body.get("offset", 0) if isinstance(body, dict) else 0
    if path == "/ok":
        return 200, {"ok": True}
    if path == "/assistants/search":
        assistant = {
            "assistant_id": ASSISTANT,
            "graph_id": "greeter",
            "name": "greeter",
            "metadata": {"created_by": "system"},
            "context": {},
            "config": {},
            "version": 1,
        }
        return 200, [] if offset else [assistant]
    if path == f"/assistants/{ASSISTANT}/graph":
        return 200, {
            "nodes": [{"id": "__start__"}, {"id": "greet"}, {"id": "__end__"}],
            "edges": [{"source": "__start__", "target": "greet"}, {"source": "greet", "target": "__end__"}],
        }
    if path == f"/assistants/{ASSISTANT}/schemas":
        schema = {"type": "object", "properties": {"name": {"type": "string"}, "greeting": {"type": "string"}}}
        return 200, {"graph_id": "greeter", "state_schema": schema, "input_schema": schema, "output_schema": schema}
    if path == f"/assistants/{ASSISTANT}/subgraphs":
        return 200, {}
    if path == "/threads/count":
        return 200, 1
    if path == "/threads/search":
        thread = {
            "thread_id": THREAD,
            "status": "interrupted",
            "values": {"name": "kim"},
            "interrupts": {},
            "metadata": {"graph_id": "greeter", "assistant_id": ASSISTANT},
            "state_updated_at": "2026-01-01T00:00:00+00:00",
            "created_at": "2026-01-01T00:00:00+00:00",
            "updated_at": "2026-01-01T00:00:00+00:00",
        }
        return 200, [] if offset else [thread]
    if path == f"/threads/{THREAD}":
        return 200, {"thread_id": THREAD, "status": "interrupted", "metadata": {"graph_id": "greeter"}, "values": {}}
    if path.startswith(f"/threads/{THREAD}/state"):
        if method == "POST":
            return 200, {"checkpoint": {"checkpoint_id": "1f000000-0000-0000-0000-000000000002"}}
        return 200, _state()
    if path == f"/threads/{THREAD}/history":
        return 200, [_state()]
    if path == "/api/v2/sessions":  # LangSmith (playbook activity)
        return 200, {"items": [{"id": "00000000-0000-0000-0000-0000000000b1", "name": "default"}], "next_cursor": None}
    if path == "/api/v2/runs/query":  # LangSmith (playbook activity)
        return 200, {"runs": [], "cursors": {"next": None}}
    return 404, {"detail": "Not Found"}


def _flip(answer: Any) -> Any:
    return {"items": answer} if isinstance(answer, list) else [answer]


def _strip(answer: Any) -> Any:
    if isinstance(answer, list):
        return [{} for _ in answer] or [{}]
    return {} if isinstance(answer, dict) else None


def _mistype(answer: Any) -> Any:
    wrong: Any = {
        "thread_id": 7,
        "assistant_id": ["x"],
        "graph_id": 3,
        "status": {"busy": True},
        "values": "not an object",
        "metadata": ["graph_id"],
        "interrupts": "none",
        "next": "greet",
        "tasks": {"greet": 1},
        "checkpoint": "c1",
        "nodes": "greet",
        "edges": 5,
        "state_schema": [],
        "runs": "none",
    }
    if isinstance(answer, list):
        return [wrong]
    if isinstance(answer, dict):
        return {key: wrong.get(key, 12345) for key in answer} or wrong
    return "many"


def full_page(path: str, body: Any, serial: int) -> Any:
    """A full page of the paged route ``path`` (as many items as ``body`` asks for), the items named by
    ``serial``: the same serial gives the same page."""
    asked = body if isinstance(body, dict) else {}
    size = int(asked.get("limit") or asked.get("page_size") or 10)
    names = [f"00000000-0000-{serial:04d}-0000-{i:012d}" for i in range(size)]
    if path == "/assistants/search":
        first = good_answer("POST", path, {})[1][0]
        others = [{**first, "assistant_id": name, "metadata": {"created_by": "user"}} for name in names[1:]]
        return [first, *others]
    if path == "/threads/search":
        thread = good_answer("POST", path, {})[1][0]
        return [{**thread, "thread_id": name, "status": "idle", "interrupts": {}} for name in names]
    if path.endswith("/history"):
        return [{**_state(), "checkpoint": {"thread_id": THREAD, "checkpoint_ns": "", "checkpoint_id": n}} for n in names]
    if path == "/store/items/search":
        return {"items": [{"namespace": ["notes"], "key": name, "value": {}} for name in names]}
    run = {"name": "greet", "run_type": "chain", "start_time": "2026-01-01T00:00:00Z", "tags": ["graph:step:1"]}
    run["metadata"] = {"graph_id": "greeter", "langgraph_node": "greet"}
    items = [{**run, "id": name, "trace_id": name} for name in names]
    return {"items": items, "next_cursor": f"page-{serial}"}  # LangSmith's run query


class StandIn(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, kind: str, scope: str) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.kind = kind
        self.scope = SCOPES[scope]
        self.seen: list[str] = []
        self.stopping = threading.Event()
        """Set when the stand-in shuts down: every trickle ends."""
        self.serials = itertools.count(1)
        """The serials of `fresh_pages`' pages."""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hung up mid-answer (a command cut off at its deadline) is not the stand-in's error: the
        default prints a traceback on the test's stderr, which the tests read as the command's."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)

    def answer(self, kind: str, scope: str = "all") -> StandIn:
        """From now on, answer ``kind`` nonsense on the routes of ``scope``; forget the requests seen."""
        self.kind, self.scope, self.seen = kind, SCOPES[scope], []
        return self

    def hit(self, scope: str) -> bool:
        """Whether a request since `answer` went to a route of ``scope``."""
        return any(SCOPES[scope].match(seen.split(" ", 1)[1]) for seen in self.seen)


class _Handler(BaseHTTPRequestHandler):
    server: StandIn
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        path = self.path.split("?", 1)[0]
        self.server.seen.append(f"{self.command} {path}")
        status, answer = good_answer(self.command, path, body)
        if not self.server.scope.match(path):
            return self._send(status, "application/json", json.dumps(answer).encode())
        kind = self.server.kind
        if kind in ("endless_pages", "fresh_pages"):
            if not PAGED.match(path):
                return self._send(status, "application/json", json.dumps(answer).encode())
            serial = next(self.server.serials) if kind == "fresh_pages" else 0
            return self._send(200, "application/json", json.dumps(full_page(path, body, serial)).encode())
        if kind in ("header_trickle", "body_trickle"):
            return self._trickle(kind, json.dumps(answer).encode())
        if kind == "html":
            return self._send(200, "text/html", b"<!doctype html><html><body><h1>Welcome to nginx!</h1></body></html>")
        if kind == "empty":
            return self._send(200, "application/json", b"")
        if kind == "cut_json":
            return self._send(200, "application/json", json.dumps(answer).encode()[:9] or b"[{")
        if kind == "scalar":
            return self._send(200, "application/json", b'"ok"')
        if kind == "flipped":
            return self._send(200, "application/json", json.dumps(_flip(answer)).encode())
        if kind == "missing_keys":
            return self._send(200, "application/json", json.dumps(_strip(answer)).encode())
        if kind == "wrong_types":
            return self._send(200, "application/json", json.dumps(_mistype(answer)).encode())
        if kind == "error_payload":
            return self._send(200, "application/json", b'{"error": "InternalError", "message": "database is locked"}')
        if kind == "short_body":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "4096")
            self.end_headers()
            self.wfile.write(json.dumps(answer).encode()[:20])
            self.wfile.flush()
            self.close_connection = True
            return None
        if kind == "sse_garbage":
            return self._send(
                200, "text/event-stream", b"event: values\ndata: {not json at all\n\nevent: metadata\ndata: [[[\n\n"
            )
        raise AssertionError(kind)

    def _trickle(self, kind: str, payload: bytes) -> None:
        """A 200 whose headers (``header_trickle``), or body (``body_trickle``), come a line or a byte every
        `TRICKLE_SECONDS`, until the client hangs up or the stand-in stops."""
        self.close_connection = True
        stopping = self.server.stopping
        try:
            if kind == "header_trickle":
                self.wfile.write(b"HTTP/1.1 200 OK\r\n")
                for n in itertools.count():
                    self.wfile.write(f"X-Trickle-{n}: {n}\r\n".encode())
                    self.wfile.flush()
                    if stopping.wait(TRICKLE_SECONDS):
                        return
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload) + 100_000))
            self.end_headers()
            for byte in itertools.chain(payload, itertools.repeat(ord(" "))):
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
                if stopping.wait(TRICKLE_SECONDS):
                    return
        except (BrokenPipeError, ConnectionResetError):
            return

    def _send(self, status: int, content_type: str, payload: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _answer  # noqa: N815 - http.server's names


@contextmanager
def nonsense_server(kind: str, scope: str = "all") -> Iterator[StandIn]:
    """A stand-in answering ``kind`` nonsense on the routes of ``scope`` (`SCOPES`), on a free loopback port."""
    server = StandIn(kind, scope)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.stopping.set()
        server.shutdown()
        server.server_close()
