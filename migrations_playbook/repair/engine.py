"""`playbook migrate`'s engine: judge what was read, plan each thread's change. Pure.

Detect, repair, prove (the order is `flow.py`'s):

1. **Read** every thread of the plan's graphs (a source's `read_views`) and judge it with the
   gate's rules (`judge`, the `Evaluator`): the threads with a block finding are the ones the plan
   repairs (``"select": "blocked"``, the default).
2. **Plan** each thread's change (`plan_threads`, `change.compute_change`): values to write, the
   node to move to; and each assistant's context (`plan_assistants`). A transform that raises, or a
   value the candidate's type rejects, stops everything before anything is written (exit 2). A
   thread whose head already carries the migration id is left alone, so a second ``--apply``
   changes nothing.
3. **Write** (``--apply``) one new checkpoint per thread, stamped, through the source
   (`encode_writes` makes the values update_state takes).
4. **Gate again** with the same rules: exit 1 if a thread still blocks.

Where the writes can happen. `update_state` writes through the graph the server runs: a
value for a key the running graph does not declare is dropped, and ``as_node`` schedules the
running graph's successors. So thread steps are applied on a server that runs the candidate:
after the rollout (keep the runtime guard on meanwhile: it refuses runs on the threads that
still need the migration), or on a staging copy (``--persistence DIR``: the proof). On a
server that still runs the live code, ``--apply`` is refused before anything is written
(`flow.check_moment`). A checkpointer is written through the candidate compiled in-process.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from migrations_playbook.model import CandidateGraph, GateReport, LiveGraph
from migrations_playbook.repair.change import compute_change, transform_context
from migrations_playbook.repair.plan import Plan, PlanError
from migrations_playbook.rules.evaluate import Evaluator
from migrations_playbook.sources.repair_model import (
    CONTEXT_MIGRATION_KEY,
    MIGRATION_KEY,
    Action,
    AssistantOutcome,
    Change,
    Served,
    ThreadOutcome,
    ThreadView,
    stamped_by,
)


class MigrateRefused(Exception):
    """The command cannot run as asked at this moment (exit 2, nothing written)."""


# -- judging ---------------------------------------------------------------------------------


@dataclass
class Scan:
    """Everything read for one run of the command."""

    views: dict[str, list[ThreadView]]
    assistants: dict[str, list[dict[str, Any]]]
    live: dict[str, LiveGraph]
    served: dict[str, Served]


def judge(
    scan: Scan,
    candidates: Mapping[str, CandidateGraph],
    registered: set[str],
    *,
    strict: bool,
    live_url: str,
    candidate_path: str,
    notes: Sequence[str] = (),
) -> GateReport:
    """The gate over the scan (one report), and each view's own block codes (`ThreadView.blocks`)."""
    evaluator = Evaluator(live=scan.live, candidates=candidates, registered=registered, strict=strict)
    for graph_id, views in scan.views.items():
        evaluator.summary(graph_id)
        for assistant in scan.assistants.get(graph_id, []):
            evaluator.add_assistant(graph_id, assistant)
        for view in views:
            evaluator.add(view.snapshot)
            own = Evaluator(live=scan.live, candidates=candidates, registered=registered, strict=strict)
            for assistant in scan.assistants.get(graph_id, []):
                if assistant["assistant_id"] == view.assistant_id:
                    own.add_assistant(graph_id, assistant)
            own.add(view.snapshot)
            view.blocks = tuple(sorted({f.code for f in own.findings() if f.severity == "block"}))
    return GateReport(
        live_url=live_url,
        candidate=candidate_path,
        strict=strict,
        graphs=evaluator.summaries,
        findings=evaluator.findings(),
        notes=list(notes),
        command="migrate",
    )


# -- planning --------------------------------------------------------------------------------


def plan_threads(plan: Plan, scan: Scan, candidates: Mapping[str, CandidateGraph]) -> list[ThreadOutcome]:
    """Each thread's change, or why it has none (pure; a `PlanError` stops it all)."""
    outcomes = []
    for graph_id in plan.graphs:
        for view in scan.views.get(graph_id, []):
            if view.head is None:
                outcomes.append(_planned(view, graph_id, "no change", reason="its state cannot be read"))
                continue
            if stamped_by(view.metadata, plan.migration):
                outcomes.append(
                    _planned(view, graph_id, "already applied", reason=f"its head is stamped {MIGRATION_KEY}={plan.migration}")
                )
                continue
            change = compute_change(
                plan,
                view.info,
                view.values,
                blocked=bool(view.blocks),
                candidate=candidates.get(graph_id),
                thread_label=f"thread {view.thread_id}",
            )
            if change.empty:
                outcomes.append(_planned(view, graph_id, "no change"))
            elif view.status == "busy":
                outcomes.append(
                    _planned(
                        view,
                        graph_id,
                        "skipped: busy",
                        change=change,
                        reason="a run is in flight on it; run migrate again once it is done",
                    )
                )
            else:
                outcomes.append(_planned(view, graph_id, "would change", change=change))
    return outcomes


def _planned(view: ThreadView, graph_id: str, action: Action, *, change: Change | None = None, reason: str = "") -> ThreadOutcome:
    """A thread's outcome in a plan: its view's identity, blocks, head and record-only reads."""
    return ThreadOutcome(
        thread_id=view.thread_id,
        graph_id=graph_id,
        status=view.status,
        blocks=view.blocks,
        base=view.head,
        hidden=view.hidden,
        lost=view.lost,
        action=action,
        change=change,
        reason=reason,
    )


def plan_assistants(plan: Plan, scan: Scan, candidates: Mapping[str, CandidateGraph]) -> list[AssistantOutcome]:
    outcomes = []
    for step in plan.steps:
        if step.op != "context":
            continue
        candidate = candidates[step.graph]
        for assistant in scan.assistants.get(step.graph, []):
            if assistant.get("system"):
                continue
            stored = assistant.get("context") or {}
            meta = assistant.get("metadata") or {}
            item = AssistantOutcome(
                assistant["assistant_id"],
                step.graph,
                "no change",
                before=stored,
                step=step.index,
                base_version=assistant.get("version"),
            )
            if meta.get(CONTEXT_MIGRATION_KEY) == plan.migration:
                item.action, item.reason = "already applied", f"its metadata has {CONTEXT_MIGRATION_KEY}={plan.migration}"
            elif step.select == "blocked" and candidate.validate_context(stored) is None:
                item.reason = "the candidate accepts its context"
            else:
                new = transform_context(step, stored, assistant["assistant_id"])
                problem = candidate.validate_context(new)
                if problem is not None:
                    raise PlanError(
                        f"{step.label}: for assistant {assistant['assistant_id']}, the new context is still "
                        f"rejected by the candidate: {problem}"
                    )
                if new != stored:
                    item.action, item.after = "would change", new
            outcomes.append(item)
    return outcomes


# -- writing -----------------------------------------------------------------------------------


def encode_writes(writes: Mapping[str, Any], candidate: CandidateGraph | None) -> dict[str, Any]:
    """The ``values`` for update_state: a reducer channel's new value replaces the old one
    (``{"__overwrite__": value}``), except messages, which merge by id as always."""
    encoded = {}
    for key, value in writes.items():
        spec = candidate.fields.get(key) if candidate is not None else None
        reducer = spec.reducer if spec is not None else "LastValue"
        if reducer.startswith("BinaryOperatorAggregate") and "add_messages" not in reducer:
            encoded[key] = {"__overwrite__": copy.deepcopy(value)}
        else:
            encoded[key] = copy.deepcopy(value)
    return encoded
