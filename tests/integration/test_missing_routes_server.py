"""The gate against an Agent Protocol server that lacks the optional routes it reads: same verdict, routes named.

The gate reads `GET /ok`, `POST /threads/count` and `select` projections of `POST /threads/search`; Agent
Server has all three, an open Agent Protocol server may not. The server here is a real `langgraph dev`
(the v1 fixture project with threads in each position) behind a small reverse proxy on loopback (a
`http.server` forwarding with httpx) that refuses those routes as such a server would: 404 for `/ok`,
405 for `/threads/count`, 422 for a search body that has `select`. Everything else is forwarded as it is.
The gate's verdict and findings through the proxy must be the ones it gives on the server directly, and
its notes must name each route it went without.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from migrations_playbook.cli import main
from migrations_playbook.staging.server import DevServer
from tests.fixtures.gate_projects.variants import BREAKING, V1, make_variant, populate

REFUSALS = ("ok", "count", "select")


class RefusingProxy(ThreadingHTTPServer):
    """A reverse proxy to ``upstream`` that refuses the routes named in ``refuse`` (`REFUSALS`)."""

    daemon_threads = True

    def __init__(self, upstream: str) -> None:
        super().__init__(("127.0.0.1", 0), _Forward)
        self.upstream = httpx.Client(base_url=upstream, timeout=60.0)
        self.refuse: set[str] = set()
        self.refused: list[str] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Forward(BaseHTTPRequestHandler):
    server: RefusingProxy
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _refusal(self, path: str, body: bytes) -> tuple[int, str] | None:
        refuse = self.server.refuse
        if "ok" in refuse and path == "/ok":
            return 404, "Not Found"
        if "count" in refuse and path == "/threads/count":
            return 405, "Method Not Allowed"
        if "select" in refuse and path == "/threads/search":
            with contextlib.suppress(ValueError):
                if isinstance(json.loads(body or b"{}"), dict) and "select" in json.loads(body):
                    return 422, "Unknown field: select"
        return None

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        path = self.path.split("?", 1)[0]
        refusal = self._refusal(path, body)
        if refusal is not None:
            self.server.refused.append(f"{self.command} {path}")
            status, detail = refusal
            return self._send(status, {"content-type": "application/json"}, json.dumps({"detail": detail}).encode())
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length", "connection")}
        answer = self.server.upstream.request(self.command, self.path, content=body, headers=headers)
        kept = {k: v for k, v in answer.headers.items() if k.lower() in ("content-type", "location")}
        return self._send(answer.status_code, kept, answer.content)

    def _send(self, status: int, headers: dict[str, str], payload: bytes) -> None:
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _handle  # noqa: N815 - http.server's names


@contextlib.contextmanager
def refusing_proxy(upstream: str) -> Iterator[RefusingProxy]:
    proxy = RefusingProxy(upstream)
    thread = threading.Thread(target=proxy.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield proxy
    finally:
        proxy.shutdown()
        proxy.server_close()
        proxy.upstream.close()


@dataclass(frozen=True)
class Live:
    url: str
    locks: Path
    proxy: RefusingProxy


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    root = tmp_path_factory.mktemp("missing-routes")
    project = root / "v1"
    shutil.copytree(V1, project)
    locks = root / "v1-locks"
    written = subprocess.run(
        [
            *(sys.executable, "-m", "migrations_playbook", "contract"),
            *("--config", str(project / "langgraph.json"), "--write", "--contracts-dir", str(locks)),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert written.returncode == 0, written.stderr
    with DevServer(project / "langgraph.json", project) as server:
        asyncio.run(populate(server.url))
        with refusing_proxy(server.url) as proxy:
            yield Live(url=server.url, locks=locks, proxy=proxy)


def _gate(url: str, candidate: Path, locks: Path) -> tuple[int, dict[str, Any]]:
    argv = ["gate", "--live", url, "--candidate", str(candidate), "--format", "json", "--live-contract", str(locks)]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    assert "Traceback" not in err.getvalue()
    assert code in (0, 1), err.getvalue()
    return code, json.loads(out.getvalue())


def _verdict(report: dict[str, Any]) -> Any:
    return report["verdict"], report["findings"], report["graphs"]


CANDIDATES = {
    "unchanged": [],
    "interrupted-node-renamed": BREAKING["interrupted-node-renamed"][0],
    "graph-removed": BREAKING["graph-removed"][0],
}


@pytest.mark.parametrize("candidate_edits", list(CANDIDATES.values()), ids=list(CANDIDATES))
def test_the_gate_without_ok_count_and_select_gives_the_same_verdict_and_names_them(
    live: Live, tmp_path: Path, candidate_edits: list[Any]
) -> None:
    candidate = make_variant(tmp_path, "candidate", candidate_edits)
    live.proxy.refuse = set()
    direct_code, direct = _gate(live.url, candidate, live.locks)

    live.proxy.refuse, live.proxy.refused = set(REFUSALS), []
    code, through = _gate(live.proxy.url, candidate, live.locks)

    assert (code, _verdict(through)) == (direct_code, _verdict(direct))
    assert {"GET /ok", "POST /threads/count", "POST /threads/search"} <= set(live.proxy.refused)
    notes = "\n".join(through["notes"])
    assert "no GET /ok (404)" in notes
    assert "no POST /threads/count (405)" in notes
    assert "refuses `select` in POST /threads/search (422)" in notes
    assert not any("GET /ok" in n or "/threads/count" in n or "`select`" in n for n in direct["notes"])


@pytest.mark.parametrize("refused", REFUSALS)
def test_each_missing_route_alone_is_named_and_changes_nothing(live: Live, refused: str, tmp_path: Path) -> None:
    candidate = make_variant(tmp_path, "candidate", CANDIDATES["interrupted-node-renamed"])
    live.proxy.refuse = set()
    direct_code, direct = _gate(live.url, candidate, live.locks)
    live.proxy.refuse = {refused}
    code, through = _gate(live.proxy.url, candidate, live.locks)
    assert (code, _verdict(through)) == (direct_code, _verdict(direct))
    named = {"ok": "GET /ok", "count": "POST /threads/count", "select": "`select`"}
    assert [n for n in through["notes"] if named[refused] in n], through["notes"]
    others = [named[r] for r in REFUSALS if r != refused]
    assert not [n for n in through["notes"] if any(o in n for o in others)], through["notes"]
