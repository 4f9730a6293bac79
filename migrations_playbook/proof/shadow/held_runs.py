"""The work the live server holds, driven by the shadow: held runs on their threads, each cron fired once.

A staging copy runs nothing on its own (`staging/held.py` takes the unfinished runs out of its queue and
disables its crons). But after the deploy the live server runs that work under the new code: a run
queued behind a busy one (``multitask_strategy="enqueue"``), a run delayed with ``after_seconds``, a run
cut off by the restart (the queue starts it again), and every cron each time it fires, with its stored
input. So the proof sends it itself, explicitly, on every side (A, A2, B), from what the hold kept of
each (`HeldRun.request`, `HeldCron.payload`):

* **Held runs** go on their thread, in the queue's order (``created_at``; a delayed run's is the time it
  may start), with their stored input or command, config, context, assistant, multitask strategy and
  interrupt settings, FIRST: the live server's queue takes them up when it starts under the new code,
  before any client reaches the thread, on the thread's head. Then the runs the proof planned for the
  thread from its live state follow, those that name their own checkpoint (the rerun of its last turn, a
  next turn from the live head: they still probe the thread as the live data holds it); an answer or a
  continue planned for the head as it was no longer fits the head the held runs leave and is dropped (a
  question they leave pending is answered by the leader's follow-up, `drive.after_run`). So the comparison
  is what happens after rollout: the held run under the deployed code against the held run under the
  candidate, on the same head.
* **Crons** fire once per side, with their stored payload: a cron bound to a thread on a copy of that
  thread made on the side (``POST /threads/{id}/copy``: its head as the live data holds it, and the
  thread's own runs stay apart), a stateless cron on a new thread of its graph. Traced under ``cron:<id>``.

Held work is classed and sampled like threads (`classes.py`): threads holding runs by the thread's own
class and the kinds and shapes of their held runs, crons by graph, thread-bound or not, assistant and
payload shape; one of each class runs, plus the seeded sample (``--sample N``), every one with ``--all``.
A thread the sample picks for its held runs runs whatever the thread sample says. Every thread that runs
gets its held runs. The report lists what was driven, and what was not and why (its class ran elsewhere,
its graph is not in the candidate, a stored value with no JSON form, a thread the live server no longer
shows). Staging servers given by URL (``--staging-url``) are the user's: the shadow cannot see their held
work, and says so.
"""

from __future__ import annotations

import dataclasses
import random
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from migrations_playbook.model import ThreadSnapshot
from migrations_playbook.proof.shadow.classes import SEED, class_key
from migrations_playbook.proof.shadow.drive import ThreadFacts
from migrations_playbook.proof.shadow.traces import RunRequest, SideTrace, ThreadTrace
from migrations_playbook.sources.interrupts import pending_interrupts
from migrations_playbook.staging.held import HeldCron, HeldRun, HeldWork

CRON_MARK = "cron:"
"""Before a cron's id in a trace key (`cron_key`)."""


def cron_key(cron_id: str) -> str:
    return f"{CRON_MARK}{cron_id}"


def is_cron(key: str) -> bool:
    return key.startswith(CRON_MARK)


def _shape(value: Any) -> tuple[Any, ...]:
    """What a stored request looks like to the code receiving it: its keys, and each value's type."""
    if isinstance(value, Mapping):
        return tuple(sorted((str(k), type(v).__name__) for k, v in value.items()))
    return (type(value).__name__,)


def _request_shape(request: Mapping[str, Any]) -> tuple[Any, ...]:
    return tuple((key, _shape(request[key])) for key in sorted(request))


PASSED = ("command", "config", "interrupt_before", "interrupt_after")
"""What a stored request gives the run besides its input and context, sent as it is (`RunRequest.extra`)."""


def how_held(run: HeldRun, now: datetime) -> str:
    """``queued``, ``delayed`` (with ``after_seconds``: it may start later than ``now``) or ``cut off``."""
    if run.status == "running":
        return "cut off while running"
    try:
        due = datetime.fromisoformat(run.not_before) if run.not_before else None
    except ValueError:
        due = None
    return f"delayed until {run.not_before}" if due is not None and due > now else "queued"


def held_request(run: HeldRun, now: datetime) -> RunRequest:
    """The run as every side sends it again."""
    stored = dict(run.request)
    extra: dict[str, Any] = {k: stored[k] for k in PASSED if k in stored}
    if run.multitask_strategy:
        extra["multitask_strategy"] = run.multitask_strategy
    return RunRequest(
        kind="held",
        assistant_id=run.assistant_id or run.graph_id or "",
        input=stored.get("input"),
        checkpoint_id=stored.get("checkpoint_id"),
        context=stored.get("context"),
        extra=extra or None,
        why=f"held run {run.run_id} ({how_held(run, now).split(' until ')[0]}, multitask {run.multitask_strategy or '-'})",
    )


