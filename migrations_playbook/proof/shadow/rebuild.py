"""A live thread rebuilt from its own history on a fresh thread, then continued like the migrated one.

The shadow's A-against-B comparison asks whether the candidate behaves like the deployed code; a change is
meant to differ, so it cannot tell an intended change from a break that shows only as other values. The
question a migration asks is another: does a thread that began under the deployed code behave under the
candidate like a thread born on the candidate? To ask it, each thread the shadow runs is born again on every
side (`rebuild_side`): a fresh thread is created and sent the live thread's recorded runs in order (their
inputs, resume answers, assistant and context, as the server keeps them in each run's kwargs), with the
model relay serving the model calls the deployed code's side recorded; then it gets the same requests the
migrated thread got (`shadow_drive`'s, with the checkpoints they start from mapped to the fresh thread's own).
`proof/shadow/migrated.py` judges the result.

A thread is rebuilt only from what its history shows: where its checkpoints were written by something its runs
do not show (``update_state``, a fork, a copy of another thread, a run started from an earlier checkpoint, a run
the server no longer lists), or a run did not end well, `plan_rebuild` says why it cannot be rebuilt and nothing
is guessed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from migrations_playbook.proof.shadow.drive import ThreadFacts, input_of
from migrations_playbook.proof.shadow.traces import RunRequest, ThreadTrace, nested_values, pending_questions
from migrations_playbook.sources.interrupts import PendingInterrupt, pending_interrupts

RUNS_LIMIT = 100
"""Runs read back per live thread; a thread with more is not rebuilt (its history may be cut)."""
HISTORY_LIMIT = 200
"""Checkpoints read back per live thread; a thread with more is not rebuilt."""
REBUILT_MARK = "playbook_rebuild_of"
"""The metadata key naming, on a fresh thread, the live thread it rebuilds."""
_PRIVATE_CONTEXT = ("langgraph_", "__")
"""Context keys the server adds to a run's stored context (request ids, auth): not the client's."""

DROPPED = "the fresh thread could not be driven"
"""The start of `Rebuilt.failed` when the server refused or dropped a request (not a run): tried once more."""

StepKind = Literal["input", "resume", "continue"]


@dataclass(frozen=True)
class RebuildStep:
    """One recorded run of the live thread, as a client sent it."""

    kind: StepKind
    assistant_id: str
    input: Any = None
    resume: Any = None
    context: Mapping[str, Any] | None = None

    def request(self) -> RunRequest:
        kind: Literal["turn", "resume", "continue"] = "turn" if self.kind == "input" else self.kind
        return RunRequest(
            kind=kind, assistant_id=self.assistant_id, input=self.input, resume=self.resume, context=self.context, why="rebuild"
        )


@dataclass(frozen=True)
class RebuildPlan:
    """The live thread's runs in order, or why it cannot be rebuilt from them."""

    thread_id: str
    graph_id: str
    steps: tuple[RebuildStep, ...] = ()
    refused: str | None = None


@dataclass
class Rebuilt:
    """One side's fresh thread: its state once rebuilt, and its continuation's trace."""

    thread_id: str
    fresh_id: str | None = None
    failed: str | None = None
    """Why the rebuild (or its continuation's mapping) did not get through on this side."""
    values: Any = None
    """The fresh thread's values once rebuilt (before the continuation)."""
    nested: dict[str, Any] = field(default_factory=dict)
    next: list[str] = field(default_factory=list)
    pending: list[Any] = field(default_factory=list)
    trace: ThreadTrace | None = None
    """The continuation: the migrated thread's requests, sent to the fresh thread."""


def _kwargs(run: Mapping[str, Any]) -> Mapping[str, Any]:
    found = run.get("kwargs")
    return found if isinstance(found, Mapping) else {}


def _context(kwargs: Mapping[str, Any]) -> Mapping[str, Any] | None:
    found = kwargs.get("context")
    if not isinstance(found, Mapping):
        return None
    kept = {k: v for k, v in found.items() if not str(k).startswith(_PRIVATE_CONTEXT)}
    return kept or None


