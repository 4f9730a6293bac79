"""LangGraph's state snapshots in the shape the Agent Server API returns them (JSON values, the
``GET /threads/{id}/state?subgraphs=true`` layout), so both sources feed the same readers."""

from __future__ import annotations

import dataclasses
import json
from typing import Any


def _jsonable(value: Any) -> Any:
    """`json.dumps` default: what the Agent Server API does with stored objects."""
    if hasattr(value, "model_dump") and not isinstance(value, type):
        return value.model_dump()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if hasattr(value, "_asdict") and not isinstance(value, type):
        return value._asdict()
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    if isinstance(value, BaseException):
        return {"error": type(value).__name__, "message": str(value)}
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return repr(value)


def to_json(value: Any) -> Any:
    return json.loads(json.dumps(value, default=_jsonable, ensure_ascii=False))


def state_json(snapshot: Any) -> dict[str, Any]:
    """A `StateSnapshot` in the shape `GET /threads/{id}/state?subgraphs=true` returns it
    (langgraph-api's ``state_snapshot_to_thread_state``), plus each level's namespace."""
    from langgraph.types import StateSnapshot

    return {
        "values": snapshot.values,
        "next": list(snapshot.next),
        "checkpoint_ns": ((snapshot.config or {}).get("configurable") or {}).get("checkpoint_ns", ""),
        "tasks": [
            {
                "id": task.id,
                "name": task.name,
                "path": list(task.path),
                "error": f"{type(task.error).__name__}: {task.error}" if task.error is not None else None,
                "interrupts": [{"value": i.value, "id": i.id} for i in task.interrupts],
                "state": state_json(task.state) if isinstance(task.state, StateSnapshot) else None,
                "result": task.result,
            }
            for task in snapshot.tasks
        ],
    }


def path_str(path: Any) -> str:
    """A task path as the savers store it beside its writes (``~__pregel_pull, triage``):
    LangGraph's ``task_path_str`` (a tuple is ``~`` and its parts, an int 10 digits)."""
    if isinstance(path, tuple | list):
        return "~" + ", ".join(path_str(part) for part in path)
    if isinstance(path, int):
        return f"{path:010d}"
    return str(path)
