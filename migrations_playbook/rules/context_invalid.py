"""CONTEXT_INVALID: assistants store a context the candidate's `context_schema` rejects.

Assistants created through the API keep a `context`; every run on them starts by
building the candidate's context schema from it (`context_schema(**context)` for
a pydantic model or dataclass), so a new required field or a narrowed type fails
every run on those assistants. Contexts are read with `assistants.search`; the threads that last ran through a
rejected assistant (thread metadata ``assistant_id``) are named with it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from migrations_playbook.model import CONTEXT_INVALID
from migrations_playbook.rules.base import API_ASSISTANTS, API_THREADS, CANDIDATE, LOCK, AssistantRule, GraphEvidence, Hit


class ContextInvalid(AssistantRule):
    code = CONTEXT_INVALID
    severity = "block"
    evidence = (API_ASSISTANTS, API_THREADS, LOCK, CANDIDATE)
    why = "every run through these assistants builds the candidate's context from the stored one, and fails"
    help = (
        "add new context fields with a default (optional), keep types accepting the stored values, or update the "
        "assistants' context (`assistants.update`) before the rollout"
    )

    def check_assistant(self, assistant: dict[str, Any], graph: GraphEvidence) -> Iterable[Hit]:
        candidate = graph.candidate
        if candidate is None or candidate.context_fields is None:
            return
        context = assistant.get("context") or {}
        lock = graph.lock
        live_context = lock.get("context") if lock else None
        if lock is not None and "context" in lock:
            if live_context == candidate.context_fields:
                return  # the same schema accepted it (or refused it) before this change
            live_required = {k for k, f in (live_context or {}).items() if f.get("required")}
            if not live_required <= set(context):
                return  # the live code refuses it too: not this change
        elif assistant.get("system") and not context:
            return  # the graph's default assistant: runs bring their own context
        error = candidate.validate_context(context)
        if error is not None:
            yield Hit(
                f"assistants store a context the candidate's context schema rejects ({error}): every run through them fails",
                field=error.split(":", 1)[0].split(".")[0] or None,
            )
