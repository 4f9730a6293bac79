"""Plumbing of the run-lifecycle state machine (test_lifecycle_machine_server.py): refusals, interrupt kinds,
what changed between two snapshots."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
from langgraph_sdk.errors import APIStatusError


class Refused(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message}")
        self.status, self.message = status, message


def status_of(exc: Exception) -> tuple[int, str] | None:
    if isinstance(exc, APIStatusError):
        return exc.status_code, str(exc.message)
    if isinstance(exc, httpx.HTTPStatusError):
        try:
            detail = exc.response.json().get("detail")
        except ValueError:
            detail = exc.response.text
        return exc.response.status_code, str(detail)
    return None


def kinds(state: dict[str, Any]) -> list[Any]:
    return sorted(
        (json.dumps(i.get("value"), sort_keys=True) for t in state.get("tasks") or [] for i in t.get("interrupts") or []),
    )


def record_kinds(record: dict[str, Any]) -> list[Any]:
    return sorted(
        json.dumps(i.get("value"), sort_keys=True) for items in (record.get("interrupts") or {}).values() for i in items
    )


def user(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def difference(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """What changed between two snapshots: record fields, the runs, the state and history in short."""
    out: dict[str, Any] = {}
    if before["thread"] != after["thread"]:
        keys = before["thread"].keys() | after["thread"].keys()
        out["thread"] = {
            k: (before["thread"].get(k), after["thread"].get(k))
            for k in sorted(keys)
            if before["thread"].get(k) != after["thread"].get(k) and k != "values"
        }
        if before["thread"].get("values") != after["thread"].get("values"):
            out["thread"]["values"] = "differ"
    if before["runs"] != after["runs"]:
        out["runs"] = (before["runs"], after["runs"])
    if before["state"] != after["state"]:
        out["state"] = (before["state"]["checkpoint"], after["state"]["checkpoint"])
    if before["history"] != after["history"]:
        out["history"] = (len(before["history"]), len(after["history"]))
    return out


def refusal(request: Callable[[], Any]) -> tuple[int, str]:
    try:
        accepted = request()
    except Exception as exc:
        got = status_of(exc)
        if got is None:
            raise
        return got
    raise AssertionError(f"accepted: {str(accepted)[:300]}")