def cron_request(cron: HeldCron) -> RunRequest:
    stored = dict(cron.payload)
    extra: dict[str, Any] = {k: stored[k] for k in PASSED if k in stored}
    where = f"on a copy of thread {cron.thread_id}" if cron.thread_id else "on a new thread (a stateless cron)"
    return RunRequest(
        kind="cron",
        assistant_id=cron.assistant_id or cron.graph_id or "",
        input=stored.get("input"),
        context=stored.get("context"),
        extra=extra or None,
        why=f"cron {cron.cron_id} ({cron.schedule}) fired once with its stored payload, {where}",
    )


@dataclass(frozen=True)
class CronJob:
    """One cron to fire once per side."""

    cron: HeldCron
    request: RunRequest

    @property
    def key(self) -> str:
        return cron_key(self.cron.cron_id)


@dataclass
class HeldPlan:
    """What the shadow sends of the held work, and what it does not (and why)."""

    runs: dict[str, tuple[RunRequest, ...]] = field(default_factory=dict)
    """Thread id -> its held runs as sent, in the queue's order (every thread whose held runs can be sent)."""
    include: frozenset[str] = frozenset()
    """Threads that run for their held runs (one per class, plus the sample)."""
    crons: list[CronJob] = field(default_factory=list)
    classes: int = 0
    """Classes of threads holding runs."""
    cron_classes: int = 0
    not_driven: list[str] = field(default_factory=list)
    """Why each held run or cron that will not be sent is not."""
    crons_total: int = 0
    crons_skipped_by_class: int = 0

    def attach(self, facts: Sequence[ThreadFacts]) -> list[ThreadFacts]:
        """``facts`` with each thread's held runs (sent first, `drive.planned_requests`). A thread the live server
        shows busy with held work is at rest on the copies, as after a restart (`staging/held.py`): waiting on a
        question when one is pending, else idle (its own runs are planned from that)."""
        found = []
        for item in facts:
            held = self.runs.get(item.thread_id, ())
            status = item.status
            if held and status == "busy":
                status = "interrupted" if pending_interrupts(item.state) else "idle"
            found.append(dataclasses.replace(item, held=held, status=status))
        return found

    def notes(self, chosen: Sequence[str]) -> list[str]:
        """The report's lines: what was driven, and what was not and why."""
        ran = set(chosen)
        driven = {t: r for t, r in self.runs.items() if t in ran}
        sent = sum(len(r) for r in driven.values())
        held = sum(len(r) for r in self.runs.values())
        lines = []
        if self.runs or self.not_driven:
            ids = ", ".join(f"{r.why.split(' (')[0].removeprefix('held run ')} on {t}" for t, rs in driven.items() for r in rs)
            lines.append(
                f"held runs driven on every side (first, on their thread's head, in the queue's order): {sent} of {held} "
                f"sendable held run(s) on {len(driven)} thread(s) ({self.classes} class(es) of threads holding runs, one per "
                "class plus the sample)" + (f": {ids[:600]}" if ids else "")
            )
            skipped = [t for t in self.runs if t not in ran]
            if skipped:
                lines.append(
                    f"held runs not driven: {sum(len(self.runs[t]) for t in skipped)} on {len(skipped)} thread(s) whose class "
                    "ran on another thread (--all drives every one): " + ", ".join(skipped[:10])
                )
        if self.crons_total:
            lines.append(
                f"crons fired once on every side with their stored payload: {len(self.crons)} of {self.crons_total} "
                f"({self.cron_classes} class(es)): " + ", ".join(job.cron.cron_id for job in self.crons[:10])
            )
            if self.crons_skipped_by_class:
                lines.append(
                    f"crons not fired: {self.crons_skipped_by_class} whose class fired on another cron (--all fires every one)"
                )
        lines += [f"not driven: {why}" for why in self.not_driven]
        return lines


def _pick(groups: Mapping[Any, list[str]], *, sample: int, every: bool) -> set[str]:
    """One member per group, plus a seeded sample of the rest (every member with ``every``)."""
    members = [m for group in groups.values() for m in group]
    if every:
        return set(members)
    chosen = [group[0] for group in groups.values() if group]
    rest = [m for m in members if m not in set(chosen)]
    extra = random.Random(SEED).sample(rest, min(sample, len(rest))) if sample > 0 else []
    return set(chosen) | set(extra)


