"""Staging replay: the candidate code over a copy of the live threads, compared with the live threads.

Written once, over any `Source` and its staging copy (`replay_protocol.StagingCopy`): an Agent
Server's copy is a staging Agent Server (``--persistence DIR`` or ``--staging-url URL``), a
store's is a throwaway copy of the store with the candidate compiled in-process on it.

For every thread with pending work it compares, live vs staging, the `next` nodes, the pending
task paths and the interrupt payloads (STAGING_STATE_DIVERGED). When asked to (``--resume``,
``--resume-map``, ``--auto-resume``), it resumes each interrupted thread *on staging only* and
checks that the run succeeds and that the step the thread was paused at actually runs
(STAGING_RESUME_FAILED, or STAGING_RESUME_UNANSWERED when no value fits: `resume.py`). The live
source is only read.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from migrations_playbook.model import STAGING_STATE_DIVERGED, Finding, GateReport, GraphSummary
from migrations_playbook.proof.resume import ResumeLedger, ResumeRule, judge_resume
from migrations_playbook.sources.api.state import pending_paths
from migrations_playbook.sources.base import Source
from migrations_playbook.sources.replay_protocol import StagingCopy


def _interrupt_values(state: Mapping[str, Any]) -> list[Any]:
    values: list[Any] = []
    for task in state.get("tasks") or []:
        values.extend(i.get("value") for i in task.get("interrupts") or [])
        nested = task.get("state")
        if isinstance(nested, Mapping) and "tasks" in nested:
            values.extend(_interrupt_values(nested))
    return values


def _view(state: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "next": list(state.get("next") or []),
        "pending": list(pending_paths(state)),
        "interrupts": _interrupt_values(state),
    }


def record_divergence(
    findings: dict[tuple[str, str, str], Finding],
    graph_id: str,
    thread_id: str,
    before: Mapping[str, Any],
    after: Mapping[str, Any],
) -> None:
    """STAGING_STATE_DIVERGED for a paused thread whose live and staging views (`_view`) differ,
    aggregated in ``findings`` per graph, pending node and changed parts."""
    if before == after:
        return
    changed = [k for k in before if before[k] != after[k]]
    node = ",".join(before["pending"])
    key = (STAGING_STATE_DIVERGED, graph_id, f"{node}|{','.join(changed)}")
    if key not in findings:
        findings[key] = Finding(
            code=STAGING_STATE_DIVERGED,
            severity="block",
            graph_id=graph_id,
            node=node or None,
            message=f"under the candidate, threads paused at {node or '-'} show different "
            f"{', '.join(changed)} (e.g. thread {thread_id}: live "
            f"{json.dumps({k: before[k] for k in changed}, ensure_ascii=False)[:200]} vs staging "
            f"{json.dumps({k: after[k] for k in changed}, ensure_ascii=False)[:200]})",
        )
    findings[key].add_thread(thread_id)


async def replay(
    source: Source,
    staging: StagingCopy,
    graph_ids: Sequence[str],
    rule: ResumeRule,
    *,
    candidate: str,
    repaired: frozenset[str] = frozenset(),
) -> GateReport:
    """Compare every paused thread of ``source`` with its copy on ``staging`` (opened, for ``graph_ids``);
    resume it there when ``rule`` says how. Threads in ``repaired`` were changed on staging by a
    migration plan (``replay --plan``, `replay_plan.py`): their staging head is the plan's new
    checkpoint, so they are counted but judged by the plan's proof."""
    ledger = ResumeLedger(rule)
    findings: dict[tuple[str, str, str], Finding] = {}
    summaries = {g: GraphSummary(in_candidate=staging.serves(g)) for g in graph_ids}
    unreadable: dict[str, int] = {}
    async with contextlib.aclosing(source.paused_threads(graph_ids)) as paused:
        async for thread in paused:
            graph_id, thread_id = thread.graph_id, thread.thread_id
            summary = summaries[graph_id]
            summary.threads_scanned += 1
            summary.by_status[thread.status] = summary.by_status.get(thread.status, 0) + 1
            if thread_id in repaired:
                continue
            live_state = await source.paused_state(thread)
            if live_state is None:
                unreadable[graph_id] = unreadable.get(graph_id, 0) + 1
                continue
            if not staging.serves(graph_id):
                continue
            staging_state = await staging.staged_state(thread_id, graph_id, live_state)
            before, after = _view(live_state), _view(staging_state)
            record_divergence(findings, graph_id, thread_id, before, after)
            if rule.active and thread.status == "interrupted":
                plan = ledger.plan(graph_id, thread_id, live_state, before["pending"])
                if plan.answers:
                    outcome = await staging.resume_staged(thread_id, graph_id, plan.resume)
                    ledger.record(graph_id, thread_id, before["pending"], judge_resume(plan, before["pending"], outcome))
    notes = [staging.note(), *ledger.notes()]
    notes += [
        f"{count} paused thread(s) of {g} could not be read (the gate names them: STATE_UNREADABLE)"
        for g, count in sorted(unreadable.items())
    ]
    notes += [
        f"graph {g} is not in the candidate (the gate says GRAPH_REMOVED): its threads were not replayed"
        for g in graph_ids
        if not staging.serves(g) and summaries[g].threads_scanned
    ]
    return GateReport(
        command="replay",
        live_url=source.label,
        candidate=candidate,
        strict=False,
        graphs=summaries,
        findings=sorted([*findings.values(), *ledger.findings.values()], key=lambda f: (f.graph_id, f.code, f.node or "")),
        notes=notes,
    )
