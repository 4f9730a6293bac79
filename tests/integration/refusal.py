"""Helpers for the tests of what the server refuses: the status and message of a refusal,
and everything a refused request must leave as it was."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

import httpx
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.errors import APIStatusError


async def refusal(request: Awaitable[Any]) -> tuple[int, str]:
    """``(status, message)`` of a request the server must refuse; fails if it was accepted."""
    try:
        accepted = await request
    except APIStatusError as exc:
        return exc.status_code, exc.message
    except httpx.HTTPStatusError as exc:  # runs.wait raises httpx's own error
        try:
            detail = exc.response.json().get("detail")
        except ValueError:
            detail = exc.response.text
        return exc.response.status_code, str(detail)
    raise AssertionError(f"the server accepted the request: {str(accepted)[:300]}")


async def thread_snapshot(client: LangGraphClient, thread_id: str) -> dict[str, Any]:
    """The thread record, its state and its whole history: what a refused request must not change."""
    return {
        "thread": await client.threads.get(thread_id),
        "state": await client.threads.get_state(thread_id),
        "history": await client.threads.get_history(thread_id, limit=200),
        "runs": [r["run_id"] for r in await client.runs.list(thread_id, limit=100)],
    }
