"""What each route outside the API needs in token mode, and runs-list paging (server/route_access.py)."""

from __future__ import annotations

import pytest

from server.route_access import page_error, route_access


@pytest.mark.parametrize(
    ("path", "needs"),
    [
        ("/ok", "open"),
        ("/", "open"),
        ("/info", "token_or_studio"),
        ("/docs", "token_or_studio"),
        ("/openapi.json", "token_or_studio"),
        ("/metrics", "token"),
        ("/playbook/contract", "token"),
        ("/internal/truncate", "refused"),
        ("/internal/debug/thread/abc", "refused"),
        ("/deploy", "refused"),
        ("/deploy/abc/stream", "refused"),
        ("/threads/search", "server"),
        ("/visible/fan_room/stream", "server"),
    ],
)
def test_each_route_outside_the_api_has_a_decided_access(path: str, needs: str) -> None:
    assert route_access(path) == needs


@pytest.mark.parametrize(
    ("query", "refused"),
    [
        ({}, False),
        ({"limit": "10", "offset": "0"}, False),
        ({"limit": "1"}, False),
        ({"limit": "-1"}, True),
        ({"limit": "0"}, True),
        ({"limit": "ten"}, True),
        ({"offset": "-1"}, True),
        ({"offset": "1.5"}, True),
    ],
)
def test_runs_list_paging(query: dict[str, str], refused: bool) -> None:
    assert (page_error(query) is not None) == refused
