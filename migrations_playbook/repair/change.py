"""One thread -> one change: what a migration plan (`plan.py`) does to one thread's values and position,
and to one assistant's context. Pure, but for the plan's own named functions, which must be pure too."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from migrations_playbook.repair.plan import Plan, PlanError, Step
from migrations_playbook.sources.repair_model import Change, KeyDiff, Move, ThreadInfo

DROPPED = "<dropped: stays in the pre-migration checkpoints>"
ABSENT = "<absent>"
"""What a diff shows for a renamed key's old value (``drop``), and for a key the thread did not hold."""


def _call(step: Step, *args: Any) -> Any:
    try:
        return step.function(*copy.deepcopy(args))  # type: ignore[misc]  # resolved functions only reach here
    except Exception as exc:  # noqa: BLE001 - user code: any failure is named with the step, never a traceback
        raise PlanError(f"{step.label}: {step.get('function')} raised {type(exc).__name__}: {exc}") from None


def compute_change(
    plan: Plan,
    info: ThreadInfo,
    values: Mapping[str, Any],
    *,
    blocked: bool,
    candidate: Any,
    thread_label: str = "",
) -> Change:
    """The change the plan makes to one thread (pure; may be empty).

    ``values``: the thread's values, including keys the serving code no longer shows;
    ``blocked``: the gate blocks this thread (steps with ``select: blocked`` touch only such
    threads); ``candidate``: the graph's `CandidateGraph` (new values are checked against its types).
    A transform that raises, or a value the candidate's type rejects, is a `PlanError`.
    """
    change = Change(thread_id=info.thread_id, graph_id=info.graph_id)
    current = copy.deepcopy(dict(values))
    where = thread_label or f"thread {info.thread_id}"

    def write(step: Step, key: str, new: Any, how: str) -> None:
        problem = candidate.validate(key, new) if candidate is not None else None
        if problem:
            raise PlanError(f"{step.label}: on {where}, the new value of {key!r} does not fit the candidate's type: {problem}")
        change.diff.append(KeyDiff(key, current.get(key, ABSENT), new, how))
        current[key] = new
        change.writes[key] = new
        if step.index not in change.steps:
            change.steps.append(step.index)

    for step in plan.steps_for(info.graph_id):
        if step.op == "context" or (step.select == "blocked" and not blocked):
            continue
        if step.op == "move_node":
            if step.get("from") in info.pending and change.move is None:
                change.move = Move(step.get("from"), step.get("to"), step.get("as_node"), step.index)
                change.steps.append(step.index)
        elif step.op == "rename_key":
            old, new = step.get("from"), step.get("to")
            if old in current and new not in current:
                value = current[old]
                write(step, new, value, f"renamed from {old}")
                kept = step.get("old") == "keep"
                change.diff.append(
                    KeyDiff(old, value, value if kept else DROPPED, f"renamed to {new}" + (" (kept)" if kept else ""))
                )
                if not kept:
                    current.pop(old)
        elif step.op == "set_default":
            key = step.get("key")
            if key not in current:
                value = step.get("value") if "value" in step.params else _call(step, current)
                write(step, key, value, "default")
        elif step.op == "transform":
            key = step.get("key")
            if key in current:
                old = current[key]
                if "map" in step.params:
                    mapping = step.get("map")
                    new = mapping.get(old, old) if isinstance(old, str) else old
                else:
                    new = _call(step, old, current)
                if new != old:
                    write(step, key, new, "transform")
        elif step.op == "python":
            result = _call(step, current, info)
            if result is None:
                continue
            if not isinstance(result, dict):
                raise PlanError(
                    f"{step.label}: on {where}, {step.get('function')} returned {type(result).__name__}, "
                    "not a dict of key -> new value"
                )
            fields = candidate.fields if candidate is not None else {}
            unknown = sorted(k for k in result if fields and k not in fields)
            if unknown:
                raise PlanError(
                    f"{step.label}: on {where}, {step.get('function')} wrote {', '.join(unknown)}, "
                    "which the candidate does not declare"
                )
            for key, value in result.items():
                if current.get(key, ABSENT) != value:
                    write(step, key, value, "python")
    return change


def transform_context(step: Step, context: Mapping[str, Any], assistant_id: str) -> dict[str, Any]:
    """A context step's new context for one assistant (a `PlanError` if the function fails)."""
    result = _call(step, dict(context))
    if not isinstance(result, dict):
        raise PlanError(
            f"{step.label}: for assistant {assistant_id}, {step.get('function')} returned {type(result).__name__}, not a dict"
        )
    return result
