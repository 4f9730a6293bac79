"""Run webhooks on a real `langgraph dev` (issue 26, item 4; server/webhooks.py).

The server accepted a run ``webhook`` to any address: langgraph-api 0.16.7 refuses
loopback by default but sends to private ranges and any public host, and a host listed
in langgraph.json's ``webhooks.url.allowed_domains`` skips its address checks (a listed
``127.0.0.1`` was called). Now webhooks are off unless hosts are listed, and on, a
webhook must go to a listed host whose addresses are all public: a refused webhook is a
422 on every run-creating route, and nothing is made or sent.

Loopback only: the listed hosts here are loopback ones (an operator's mistake the
policy must survive), with a receiver on 127.0.0.1 that records any call.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import httpx
import pytest

from migrations_playbook.staging.server import DevServer
from tests.conftest import REPO_ROOT

CHAT = {"messages": [{"role": "user", "content": "페트병 어떻게 버려?"}]}


class _Receiver(BaseHTTPRequestHandler):
    calls: ClassVar[list[str]] = []

    def do_POST(self) -> None:  # http.server's method name
        self.calls.append(self.path)
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def receiver() -> Iterator[tuple[str, list[str]]]:
    """An HTTP server on 127.0.0.1 that records every webhook it gets."""
    calls: ClassVar[list[str]] = []
    handler = type("Receiver", (_Receiver,), {"calls": calls})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"127.0.0.1:{server.server_address[1]}", calls
    server.shutdown()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    """This repo's graphs, with loopback hosts listed for webhooks over http (which the policy still refuses)."""
    folder = tmp_path_factory.mktemp("webhooks")
    config = json.loads((REPO_ROOT / "langgraph.json").read_text())
    config.pop("env", None)
    config["dependencies"] = [str(REPO_ROOT)]
    config["webhooks"] = {
        "url": {"allowed_domains": ["127.0.0.1", "localhost"], "require_https": False, "disable_loopback": False}
    }
    path = folder / "langgraph.json"
    path.write_text(json.dumps(config))
    with DevServer(path, folder / "work", env={"MODEL": "offline"}) as dev:
        yield dev


def _run_routes(thread_id: str, webhook: str) -> list[tuple[str, Any]]:
    run = {"assistant_id": "recycling_guide", "input": CHAT, "webhook": webhook}
    cron = {"assistant_id": "recycling_guide", "schedule": "0 0 * * *", "webhook": webhook}
    return [
        (f"/threads/{thread_id}/runs", run),
        (f"/threads/{thread_id}/runs/wait", run),
        (f"/threads/{thread_id}/runs/stream", run),
        ("/runs", run),
        ("/runs/wait", run),
        ("/runs/stream", run),
        ("/runs/batch", [run]),
        ("/runs/crons", cron),
        (f"/threads/{thread_id}/runs/crons", cron),
    ]


async def _refused_everywhere(base_url: str, webhook: str, reason: str) -> None:
    async with httpx.AsyncClient(base_url=base_url, timeout=60) as http:
        thread_id = (await http.post("/threads", json={})).json()["thread_id"]
        threads_before = (await http.post("/threads/count", json={})).json()
        for route, body in _run_routes(thread_id, webhook):
            response = await http.post(route, json=body)
            assert response.status_code == 422, (route, response.status_code, response.text[:300])
            detail = response.json()["detail"]
            assert detail.startswith("webhook refused") and reason in detail, (route, detail)
        assert (await http.get(f"/threads/{thread_id}/runs")).json() == []
        assert (await http.post("/threads/count", json={})).json() == threads_before, "no thread was made"
        assert (await http.get(f"/threads/{thread_id}")).json()["status"] == "idle"


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        pytest.param("http://{receiver}/done", "a loopback address", id="listed-loopback-ip"),
        pytest.param("http://localhost:{port}/done", "a loopback address", id="listed-name-resolving-to-loopback"),
        pytest.param("http://127.0.0.2:{port}/done", "is not one this server sends webhooks to", id="unlisted-host"),
        pytest.param("/threads", "is not an absolute", id="relative-url-the-server-would-call-without-auth"),
        pytest.param("ftp://127.0.0.1/done", "is not an absolute", id="not-http"),
    ],
)
async def test_a_webhook_to_an_internal_or_unlisted_address_is_refused_on_every_run_route(
    server: DevServer, receiver: tuple[str, list[str]], path: str, reason: str
) -> None:
    address, calls = receiver
    webhook = path.format(receiver=address, port=address.rsplit(":", 1)[1])
    await _refused_everywhere(server.url, webhook, reason)
    await asyncio.sleep(1.5)  # a run the server had accepted would have called by now
    assert calls == [], "nothing was sent"


async def test_webhooks_are_off_on_a_server_that_lists_no_hosts(dev_server: DevServer) -> None:
    await _refused_everywhere(dev_server.url, "http://127.0.0.1:9/done", "webhooks are off on this server")


async def test_a_run_without_a_webhook_is_served_as_before(server: DevServer) -> None:
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as http:
        thread_id = (await http.post("/threads", json={})).json()["thread_id"]
        answered = await http.post(f"/threads/{thread_id}/runs/wait", json={"assistant_id": "recycling_guide", "input": CHAT})
        assert answered.status_code == 200 and answered.json()["intent_history"] == ["waste"]
