"""One side of the shadow proof on an Agent Server: drive the threads through langgraph-sdk and record.

The side is a server holding a copy of the live threads (a staging `langgraph dev` started on a copy
of the live persistence folder, or a staging URL). As leader (side A) it decides each thread's runs
from what it sees (`shadow_drive`); as follower (A2, B) it sends the leader's requests verbatim. Each
run is streamed with ``stream_mode=["tasks", "custom", "values"]`` and subgraphs, so every finished task, its
writes, its questions and its errors are recorded (`shadow_trace.TraceRecorder`); after the runs the
thread's values are read, and at the end every long-term store item.

The live server is read for the facts only (`read_facts`: state, last run, history); nothing is
sent to it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from migrations_playbook.proof.resume import ResumeRule
from migrations_playbook.proof.shadow.drive import (
    ThreadFacts,
    after_run,
    answer_variants,
    input_of,
    live_answers,
    planned_requests,
)
from migrations_playbook.proof.shadow.traces import (
    STREAM_MODES,
    RunRequest,
    RunTrace,
    SideTrace,
    ThreadTrace,
    TraceRecorder,
    base_of,
    nested_values,
    pending_questions,
    variant_key,
)
from migrations_playbook.sources.api.paging import PageProgress, offset_pages, server_of
from migrations_playbook.sources.api.reads import short_keepalive
from migrations_playbook.sources.budget import Deadline

CONCURRENCY = 8
"""Threads driven at once on one side."""
HISTORY_LIMIT = 200
"""Checkpoints read back to find a thread's last input."""
STORE_PAGE = 500
RUNS_LIMIT = 20
"""Runs read back to find the thread's last run and the last one given an input."""