def plan_rebuild(
    thread_id: str, graph_id: str, history: Sequence[Mapping[str, Any]], runs: Sequence[Mapping[str, Any]]
) -> RebuildPlan:
    """The runs to send a fresh thread so that it is born as ``thread_id`` was, from its root ``history`` (newest
    first, ``threads.get_history``) and its ``runs`` (``runs.list``, any order), or why it cannot be. Pure."""

    def refuse(why: str) -> RebuildPlan:
        return RebuildPlan(thread_id=thread_id, graph_id=graph_id, refused=why)

    if len(runs) >= RUNS_LIMIT:
        return refuse(f"it has {RUNS_LIMIT} runs or more: its oldest may not be listed")
    if len(history) >= HISTORY_LIMIT:
        return refuse(f"it has {HISTORY_LIMIT} checkpoints or more: its oldest may not be read")
    if not runs:
        return refuse("the server keeps no run of it (its state was written without a run: a copy or update_state)")
    run_ids = {str(r.get("run_id")) for r in runs}
    asked = {
        str(i.get("id"))
        for checkpoint in history
        for task in checkpoint.get("tasks") or []
        for i in task.get("interrupts") or []
        if isinstance(i, Mapping) and i.get("id")
    }
    for checkpoint in history:
        metadata = checkpoint.get("metadata") or {}
        source = metadata.get("source")
        if source == "update":
            return refuse("its state was changed with update_state, which its runs do not show")
        if source == "fork":
            return refuse("it holds a fork of its state, which its runs do not show")
        if str(metadata.get("run_id")) not in run_ids:
            return refuse(
                "a checkpoint was written by a run it does not keep (a copy of another thread, or a run the server no longer "
                "lists)"
            )
    steps: list[RebuildStep] = []
    for run in sorted(runs, key=lambda r: str(r.get("created_at") or "")):
        status = run.get("status")
        if status != "success":
            return refuse(f"its run {run.get('run_id')} ended {status}: what it left cannot be sent again")
        kwargs = _kwargs(run)
        configurable = (kwargs.get("config") or {}).get("configurable") or {}
        if isinstance(configurable, Mapping) and configurable.get("checkpoint_id"):
            return refuse(f"its run {run.get('run_id')} started from an earlier checkpoint (a rerun or a fork)")
        if kwargs.get("interrupt_before") or kwargs.get("interrupt_after"):
            return refuse(f"its run {run.get('run_id')} set breakpoints of its own")
        if "input" not in kwargs and "command" not in kwargs:
            return refuse(f"the server does not keep what its run {run.get('run_id')} was sent")
        assistant = str(run.get("assistant_id") or graph_id)
        command = kwargs.get("command")
        if isinstance(command, Mapping) and command:
            if set(command) - {"resume"} or command.get("resume") is None:
                return refuse(f"its run {run.get('run_id')} was sent a Command other than a resume ({sorted(command)})")
            answer = command["resume"]
            if isinstance(answer, Mapping) and set(map(str, answer)) & asked:
                return refuse(
                    f"its run {run.get('run_id')} answered questions by their ids, which a fresh thread's questions do not share"
                )
            steps.append(RebuildStep("resume", assistant, resume=answer, context=_context(kwargs)))
        elif kwargs.get("input") is not None:
            steps.append(RebuildStep("input", assistant, input=kwargs["input"], context=_context(kwargs)))
        else:
            steps.append(RebuildStep("continue", assistant, context=_context(kwargs)))
    return RebuildPlan(thread_id=thread_id, graph_id=graph_id, steps=tuple(steps))


def question_ids(live: Sequence[PendingInterrupt], fresh: Sequence[PendingInterrupt]) -> dict[str, str]:
    """The live thread's pending question ids -> the fresh thread's, matched by node path and order there (the
    same questions asked by the same steps); empty where they do not match one for one."""
    by_path: dict[str, list[str]] = {}
    for interrupt in fresh:
        if interrupt.id is not None:
            by_path.setdefault(interrupt.path, []).append(interrupt.id)
    mapped: dict[str, str] = {}
    seen: dict[str, int] = {}
    for interrupt in live:
        if interrupt.id is None:
            continue
        index = seen.get(interrupt.path, 0)
        seen[interrupt.path] = index + 1
        ids = by_path.get(interrupt.path, [])
        if index >= len(ids):
            return {}
        mapped[interrupt.id] = ids[index]
    return mapped if len(mapped) == sum(len(v) for v in by_path.values()) else {}


def continuation(
    facts: ThreadFacts,
    requests: Sequence[RunRequest],
    head: str | None,
    fork_from: str | None,
    ids: Mapping[str, str] | None = None,
) -> list[RunRequest] | str:
    """The migrated thread's ``requests`` for the fresh thread: a run from the live head starts from the fresh
    thread's head, a rerun of the last turn from the checkpoint before the fresh thread's last input, and an answer
    keyed by the live questions' ids is keyed by the fresh ones' (``ids``, `question_ids`). Pure."""
    mapped: list[RunRequest] = []
    ids = ids or {}
    for request in requests:
        if request.kind == "resume" and isinstance(request.resume, Mapping) and set(request.resume) & set(ids):
            if not set(request.resume) <= set(ids):
                return "its answer names questions by ids the fresh thread's questions do not match"
            request = dataclasses.replace(request, resume={ids[k]: v for k, v in request.resume.items()})
        checkpoint = request.checkpoint_id
        if checkpoint is None:
            mapped.append(request)
            continue
        if checkpoint == facts.head and head is not None:
            target: str | None = head
        elif checkpoint == facts.fork_from and fork_from is not None:
            target = fork_from
        else:
            return f"its {request.kind} starts from checkpoint {checkpoint}, which has no counterpart on the fresh thread"
        mapped.append(
            RunRequest(
                kind=request.kind,
                assistant_id=request.assistant_id,
                input=request.input,
                resume=request.resume,
                checkpoint_id=target,
                context=request.context,
                why=request.why,
            )
        )
    return mapped


