"""The body depth bound (server/body_depth.py): the scanner, the limit, the middleware, its place.

The scanner is checked against a parser: for any JSON value, the depth it reads from the bytes is
the depth of the value. The middleware is driven in-process through httpx's ASGI transport in
front of a stand-in app that records what reaches it (no sockets).
"""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from server import webapp
from server.body_depth import MAX_JSON_DEPTH, BodyDepthMiddleware, json_depth, too_deep


def depth_of(value: Any) -> int:
    """The nesting of a parsed JSON value (objects and arrays; the value itself is level 1)."""
    if isinstance(value, dict):
        return 1 + max((depth_of(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((depth_of(v) for v in value), default=0)
    return 0


TRICKY_TEXT = st.text(alphabet=st.sampled_from(list('[]{}"\\/ab\n\u00e9\u3131')), max_size=12)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | TRICKY_TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TRICKY_TEXT, inner, max_size=3),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(value=JSON_VALUES, ascii_only=st.booleans(), indent=st.sampled_from([None, 1]))
def test_the_scanner_reads_the_depth_a_parser_finds(value: Any, ascii_only: bool, indent: int | None) -> None:
    body = json.dumps(value, ensure_ascii=ascii_only, indent=indent).encode()
    assert json_depth(body) == depth_of(value)


@pytest.mark.parametrize(
    ("body", "depth"),
    [
        pytest.param(b"", 0, id="empty"),
        pytest.param(b"5", 0, id="scalar"),
        pytest.param(b"{}", 1, id="object"),
        pytest.param(b'{"a": [[{}]]}', 4, id="nested"),
        pytest.param(b'{"a": "[[[[{{{{"}', 1, id="brackets-in-a-string"),
        pytest.param(b'{"a": "\\"[[[\\""}', 1, id="escaped-quotes"),
        pytest.param(b'{"a": "\\\\", "b": [[]]}', 3, id="escaped-backslash-then-brackets"),
        pytest.param(b'["unterminated [[[[', 1, id="unterminated-string"),
        pytest.param(b'["ends on a backslash \\', 1, id="unterminated-backslash"),
        pytest.param(b"]]]][[", 0, id="closing-first"),
        pytest.param(b"\xff{not json", 1, id="not-json"),
        pytest.param(b"[" * 5000 + b"]" * 5000, 5000, id="5000"),
    ],
)
def test_the_scanner_counts_brackets_outside_strings(body: bytes, depth: int) -> None:
    assert json_depth(body) == depth


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(b'"' + b'\\"' * 500_000, id="one-endless-string"),
        pytest.param(b'["' * 500_000, id="many-short-strings"),
        pytest.param(b"[" * 2_000_000, id="two-million-brackets"),
        pytest.param(json.dumps([{"role": "user", "content": "x" * 100}] * 20_000).encode(), id="three-megabytes-of-messages"),
    ],
)
def test_the_scanner_takes_linear_time_on_hostile_bodies(body: bytes) -> None:
    """A regex that retried each unterminated string from every quote took quadratic time."""
    started = time.perf_counter()
    json_depth(body)
    assert time.perf_counter() - started < 2.0


def test_the_limit_is_a_depth_legitimate_payloads_stay_under_and_the_runtime_survives() -> None:
    """Tool calls nest 10-30 levels; orjson (the runtime's encoder) stops at 255, and the runtime
    wraps stored values in its own levels: the limit sits between, with room on both sides."""
    assert 30 * 2 <= MAX_JSON_DEPTH <= 255 - 150


def test_a_body_past_the_limit_is_refused_naming_it_and_one_at_the_limit_is_not() -> None:
    assert too_deep(b"[" * MAX_JSON_DEPTH + b"]" * MAX_JSON_DEPTH) is None
    detail = too_deep(b"[" * (MAX_JSON_DEPTH + 1) + b"]" * (MAX_JSON_DEPTH + 1))
    assert detail is not None
    assert f"nests JSON {MAX_JSON_DEPTH + 1} levels deep" in detail
    assert f"at most {MAX_JSON_DEPTH} levels (MAX_JSON_DEPTH)" in detail
    assert "nothing was read or changed" in detail
    many_strings = json.dumps({"a": ["[" * 100] * 100}).encode()  # many brackets, all inside strings
    assert too_deep(many_strings) is None


# -- the middleware ---------------------------------------------------------------------


class StandIn:
    """The app below the middleware: what reached it."""

    def __init__(self) -> None:
        self.reached: list[tuple[str, str, bytes]] = []

    def app(self) -> Starlette:
        async def record(request: Request) -> JSONResponse:
            self.reached.append((request.method, request.url.path, await request.body()))
            return JSONResponse({"ok": True})

        methods = ["GET", "POST", "PUT", "PATCH", "DELETE"]
        return Starlette(routes=[Route("/{path:path}", record, methods=methods)])


async def _client(stand_in: StandIn, root_path: str = "") -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=BodyDepthMiddleware(stand_in.app()), root_path=root_path)  # type: ignore[arg-type]
    return httpx.AsyncClient(transport=transport, base_url="http://api")


DEEP = b'{"metadata": {"x": ' + b"[" * 5000 + b"]" * 5000 + b"}}"


@pytest.mark.parametrize("root_path", ["", "/noauth"], ids=["client", "in-process-client"])
@pytest.mark.parametrize(
    ("method", "path"), [("POST", "/threads"), ("PATCH", "/threads/t"), ("PUT", "/store/items"), ("DELETE", "/store/items")]
)
async def test_a_deep_body_is_a_422_on_every_route_and_reaches_nothing(method: str, path: str, root_path: str) -> None:
    stand_in = StandIn()
    async with await _client(stand_in, root_path) as http:
        response = await http.request(method, path, content=DEEP, headers={"Content-Type": "application/json"})
    assert response.status_code == 422
    assert set(response.json()) == {"detail"} and "MAX_JSON_DEPTH" in response.json()["detail"]
    assert stand_in.reached == []


async def test_the_visible_route_gets_its_own_error_shape_too() -> None:
    stand_in = StandIn()
    async with await _client(stand_in) as http:
        response = await http.post("/visible/recycling_guide/stream", content=DEEP)
    answer = response.json()
    assert (response.status_code, answer["error"], answer["message"]) == (422, "too_deep", answer["detail"])
    assert stand_in.reached == []


async def test_a_shallow_body_and_a_bodiless_request_reach_the_app_unchanged() -> None:
    stand_in = StandIn()
    shallow = json.dumps({"input": {"messages": [{"tool_calls": [{"args": {"a": [[1]]}}]}]}}).encode()
    async with await _client(stand_in) as http:
        assert (await http.post("/threads/t/runs", content=shallow)).status_code == 200
        assert (await http.get("/threads/t")).status_code == 200
        assert (await http.post("/not-json", content=b"\xff{not json")).status_code == 200  # the server answers it
    assert stand_in.reached == [
        ("POST", "/threads/t/runs", shallow),
        ("GET", "/threads/t", b""),
        ("POST", "/not-json", b"\xff{not json"),
    ]


def test_the_bound_is_the_custom_apps_outermost_middleware() -> None:
    """Before anything else of the app parses a body (request limits, payloads, webhooks, the
    ``/visible`` route), and for the in-process client's requests too."""
    first = webapp.app.user_middleware[0]
    assert first.cls is BodyDepthMiddleware
