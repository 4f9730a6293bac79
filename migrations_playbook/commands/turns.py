"""`playbook turns` and `playbook rerun`: a thread's chat turns (HumanMessage boundaries) as checkpoint
ranges, and turn N rerun with new text on a fork (the original branch is not touched)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from dataclasses import dataclass
from typing import Any

from migrations_playbook.errors import EXIT_BLOCKED, EXIT_PASS, UsageError
from migrations_playbook.sources.api import turns
from migrations_playbook.sources.base import SourceRequest
from migrations_playbook.sources.factory import open_source


@dataclass(frozen=True)
class TurnsRequest:
    source: SourceRequest
    thread_id: str
    checkpoint: str | None = None
    """Map the branch ending here (default: the newest checkpoint)."""
    format: str = "table"


@dataclass(frozen=True)
class RerunRequest:
    source: SourceRequest
    thread_id: str
    turn: int
    text: str
    context: str | None = None
    """Run context as JSON (default: the context of the run that made turn N)."""
    assistant: str | None = None
    format: str = "table"


async def _turns(request: TurnsRequest) -> tuple[str | None, list[Any]]:
    async with open_source(request.source) as source:
        source.require("turns", "playbook turns")
        history = await source.thread_history(request.thread_id)
        try:
            mapped = turns.turns_from_history(history, request.checkpoint)
        except turns.TurnsError as exc:
            raise UsageError(str(exc)) from None
        head = request.checkpoint or (history[0]["checkpoint"]["checkpoint_id"] if history else None)
        return head, mapped


def run_turns(request: TurnsRequest) -> int:
    """Chat turns of one thread (HumanMessage boundaries) and their checkpoint ranges."""
    head, mapped = asyncio.run(_turns(request))
    if request.format == "json":
        print(json.dumps(turns.to_json(request.thread_id, head, mapped), indent=2, ensure_ascii=False))
    elif not mapped:
        print(f"thread {request.thread_id} has no turns yet")
    else:
        print(turns.render_table(mapped))
    return EXIT_PASS


async def _rerun(request: RerunRequest, context: dict[str, Any] | None) -> Any:
    async with open_source(request.source) as source:
        source.require("turns", "playbook rerun")
        return await source.rerun_turn(
            request.thread_id, request.turn, request.text, context=context, assistant_id=request.assistant
        )


def run_rerun(request: RerunRequest) -> int:
    """Rerun turn N with new text on a fork from the checkpoint before it."""
    try:
        context = json.loads(request.context) if request.context is not None else None
    except json.JSONDecodeError as exc:
        raise UsageError(f"--context must be JSON: {exc}") from None
    if context is not None and not isinstance(context, dict):
        raise UsageError("--context must be a JSON object")
    result = asyncio.run(_rerun(request, context))
    if request.format == "json":
        data = dataclasses.asdict(result)
        data["turns"] = turns.to_json(result.thread_id, result.new_head, result.turns)["turns"]
        print(json.dumps({"rerun_result_version": "1", **data}, indent=2, ensure_ascii=False))
    else:
        print(
            f"turn {result.turn} rerun on a fork from {result.fork_from}: run {result.run_id} {result.run_status}\n"
            f"original head {result.original_head} is untouched; new head {result.new_head}\n"
        )
        print(turns.render_table(result.turns))
    return EXIT_PASS if result.run_status == "success" else EXIT_BLOCKED