# -- on an Agent Server ----------------------------------------------------------------------


async def read_plan(client: Any, thread_id: str, graph_id: str) -> RebuildPlan:
    """`plan_rebuild` from the live server's history and runs of ``thread_id`` (read only)."""
    from langgraph_sdk.errors import APIStatusError

    try:
        runs = await client.runs.list(thread_id, limit=RUNS_LIMIT)
        history = await client.threads.get_history(thread_id, limit=HISTORY_LIMIT)
    except APIStatusError as exc:
        return RebuildPlan(thread_id, graph_id, refused=f"its history cannot be read: {exc.status_code}")
    return plan_rebuild(thread_id, graph_id, history, runs)


async def _rebuild_one(
    url: str,
    headers: Mapping[str, str],
    facts: ThreadFacts,
    plan: RebuildPlan,
    requests: Sequence[RunRequest],
    deadline: Any,
) -> Rebuilt:
    import httpx
    from langgraph_sdk import get_client
    from langgraph_sdk.errors import APIStatusError

    from migrations_playbook.proof.shadow.api import run_request
    from migrations_playbook.sources.api.reads import short_keepalive

    done = Rebuilt(thread_id=facts.thread_id)
    client = short_keepalive(get_client(url=url, headers=dict(headers) or None), deadline=deadline)
    try:
        made = await client.threads.create(metadata={REBUILT_MARK: facts.thread_id, "graph_id": facts.graph_id})
        fresh = done.fresh_id = str(made["thread_id"])
        for index, step in enumerate(plan.steps):
            run, _ = await run_request(client, fresh, step.request())
            if run.failed:
                done.failed = f"its recorded run {index + 1} ({step.kind}) fails here: {run.failed[:200]}"
                return done
        state = await client.threads.get_state(fresh, subgraphs=True)
        done.values, done.nested = state.get("values"), nested_values(state)
        done.next, done.pending = list(state.get("next") or []), pending_questions(state)
        history = await client.threads.get_history(fresh, limit=HISTORY_LIMIT)
        runs = await client.runs.list(fresh, limit=RUNS_LIMIT)
        inputs = {str(r.get("run_id")): _kwargs(r)["input"] for r in runs if _kwargs(r).get("input") is not None}
        _, _, fork_from = input_of(history, inputs)
        head = (state.get("checkpoint") or {}).get("checkpoint_id")
        ids = question_ids(pending_interrupts(facts.state), pending_interrupts(state))
        mapped = continuation(facts, requests, str(head) if head else None, fork_from, ids)
        if isinstance(mapped, str):
            done.failed = mapped
            return done
        trace = ThreadTrace(thread_id=facts.thread_id, graph_id=facts.graph_id, start_checkpoint=head)
        trace.values, trace.nested, trace.pending_before = done.values, dict(done.nested), list(done.pending)
        after: Mapping[str, Any] | None = state
        for request in mapped:
            run, after = await run_request(client, fresh, request)
            trace.runs.append(run)
        if after is not None:
            trace.values, trace.nested = after.get("values"), nested_values(after)
        done.trace = trace
        return done
    except (APIStatusError, httpx.TransportError) as exc:
        done.failed = done.failed or f"{DROPPED}: {str(exc)[:200]}"
        return done
    finally:
        await client.aclose()


async def rebuild_side(
    url: str,
    facts: Sequence[ThreadFacts],
    plans: Mapping[str, RebuildPlan],
    leader: Mapping[str, ThreadTrace],
    *,
    headers: Mapping[str, str] | None = None,
    deadline: Any = None,
    concurrency: int = 8,
) -> dict[str, Rebuilt]:
    """Every rebuildable thread of ``facts`` born again on the server at ``url`` and continued with the requests
    the leader (side A) sent its migrated twin (``leader``: thread id -> A's trace)."""
    import asyncio

    gate = asyncio.Semaphore(concurrency)
    found: dict[str, Rebuilt] = {}

    async def one(item: ThreadFacts) -> None:
        plan = plans.get(item.thread_id)
        trace = leader.get(item.thread_id)
        if plan is None or plan.refused or trace is None or not trace.present or trace.skipped:
            return
        async with gate:
            for _ in range(2):  # a connection the loaded server dropped is tried once more, on a new fresh thread
                done = await _rebuild_one(url, headers or {}, item, plan, [r.request for r in trace.runs], deadline)
                if not (done.failed or "").startswith(DROPPED):
                    break
            found[item.thread_id] = done

    await asyncio.gather(*(one(item) for item in facts))
    return found