def plan_held(
    work: HeldWork,
    snapshots: Sequence[ThreadSnapshot],
    served: set[str],
    *,
    sample: int,
    every: bool,
    now: datetime | None = None,
) -> HeldPlan:
    """What to send of ``work`` (what a copy of the live data holds back), for the threads ``snapshots`` read
    from the live server and the graphs the candidate serves (``served``). Pure."""
    now = now or datetime.now(UTC)
    plan = HeldPlan()
    by_id = {t.thread_id: t for t in snapshots}
    per_thread: dict[str, list[HeldRun]] = defaultdict(list)
    for run in work.runs:
        per_thread[str(run.thread_id)].append(run)
    groups: dict[Any, list[str]] = defaultdict(list)
    for thread_id, runs in per_thread.items():
        ids = ", ".join(r.run_id for r in runs)
        snap = by_id.get(thread_id)
        unsendable = next((r for r in runs if r.unsendable), None)
        if thread_id == "None":
            plan.not_driven.append(f"held run(s) {ids}: stateless (no thread), not compared (no state to compare)")
        elif snap is None:
            plan.not_driven.append(f"held run(s) {ids}: thread {thread_id} is not among the threads read from the live server")
        elif snap.graph_id not in served:
            plan.not_driven.append(f"held run(s) {ids} on thread {thread_id}: graph {snap.graph_id} is not in the candidate")
        elif unsendable is not None:
            plan.not_driven.append(
                f"held run(s) {ids} on thread {thread_id}: run {unsendable.run_id} cannot be sent again as stored "
                f"({unsendable.unsendable}); its thread runs without them"
            )
        else:
            plan.runs[thread_id] = tuple(held_request(r, now) for r in runs)
            signature = tuple(
                (how_held(r, now).split(" until ")[0], r.multitask_strategy, r.assistant_id, _request_shape(r.request))
                for r in runs
            )
            groups[(class_key(snap), signature)].append(thread_id)
    plan.classes = len(groups)
    plan.include = frozenset(_pick(groups, sample=sample, every=every))
    cron_groups: dict[Any, list[str]] = defaultdict(list)
    by_cron: dict[str, HeldCron] = {}
    for cron in work.crons:
        plan.crons_total += 1
        if cron.unsendable:
            plan.not_driven.append(f"cron {cron.cron_id}: its payload cannot be sent again as stored ({cron.unsendable})")
        elif cron.graph_id is None or cron.graph_id not in served:
            plan.not_driven.append(f"cron {cron.cron_id}: graph {cron.graph_id or '(unknown)'} is not in the candidate")
        elif cron.thread_id and cron.thread_id not in by_id:
            plan.not_driven.append(
                f"cron {cron.cron_id}: its thread {cron.thread_id} is not among the threads read from the live server"
            )
        else:
            by_cron[cron.cron_id] = cron
            key = (cron.graph_id, bool(cron.thread_id), cron.assistant_id, _request_shape(cron.payload))
            cron_groups[key].append(cron.cron_id)
    plan.cron_classes = len(cron_groups)
    fired = _pick(cron_groups, sample=sample, every=every)
    plan.crons = [CronJob(by_cron[c], cron_request(by_cron[c])) for c in by_cron if c in fired]
    plan.crons_skipped_by_class = len(by_cron) - len(plan.crons)
    return plan


# -- on a side's server ------------------------------------------------------------------------


async def fire_crons(side: SideTrace, url: str, headers: Mapping[str, str], jobs: Sequence[CronJob], *, deadline: Any) -> None:
    """Fire each cron of ``jobs`` once on the side's server at ``url`` (a copy of its thread, or a new thread),
    traced into ``side`` under `cron_key`."""
    import httpx
    from langgraph_sdk import get_client
    from langgraph_sdk.errors import APIStatusError

    from migrations_playbook.proof.resume import ResumeRule
    from migrations_playbook.proof.shadow.api import _copy_thread, _drive_thread
    from migrations_playbook.sources.api.reads import short_keepalive

    for job in jobs:
        graph_id = str(job.cron.graph_id)
        try:
            if job.cron.thread_id:
                on = await _copy_thread(url, headers, job.cron.thread_id, deadline)
            else:
                client = short_keepalive(get_client(url=url, headers=dict(headers) or None), deadline=deadline)
                try:
                    on = str((await client.threads.create(graph_id=graph_id))["thread_id"])
                finally:
                    await client.aclose()
        except (APIStatusError, httpx.TransportError, ValueError) as exc:
            side.threads[job.key] = ThreadTrace(
                thread_id=job.key, graph_id=graph_id, unreadable=f"the cron's thread could not be made: {str(exc)[:300]}"
            )
            continue
        facts = ThreadFacts(thread_id=job.key, graph_id=graph_id, status="idle", state={}, assistant_id=job.request.assistant_id)
        side.threads[job.key] = await _drive_thread(
            url,
            headers,
            facts,
            leader=False,
            rule=ResumeRule(),
            turn_inputs={},
            given=[job.request],
            deadline=deadline,
            key=job.key,
            on=on,
        )
