"""A stand-in for LangSmith's trace ingestion, on loopback: it records the runs a tracer posts.

LangSmith's cloud cannot be reached from here, so tests and the fixture script
point a real `langgraph dev` at this stand-in (``LANGSMITH_ENDPOINT``) with
tracing on. It answers what the `langsmith` client's background tracer needs:

* ``GET /info``: a minimal server info (no compression, no multipart flags);
* ``POST /runs/multipart``: 404, so the client falls back to JSON batches
  (its documented fallback);
* ``POST /runs/batch`` (``{"post": [...], "patch": [...]}``), ``POST /runs``,
  ``PATCH /runs/{id}``: recorded, and merged per run id;
* anything else: ``200 {}``.

It is not LangSmith: it stores nothing and answers no queries.
"""

from __future__ import annotations

import gzip
import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

INFO = {
    "version": "0.16.0",
    "license_expiration_time": None,
    "batch_ingest_config": {
        "size_limit": 100,
        "size_limit_bytes": 20_971_520,
        "scale_up_qsize_trigger": 1000,
        "scale_up_nthreads_limit": 16,
        "scale_down_nempty_trigger": 4,
    },
    "instance_flags": {},
}


class TraceRecorder:
    """Run it as a context manager; ``runs`` maps run id -> the merged run as posted."""

    def __init__(self) -> None:
        self.runs: dict[str, dict[str, Any]] = {}
        self.lock = threading.Lock()
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                return

            def _body(self) -> Any:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.headers.get("Content-Encoding") == "gzip":
                    raw = gzip.decompress(raw)
                return json.loads(raw) if raw else None

            def _answer(self, status: int, payload: Any) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                self._answer(200, INFO if self.path.rstrip("/").endswith("/info") else {})

            def do_POST(self) -> None:
                path = self.path.split("?")[0].rstrip("/")
                if path.endswith("/runs/multipart"):
                    self.rfile.read(int(self.headers.get("Content-Length") or 0))
                    self._answer(404, {"detail": "multipart ingest is not offered by this stand-in"})
                    return
                body = self._body()
                if path.endswith("/runs/batch") and isinstance(body, dict):
                    recorder._record(body.get("post") or [], body.get("patch") or [])
                elif path.endswith("/runs") and isinstance(body, dict):
                    recorder._record([body], [])
                self._answer(200, {})

            def do_PATCH(self) -> None:
                body = self._body()
                if "/runs/" in self.path and isinstance(body, dict):
                    body.setdefault("id", self.path.rstrip("/").rsplit("/", 1)[-1])
                    recorder._record([], [body])
                self._answer(200, {})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def _record(self, posts: list[dict[str, Any]], patches: list[dict[str, Any]]) -> None:
        with self.lock:
            for run in posts:
                self.runs.setdefault(str(run["id"]), {}).update(run)
            for run in patches:
                self.runs.setdefault(str(run["id"]), {}).update({k: v for k, v in run.items() if v is not None})

    def snapshot(self) -> list[dict[str, Any]]:
        with self.lock:
            return [dict(run) for run in self.runs.values()]

    def wait_for(self, predicate: Callable[[list[dict[str, Any]]], bool], timeout: float = 30.0) -> list[dict[str, Any]]:
        """Poll until ``predicate(runs)`` holds (the tracer flushes in the background)."""
        deadline = time.monotonic() + timeout
        while True:
            runs = self.snapshot()
            if predicate(runs) or time.monotonic() > deadline:
                return runs
            time.sleep(0.2)

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