def _input_runs(runs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Run id -> input, for the runs that were given an input (the server keeps it in the run's kwargs)."""
    found: dict[str, Any] = {}
    for run in runs:
        kwargs = run.get("kwargs") or {}
        if isinstance(kwargs, Mapping) and kwargs.get("input") is not None and not kwargs.get("command"):
            found[str(run.get("run_id"))] = kwargs["input"]
    return found


def _kwargs(run: Mapping[str, Any]) -> Mapping[str, Any]:
    found = run.get("kwargs")
    return found if isinstance(found, Mapping) else {}


async def read_facts(client: LangGraphClient, thread_id: str, graph_id: str, status: str) -> ThreadFacts:
    """What the drive needs of one live thread: its state, the assistant and context of its last run,
    and (idle threads) its last input and the checkpoint before it."""
    state: Mapping[str, Any] = await client.threads.get_state(thread_id, subgraphs=True)
    runs = await client.runs.list(thread_id, limit=RUNS_LIMIT)
    assistant_id, context = graph_id, None
    if runs:
        assistant_id = str(runs[0].get("assistant_id") or graph_id)
        kwargs = runs[0].get("kwargs") or {}
        found = kwargs.get("context") if isinstance(kwargs, Mapping) else None
        context = dict(found) if isinstance(found, Mapping) and found else None
    has_input, last_input, fork_from = False, None, None
    idle = not state.get("next") and not state.get("interrupts")
    answered = any(isinstance(_kwargs(r).get("command"), Mapping) for r in runs)
    answers: dict[Any, Any] = {}
    failed = status == "error"  # retried, then given a next turn: its last input is that turn's default
    if idle or answered or failed:
        history = await client.threads.get_history(thread_id, limit=HISTORY_LIMIT)
        if idle or failed:
            has_input, last_input, fork_from = input_of(history, _input_runs(runs))
        answers = live_answers(graph_id, history, runs)
    return ThreadFacts(
        thread_id=thread_id,
        graph_id=graph_id,
        status=status,
        state=state,
        assistant_id=assistant_id,
        context=context,
        has_input=has_input,
        last_input=last_input,
        fork_from=fork_from,
        answers=answers,
    )


async def _run(client: LangGraphClient, thread_id: str, request: RunRequest) -> tuple[RunTrace, Mapping[str, Any] | None]:
    import httpx
    from langgraph_sdk.errors import APIStatusError

    recorder = TraceRecorder(request)
    kwargs: dict[str, Any] = {"stream_mode": list(STREAM_MODES), "stream_subgraphs": True}
    if request.kind == "resume":
        kwargs["command"] = {"resume": request.resume}
    elif request.kind not in ("continue", "retry"):
        kwargs["input"] = request.input
    if request.checkpoint_id:
        kwargs["checkpoint_id"] = request.checkpoint_id
    if request.context:
        kwargs["context"] = dict(request.context)
    kwargs.update(request.extra or {})  # a held run's or cron's own command, config, interrupt settings
    try:
        async for part in client.runs.stream(thread_id, request.assistant_id, **kwargs):
            mode, _, namespace = part.event.partition("|")
            recorder.feed(mode, namespace.split("|") if namespace else (), part.data)
    except APIStatusError as exc:
        recorder.refused(f"{exc.status_code}: {str(exc)[:300]}")
    except httpx.TransportError as exc:  # the server dropped the run's connection (an unhandled error there)
        recorder.failed(f"{type(exc).__name__}: the server dropped the run's connection")
    state: Mapping[str, Any] | None = None
    status: str | None = None
    try:
        status = (await client.threads.get(thread_id)).get("status")
        state = await client.threads.get_state(thread_id, subgraphs=True)
    except APIStatusError as exc:
        recorder.failed(recorder.trace.error or f"the thread's state cannot be read after the run: {exc.status_code}")
    except httpx.TransportError as exc:
        recorder.failed(recorder.trace.error or f"the thread's state cannot be read after the run: {type(exc).__name__}")
    return recorder.rest(status, state), state


async def run_request(client: LangGraphClient, thread_id: str, request: RunRequest) -> tuple[RunTrace, Mapping[str, Any] | None]:
    """One run of ``request`` on ``thread_id``, streamed and recorded, and the thread's state after it (None where
    it cannot be read): for other drivers of a side (`proof/shadow/rebuild.py`)."""
    return await _run(client, thread_id, request)


async def _drive_thread(
    url: str,
    headers: Mapping[str, str],
    facts: ThreadFacts,
    *,
    leader: bool,
    rule: ResumeRule,
    turn_inputs: Mapping[str, Any],
    given: Sequence[RunRequest],
    deadline: Deadline | None,
    key: str | None = None,
    on: str | None = None,
    plan: Sequence[RunRequest] | None = None,
) -> ThreadTrace:
    """Drive one thread: ``facts.thread_id``, or its copy ``on`` (an answer variant, traced under ``key``, whose
    leader sends ``plan``)."""
    import httpx
    from langgraph_sdk.errors import APIStatusError, NotFoundError

    thread_id = on or facts.thread_id
    trace = ThreadTrace(thread_id=key or facts.thread_id, graph_id=facts.graph_id)
    client = short_keepalive(get_client(url=url, headers=dict(headers) or None), deadline=deadline)
    try:
        try:
            start = await client.threads.get_state(thread_id, subgraphs=True)
        except NotFoundError:
            trace.present = trace.exists = False
            return trace
        except APIStatusError as exc:
            trace.unreadable = f"{exc.status_code}: {str(exc)[:300]}"
            return trace
        except httpx.TransportError as exc:  # an unhandled error while building the state drops the connection
            trace.unreadable = f"{type(exc).__name__}: the server dropped the connection reading the state"
            return trace
        trace.values = start.get("values")
        trace.nested = nested_values(start)
        trace.start_checkpoint = (start.get("checkpoint") or {}).get("checkpoint_id")
        trace.pending_before = pending_questions(start)
        requests: list[RunRequest]
        if leader and plan is not None:
            requests = list(plan)
        elif leader:
            planned = planned_requests(facts, rule, turn_inputs)
            if isinstance(planned, str):
                trace.skipped = planned
                requests = []
            else:
                requests = list(planned)
        else:
            requests = list(given)
        sent: list[RunRequest] = []
        after: Mapping[str, Any] | None = start
        while requests:
            request = requests.pop(0)
            sent.append(request)
            run, after = await _run(client, thread_id, request)
            trace.runs.append(run)
            if leader and after is not None:
                requests = after_run(facts, after, rule, sent, requests)
        if after is not None:
            trace.values = after.get("values")
            trace.nested = nested_values(after)
        try:
            await client.threads.get(thread_id)
        except NotFoundError:
            trace.exists = False
        except httpx.TransportError:
            trace.unreadable = trace.unreadable or "the server dropped the connection reading the thread"
        return trace
    finally:
        await client.aclose()


async def _copy_thread(url: str, headers: Mapping[str, str], thread_id: str, deadline: Deadline | None) -> str:
    """A copy of ``thread_id`` on the side's server (its checkpoints and pending writes): the new thread's id."""
    client = short_keepalive(get_client(url=url, headers=dict(headers) or None), deadline=deadline)
    try:
        made = await client.http.post(f"/threads/{thread_id}/copy", json=None)
    finally:
        await client.aclose()
    if not isinstance(made, Mapping) or not made.get("thread_id"):
        raise ValueError(f"the copy of thread {thread_id} came back without a thread id: {str(made)[:200]}")
    return str(made["thread_id"])


async def drive_side(
    label: str,
    url: str,
    facts: Sequence[ThreadFacts],
    *,
    rule: ResumeRule,
    turn_inputs: Mapping[str, Any],
    leader: SideTrace | None = None,
    headers: Mapping[str, str] | None = None,
    deadline: Deadline | None = None,
    owners: Mapping[str, Mapping[str, str]] | None = None,
) -> SideTrace:
    """Drive every thread of ``facts`` on the server at ``url``: as leader (``leader`` None) deciding the
    runs, else sending the runs ``leader`` recorded for each thread; every request within ``deadline``, with the
    headers of the thread's owner (``owners``: thread id -> headers, `config.owners_of`), else ``headers``.

    A thread waiting for an answer is also driven once per other answer a client may send (`answer_variants`),
    each on a copy of the thread made on this side before anything runs, traced under `variant_key`."""
    import httpx
    from langgraph_sdk.errors import APIStatusError

    side = SideTrace(label=label)
    gate = asyncio.Semaphore(CONCURRENCY)
    by_id = {item.thread_id: item for item in facts}
    jobs: list[tuple[str, ThreadFacts, list[RunRequest] | None]] = []
    if leader is None:
        for item in facts:
            jobs.append((item.thread_id, item, None))
            jobs += [(variant_key(item.thread_id, n), item, [r]) for n, r in enumerate(answer_variants(item, rule), 1)]
    else:
        jobs = [(key, by_id[base_of(key)], None) for key in leader.threads if base_of(key) in by_id]
    copies: dict[str, str] = {}

    def as_owner(thread_id: str) -> Mapping[str, str]:
        return (owners or {}).get(thread_id, headers or {})

    async def copy(key: str, item: ThreadFacts) -> None:
        async with gate:
            try:
                copies[key] = await _copy_thread(url, as_owner(item.thread_id), item.thread_id, deadline)
            except (APIStatusError, httpx.TransportError, ValueError) as exc:
                side.threads[key] = ThreadTrace(
                    thread_id=key, graph_id=item.graph_id, unreadable=f"the thread could not be copied: {str(exc)[:300]}"
                )

    await asyncio.gather(*(copy(key, item) for key, item, _ in jobs if key != item.thread_id))

    async def one(key: str, item: ThreadFacts, plan: list[RunRequest] | None) -> None:
        if key in side.threads:  # its copy failed
            return
        given: list[RunRequest] = []
        if leader is not None and key in leader.threads:
            given = [r.request for r in leader.threads[key].runs]
        async with gate:
            side.threads[key] = await _drive_thread(
                url,
                as_owner(item.thread_id),
                item,
                leader=leader is None,
                rule=rule,
                turn_inputs=turn_inputs,
                given=given,
                deadline=deadline,
                key=key,
                on=copies.get(key),
                plan=plan,
            )

    await asyncio.gather(*(one(key, item, plan) for key, item, plan in jobs))
    side.threads = {key: side.threads[key] for key, _, _ in jobs}
    views = [dict(headers or {})]
    views += [dict(h) for h in (owners or {}).values() if dict(h) not in views]
    for seen in [await store_items(url, view, deadline=deadline) for view in views]:  # as each owner reads the store
        if seen is not None:
            side.store = {**(side.store or {}), **seen}
    return side


def _item_key(item: Mapping[str, Any]) -> str:
    return "/".join([*item.get("namespace", []), str(item.get("key"))])


async def store_items(url: str, headers: Mapping[str, str], *, deadline: Deadline | None = None) -> dict[str, Any] | None:
    """``namespace/key`` -> value of every long-term store item (None when the server has no store); paged
    by offset, each page checked to advance (`paging.PageProgress`)."""
    from langgraph_sdk.errors import APIStatusError

    client = short_keepalive(get_client(url=url, headers=dict(headers) or None), deadline=deadline)

    async def fetch(offset: int) -> list[Mapping[str, Any]]:
        page = await client.store.search_items((), limit=STORE_PAGE, offset=offset)
        found = page.get("items") if isinstance(page, Mapping) else None
        return [item for item in found or [] if isinstance(item, Mapping)]

    items: dict[str, Any] = {}
    progress = PageProgress(server_of(client), "POST /store/items/search", "store items")
    try:
        async for found in offset_pages(fetch, size=STORE_PAGE, key=_item_key, progress=progress):
            for item in found:
                items[_item_key(item)] = item.get("value")
        return items
    except APIStatusError:
        return None
    finally:
        await client.aclose()
