"""Custom auth of the deployment (``"auth": {"path": "server.auth:auth"}``).

Who may do what, on Agent Server's native resources (seed 004: ownership,
duplicate runs; here on thread metadata and the auth handlers, not home-made tables):

* **authenticate**: bearer token -> user (`server/access.py`). With no
  ``AUTH_TOKENS`` every request is the dev user ``dev``, so ``make run`` and Studio
  work without keys; with tokens, a missing or unknown token is a 401.
* **threads**: creation stamps ``metadata.owner`` (another user's thread id is a
  neutral 409, not "already exists"); in token mode reads,
  searches, state, history, updates, deletes and runs are filtered to the owner.
  Another user's thread answers 404, never its data. Operators (``AUTH_OPERATORS``)
  read every thread, and write only their own. Dev mode stamps but does not filter.
* **runs**: before a run is inserted, `server/serving.py` refuses what
  its graph does not serve (a run through another graph than the thread's, a
  second run on a busy approval thread, input or a ``command`` the thread cannot
  take (`server/payloads.py`), a resume
  that answers no pending approval, a new message while an approval is pending),
  and the runtime guard (`server/guarding.py`) refuses a run on a thread
  the running code cannot continue correctly (a 409 naming the finding): a 4xx
  with a message, and the thread stays exactly as it was. Admissions on one
  thread are serialized, so two concurrent requests cannot both pass. Accepted runs get the
  LangSmith metadata of `graphs/common/tracing.py` and the contract hash of the
  running code.
* **assistants**: the graphs' system assistants are readable by all; assistants a
  user creates are theirs (another owner's ``assistant_id`` is a neutral 409, as for
  threads). A client's assistant cannot claim ``created_by: system`` and its owner
  cannot be changed (403).
* **store**: namespaced under the owner; reading or deleting in a namespace that
  does not exist creates nothing (`ABSENT_NAMESPACE`). **crons**: not offered (creating,
  updating or deleting one is a 403; listing them answers nothing).
* **run deletion**: the run must be on the thread, the thread the caller's (404), and the
  run finished (409), before the runtime deletes anything (`_on_thread_delete`).
* Anything else is denied: the handler list fails closed.

`make_auth(policies=...)` builds the same object for another policy table
(tests serve slow stand-in graphs with it).
"""

from __future__ import annotations

import asyncio
import math
import weakref
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager, nullcontext
from typing import Any, cast

from langgraph_sdk import Auth, get_client
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.errors import NotFoundError

from graphs.common import tracing
from migrations_playbook.guard import CONTRACT_KEY, Guard
from server import access, serving
from server.guarding import deployment_guard
from server.persistence import thread_records
from server.request_limits import MAX_AFTER_SECONDS

NOT_FOUND = "Thread or assistant not found."
"""What the server itself answers for a thread the caller may not see."""

SYSTEM_KEY, SYSTEM_VALUE = "created_by", "system"
"""Assistant metadata the server gives the graphs' own assistants (readable by everyone)."""

ABSENT_NAMESPACE = (":absent",)
"""Where a store read or delete of a namespace that does not exist is sent, so that it
does not create that namespace (the in-memory store's ``get`` and ``delete`` do).
No client can write here: every client namespace starts with its owner, and no owner
starts with ``:``."""


def _owner(ctx: Auth.types.AuthContext) -> str:
    return access.owner_identity(
        ctx.user.identity,
        studio=isinstance(ctx.user, Auth.types.StudioUser),
        config=access.access_config(),
    )


def _reads_all(ctx: Auth.types.AuthContext) -> bool:
    return access.READ_ALL in (ctx.permissions or ()) and not isinstance(ctx.user, Auth.types.StudioUser)


def _write_filter(ctx: Auth.types.AuthContext) -> Auth.types.FilterType | None:
    """Token mode: the caller's own threads only. Dev mode: no filter (one user; threads
    made by in-process routes, which bypass auth, or before auth existed carry no owner)."""
    if access.access_config().dev_mode:
        return None
    return {access.OWNER_KEY: _owner(ctx)}


def _read_filter(ctx: Auth.types.AuthContext) -> Auth.types.FilterType | None:
    return None if _reads_all(ctx) else _write_filter(ctx)


def _refuse(status: int, message: str) -> Auth.exceptions.HTTPException:
    return Auth.exceptions.HTTPException(status_code=status, detail=message)


@asynccontextmanager
async def _loopback() -> AsyncIterator[LangGraphClient]:
    """An in-process client; its requests act as the caller (the server passes the auth context on)."""
    client = get_client()
    try:
        yield client
    finally:
        await client.aclose()


async def _graph_of(client: LangGraphClient, assistant_id: Any) -> str | None:
    if assistant_id is None:
        return None
    try:
        assistant = await client.assistants.get(str(assistant_id))
    except NotFoundError:
        return None
    return assistant["graph_id"]


async def _visible_thread(client: LangGraphClient, thread_id: str | None) -> dict[str, Any] | None:
    if thread_id is None:
        return None
    try:
        return dict(await client.threads.get(thread_id))
    except NotFoundError:  # absent, or not the caller's: the server answers for it
        return None


async def _thread_to_admit(
    client: LangGraphClient, thread_id: str | None, *, owner: str, check_owner: bool, graph_id: str, guard: Guard | None
) -> dict[str, Any] | None:
    """The thread as `admit_run` judges it (`_visible_thread`'s answer), read from the runtime's
    own record when this process holds it (`thread_records.local_thread`, issue 39).

    Through the API, ``threads.get`` serialized the whole values (every message of the
    conversation) and the runtime found the thread by a scan of every thread: a run's admission
    cost more at every turn and with every thread stored. What admission reads of the values is
    their keys (are there any) and the flow version, so the record's fields but values are
    serialized as the API does and the values are a shallow copy (its keys, the runtime's own
    items, read only). Where the answer could differ, the API is asked as before: a thread of
    another owner (what the caller may see is the API's call), a thread the guard must read
    (not yet admitted under the running code: the guard judges the values themselves), and
    any server that does not hold the records (the standalone Agent Server).
    """
    local, record = thread_records.local_thread(thread_id) if thread_id is not None else (False, None)
    if not local:
        return await _visible_thread(client, thread_id)
    if record is None:
        return None  # no such thread: the server answers for it, as for one the caller cannot see
    metadata = record.get("metadata") or {}
    if check_owner and metadata.get(access.OWNER_KEY) != owner:
        return await _visible_thread(client, thread_id)
    if guard is not None:
        current = await guard.identity(graph_id)  # None: a graph the guard does not serve, which it never reads
        if current is not None and metadata.get(CONTRACT_KEY) != current:
            return await _visible_thread(client, thread_id)
    # the server's own JSON encoder (only inside the server, where `local` is True); langgraph-api ships no py.typed
    from langgraph_api.serde import json_dumpb, json_loads  # type: ignore[import-untyped]

    view: dict[str, Any] = json_loads(json_dumpb({key: value for key, value in record.items() if key != "values"}))
    view["values"] = dict(record.get("values") or {})
    return view


async def _namespace_exists(namespace: tuple[str, ...]) -> bool:
    """Whether the store holds this exact namespace (namespaces are listed sorted, so a
    namespace comes before every namespace below it). Listing creates nothing."""
    async with _loopback() as client:
        found = await client.store.list_namespaces(prefix=list(namespace), limit=1)
    return [tuple(ns) for ns in found.get("namespaces", [])][:1] == [namespace]


async def _pending(client: LangGraphClient, thread_id: str, config: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    checkpoint_id = ((config or {}).get("configurable") or {}).get("checkpoint_id")
    state = await client.threads.get_state(thread_id, checkpoint_id=checkpoint_id)
    return serving.pending_interrupts(state)


async def _check_checkpoint(
    client: LangGraphClient, thread_id: str | None, thread: Mapping[str, Any] | None, config: Mapping[str, Any] | None
) -> None:
    """A run from a ``checkpoint_id`` needs a checkpoint the thread has (404 otherwise).

    Without this, a made-up id on ``ticket_triage`` failed the state read of the resume
    checks (a 500), and on a chat graph the run started from an empty state, so the
    thread's head forgot the conversation. A subgraph's checkpoint (a ``checkpoint_ns``)
    is left to the server.
    """
    configurable = (config or {}).get("configurable") or {}
    checkpoint_id = configurable.get("checkpoint_id")
    if not checkpoint_id or configurable.get("checkpoint_ns"):
        return
    if thread is not None and thread_id is not None:
        try:
            await client.threads.get_state(thread_id, checkpoint_id=str(checkpoint_id))
            return
        except NotFoundError:
            pass
    where = f"thread {thread_id}" if thread is not None and thread_id is not None else "a new thread"
    raise serving.RunRefused(
        404,
        f"{where} has no checkpoint {checkpoint_id!r}, so a run cannot start from it; nothing was changed. "
        "List the thread's checkpoints with threads.get_history, or leave checkpoint_id out to run from the latest state.",
    )


def check_after_seconds(value: Any) -> None:
    """``after_seconds`` is a number of seconds from 0 to `MAX_AFTER_SECONDS` (422 otherwise).

    The runtime adds it to the run's start time after it has marked the thread busy: a
    value past what a date holds (``10**30``) was a 500 that left the thread busy with no
    run (every later run a 409), and a delay of years parks a pending run that keeps its
    thread busy as long. A refused value changes nothing: the run is not inserted.
    """
    if value is None:
        return
    number = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    if not number or not 0 <= value <= MAX_AFTER_SECONDS:
        raise serving.RunRefused(
            422,
            f"after_seconds must be a number of seconds from 0 to {MAX_AFTER_SECONDS} (a year), not {value!r}; "
            "leave it out (or send 0) to start the run now.",
        )


async def _keep_graph(thread_id: Any, metadata: Mapping[str, Any]) -> None:
    """threads.update: the graph a thread belongs to (``metadata.graph_id``, which the
    server writes on its first run and the run handler checks) cannot be changed (403)."""
    if "graph_id" not in metadata or thread_id is None:
        return
    async with _loopback() as client:
        thread = await _visible_thread(client, str(thread_id))
    current = ((thread or {}).get("metadata") or {}).get("graph_id")
    if current is not None and metadata["graph_id"] != current:
        raise _refuse(
            403,
            f"thread {thread_id} belongs to {current} (the graph it first ran); its graph_id cannot be changed. "
            f"Leave graph_id out of the metadata, or start a new thread for {metadata['graph_id']}.",
        )


_ADMISSIONS: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()
"""One lock per thread id while run requests on it are being admitted (dropped when unused)."""


def run_admission(thread_id: str | None) -> AbstractAsyncContextManager[Any]:
    """Serialize the admission of runs on one thread, within this server process.

    The server inserts the run right after the handler returns, with no await in
    between (langgraph-runtime-inmem's ``Runs.put``), and marks the thread busy as it
    does. So a request that waits here reads the thread only once the run admitted
    before it is inserted, and sees it busy: that is what makes a second run on an
    approval thread a 409 whatever strategy the client sent (the server itself checks
    only ``reject``, and ignores a strategy the handler changes). Code that starts runs
    itself (a custom route) holds it from `admit_run` until its run is inserted.
    """
    if thread_id is None:
        return nullcontext()
    lock = _ADMISSIONS.get(thread_id)
    if lock is None:
        lock = _ADMISSIONS[thread_id] = asyncio.Lock()
    return lock


# -- handlers shared by several resource actions ----------------------------------------


async def _taken_by_another(kind: str, resource_id: str, owner: str) -> bool:
    """Whether a thread (``kind`` "thread") or an assistant ("assistant") of another owner, or
    none, has this id: a client-chosen id the caller may not use.

    The in-process client reads as the caller (the server passes the auth context on), so
    another user's thread or assistant looks absent; for the second look-up the request's auth
    context is cleared, which is how the server's own in-process calls read (no caller, no
    filters). Nothing of the resource leaves this function.
    """
    # the server's per-request auth context; only inside the server. langgraph-api ships no py.typed
    from langgraph_api.utils import AuthContext  # type: ignore[import-untyped]

    async def read(client: LangGraphClient) -> dict[str, Any] | None:
        try:
            found = await (client.threads.get(resource_id) if kind == "thread" else client.assistants.get(resource_id))
        except NotFoundError:
            return None
        return dict(found)

    async with _loopback() as client:
        mine = await read(client)
    if mine is not None and (mine.get("metadata") or {}).get(access.OWNER_KEY) == owner:
        return False
    token = AuthContext.set(None)
    try:
        async with _loopback() as client:
            return await read(client) is not None
    finally:
        AuthContext.reset(token)


async def _refuse_taken_id(kind: str, resource_id: Any, owner: str) -> None:
    """A client-chosen id another owner's resource has is a neutral 409, the same as for any id
    the caller may not use: never the server's "already exists", which would confirm it. Token
    mode only (dev mode has one user)."""
    if resource_id is None or access.access_config().dev_mode:
        return
    if await _taken_by_another(kind, str(resource_id), owner):
        raise _refuse(409, f"{kind} id {resource_id} cannot be used: leave {kind}_id out to get a new {kind}, or pick another id")


async def _on_thread_create(ctx: Auth.types.AuthContext, value: Any) -> Auth.types.FilterType | None:
    """threads.create: the creator owns it, whatever metadata the client sent.

    A client-chosen ``thread_id`` that another user's thread has is refused with the
    same neutral 409 as any id the caller may not use, never "already exists" (the
    server's answer), which would confirm the thread. ``threads.copy`` also calls this
    handler, with the new id only (no ``if_exists``); the copy keeps the original's
    metadata, and `server/route_access.py` (middleware of the custom app) refuses
    an operator's copy of a thread that is not theirs before it gets here.
    """
    owner = _owner(ctx)
    value.setdefault("metadata", {})[access.OWNER_KEY] = owner
    if "if_exists" in value:
        await _refuse_taken_id("thread", value.get("thread_id"), owner)
    return _write_filter(ctx)


def _refuse_system_claim(metadata: Mapping[str, Any]) -> None:
    """``created_by: system`` marks the graphs' own assistants, which everyone reads: a
    client's assistant may not claim it (403)."""
    if metadata.get(SYSTEM_KEY) == SYSTEM_VALUE:
        raise _refuse(403, f"metadata.{SYSTEM_KEY} = {SYSTEM_VALUE!r} marks the graphs' own assistants: leave it out")


async def _on_assistant_create(ctx: Auth.types.AuthContext, value: Any) -> Auth.types.FilterType | None:
    """assistants.create: the creator owns it, whatever metadata the client sent. A client-chosen
    ``assistant_id`` another user's assistant (or a graph's own) has is the neutral 409 of threads:
    the server's "Assistant ... already exists" told Bob that Alice's assistant exists, whose GET
    answers him 404."""
    if value.get("metadata") is None:
        value["metadata"] = {}
    metadata = value["metadata"]  # changed in place: the very dict the server stores
    _refuse_system_claim(metadata)
    metadata[access.OWNER_KEY] = owner = _owner(ctx)
    await _refuse_taken_id("assistant", value.get("assistant_id"), owner)
    return _write_filter(ctx)


async def _on_assistant_update(ctx: Auth.types.AuthContext, value: Any) -> Auth.types.FilterType | None:
    """assistants.update: the owner's only; the owner cannot be changed, as for threads (403)."""
    metadata = value.get("metadata") or {}
    _refuse_system_claim(metadata)
    if access.OWNER_KEY in metadata and metadata[access.OWNER_KEY] != _owner(ctx):
        raise _refuse(403, "an assistant's owner cannot be changed")
    return _write_filter(ctx)


async def _read_own(ctx: Auth.types.AuthContext, value: Any) -> Auth.types.FilterType | None:
    """threads.read (get, state, history, runs, streams), threads.search (and count), crons.read/search."""
    return _read_filter(ctx)


async def _read_own_or_system(ctx: Auth.types.AuthContext, value: Any) -> Auth.types.FilterType | None:
    """assistants.read, assistants.search: the graphs' own assistants are everyone's.

    Keep it free of I/O: for a run through a user's assistant the server calls it between
    the run handler and the insert, where `run_admission` relies on there being no await."""
    own = _write_filter(ctx)  # operators read every thread, not every user's assistants: an assistant is its creator's
    # the server takes "$or" filters (langgraph-runtime-inmem); langgraph-sdk's FilterType does not list them
    return None if own is None else cast(Auth.types.FilterType, {"$or": [own, {SYSTEM_KEY: SYSTEM_VALUE}]})


async def _write_own(ctx: Auth.types.AuthContext, value: Any) -> Auth.types.FilterType | None:
    """assistants.delete."""
    return _write_filter(ctx)


FINISHED_RUN_STATUSES = frozenset({"success", "error", "timeout", "interrupted"})
"""Run statuses that never change again: a run in one of them may be deleted."""


async def _on_thread_delete(ctx: Auth.types.AuthContext, value: Any) -> Auth.types.FilterType | None:
    """threads.delete, which is also the event of ``DELETE /threads/{id}/runs/{run_id}``.

    For a run, the runtime applies the returned filter to the thread only, and then
    deletes the checkpoints of whatever run id it was given before it looks for the run
    on the thread (langgraph-runtime-inmem 0.36.7 ``Runs.delete``): another user's run
    id sent on one's own thread reached their checkpoints. So the run is checked here,
    before anything is read or changed: it must be on this thread and the thread the
    caller's (404 otherwise, as for a run that does not exist), and finished (409: a run
    in flight is cancelled, not deleted).
    """
    run_id = value.get("run_id") if isinstance(value, Mapping) else None
    if run_id is not None:
        await _check_run_deletion(ctx, str(value.get("thread_id")), str(run_id))
    return _write_filter(ctx)


async def _check_run_deletion(ctx: Auth.types.AuthContext, thread_id: str, run_id: str) -> None:
    not_found = _refuse(404, f"run {run_id} not found on thread {thread_id}")
    async with _loopback() as client:  # reads as the caller: another user's thread is absent
        thread = await _visible_thread(client, thread_id)
        if thread is None:
            raise not_found
        if not access.access_config().dev_mode and (thread.get("metadata") or {}).get(access.OWNER_KEY) != _owner(ctx):
            raise not_found  # an operator reads it, but deletes only on their own threads
        try:
            run = await client.runs.get(thread_id, run_id)
        except NotFoundError:
            raise not_found from None
    if run.get("status") not in FINISHED_RUN_STATUSES:
        raise _refuse(
            409,
            f"run {run_id} is {run.get('status')}: a run in flight cannot be deleted. Cancel it with "
            "runs.cancel, or wait for it to finish, then delete it.",
        )


async def admit_run(
    client: LangGraphClient,
    *,
    owner: str,
    check_owner: bool,
    graph_id: str,
    thread_id: str | None,
    input: Any = None,
    command: Mapping[str, Any] | None = None,
    config: Mapping[str, Any] | None = None,
    multitask_strategy: str | None = None,
    policies: Mapping[str, serving.GraphPolicy] = serving.GRAPH_POLICIES,
    guard: Guard | None = None,
) -> dict[str, Any]:
    """Decide whether a run may start; return the metadata to stamp on it.

    Raises `serving.RunRefused` (404 for a thread ``owner`` does not own when
    ``check_owner``, or a ``checkpoint_id`` the thread does not have; 409, 413, 422
    from `server/serving.py`). The policy applied
    is the thread's own graph's: a run through another graph is refused first, and on an
    approval flow with an approval pending only a resume passes. ``client`` reads
    the thread: the run handler passes the in-process client, which reads as the
    caller. Code that starts runs without going through the API's auth (a custom
    route using the in-process client) can call this itself with its own user, inside
    `run_admission` until its run is inserted.
    With a ``guard`` (`migrations_playbook.guard`), a run on a thread the running code
    cannot continue correctly is refused with a 409 naming the finding and the fix,
    and every accepted run is stamped with the running code's contract hash.
    """
    policy = serving.policy_for(graph_id, policies)
    thread = await _thread_to_admit(client, thread_id, owner=owner, check_owner=check_owner, graph_id=graph_id, guard=guard)
    if thread is not None and check_owner and (thread.get("metadata") or {}).get(access.OWNER_KEY) != owner:
        raise serving.RunRefused(404, NOT_FOUND)  # an operator reads it, but runs only on their own threads
    if thread is not None and thread_id is not None:
        serving.check_thread_graph(graph_id, thread_id, (thread.get("metadata") or {}).get("graph_id"))
    await _check_checkpoint(client, thread_id, thread, config)
    serving.check_strategy(graph_id, policy, multitask_strategy)
    serving.check_input(graph_id, policy, input, limit=serving.max_message_chars())
    serving.check_command(graph_id, policy, command, thread, limit=serving.max_message_chars(), config=config)
    if thread is not None and thread_id is not None:
        serving.check_not_busy(graph_id, policy, thread_id, thread.get("status"))
        if guard is not None:
            # Before the resume checks: on a thread the running code cannot continue (a step it
            # no longer has), they would only see "nothing to resume"; the guard names why.
            refusal = await guard.check(client, graph_id=graph_id, thread=thread)
            if refusal is not None:
                raise serving.RunRefused(409, refusal.message)
        if command and "resume" in command and policy.resume_parser is not None:
            pending = await _pending(client, thread_id, config)
            serving.check_resume(graph_id, policy, thread_id, command["resume"], pending)
        elif policy.resume_parser is not None and thread.get("values"):
            pending = await _pending(client, thread_id, None)  # the head's: a fork would supersede it
            if ((config or {}).get("configurable") or {}).get("checkpoint_id"):
                pending = [*pending, *await _pending(client, thread_id, config)]
            serving.check_nothing_pending(graph_id, policy, thread_id, pending)
        if guard is not None:
            await guard.stamp(client, graph_id=graph_id, thread=thread)  # last: a refused run changes nothing
    flow_version = tracing.thread_flow_version(thread.get("values") if thread else None, serving.current_flow_version(policy))
    stamp = await guard.metadata_for(graph_id) if guard is not None else {}
    return {**tracing.run_metadata(graph_id, flow_version), **stamp, access.OWNER_KEY: owner}


def make_auth(
    *,
    policies: Mapping[str, serving.GraphPolicy] = serving.GRAPH_POLICIES,
    guard: Callable[[], Guard | None] = deployment_guard,
) -> Auth:
    """The deployment's `Auth`, serving runs by ``policies`` (graph id -> policy), with the
    runtime guard ``guard()`` returns (None: no guard)."""
    auth = Auth()

    @auth.authenticate
    async def authenticate(authorization: str | None = None) -> Auth.types.MinimalUserDict:
        try:
            config = access.access_config()
        except access.AccessConfigError as exc:
            raise _refuse(500, f"server auth is misconfigured: {exc}") from None
        try:
            return access.authenticate(authorization, config)  # type: ignore[return-value]  # a MinimalUserDict
        except access.Unauthenticated as exc:
            raise _refuse(401, str(exc)) from None

    # -- threads and assistants -------------------------------------------------------

    auth.on.threads.create(_on_thread_create)
    auth.on.assistants.create(_on_assistant_create)
    auth.on.assistants.update(_on_assistant_update)
    auth.on.threads.read(_read_own)
    auth.on.threads.search(_read_own)
    auth.on.assistants.read(_read_own_or_system)
    auth.on.assistants.search(_read_own_or_system)
    auth.on.threads.delete(_on_thread_delete)
    auth.on.assistants.delete(_write_own)

    @auth.on.threads.update
    async def on_thread_update(ctx: Auth.types.AuthContext, value: Auth.types.ThreadsUpdate) -> Auth.types.FilterType | None:
        metadata = value.get("metadata") or {}
        if access.OWNER_KEY in metadata and metadata[access.OWNER_KEY] != _owner(ctx):
            raise _refuse(403, "a thread's owner cannot be changed")
        await _keep_graph(value.get("thread_id"), metadata)
        return _write_filter(ctx)

    @auth.on.threads.create_run
    async def on_run_create(ctx: Auth.types.AuthContext, value: Auth.types.RunsCreate) -> Auth.types.FilterType | None:
        kwargs = value.get("kwargs") or {}
        try:
            check_after_seconds(value.get("after_seconds"))  # before the runtime marks the thread busy
        except serving.RunRefused as exc:
            raise _refuse(exc.status, exc.message) from None
        thread_id = str(value["thread_id"]) if value.get("thread_id") else None
        async with run_admission(thread_id), _loopback() as client:  # released just before the insert
            graph_id = await _graph_of(client, value.get("assistant_id"))
            if graph_id is None:
                return _write_filter(ctx)  # the server answers 404 for the assistant
            try:
                metadata = await admit_run(
                    client,
                    owner=_owner(ctx),
                    check_owner=not access.access_config().dev_mode,
                    graph_id=graph_id,
                    thread_id=thread_id,
                    input=kwargs.get("input"),
                    command=kwargs.get("command"),
                    config=kwargs.get("config"),
                    multitask_strategy=value.get("multitask_strategy"),
                    policies=policies,
                    guard=guard(),
                )
            except serving.RunRefused as exc:
                raise _refuse(exc.status, exc.message) from None
        value["metadata"].update(metadata)  # the very dict the server stores on the run (and a new thread)
        return _write_filter(ctx)

    # -- crons, store, everything else -----------------------------------------------

    # nothing to see (none can be made), but listing them works, as Studio does
    auth.on.crons.read(_read_own)
    auth.on.crons.search(_read_own)

    @auth.on.crons
    async def on_crons(ctx: Auth.types.AuthContext, value: Any) -> bool:
        raise _refuse(403, "crons are not offered by this deployment")

    @auth.on.store  # takes handlers of dict[str, Any]: the SDK's Store* TypedDicts do not fit its bound
    async def on_store(ctx: Auth.types.AuthContext, value: dict[str, Any]) -> None:
        owner = _owner(ctx)
        namespace = tuple(value.get("namespace") or ())
        if not namespace or namespace[0] != owner:
            namespace = value["namespace"] = (owner, *namespace)
        if ctx.action in ("get", "delete") and not await _namespace_exists(namespace):
            value["namespace"] = ABSENT_NAMESPACE  # nothing to read or delete; do not create it

    @auth.on
    async def deny_unhandled(ctx: Auth.types.AuthContext, value: Any) -> bool:
        raise _refuse(403, f"{ctx.resource}.{ctx.action} is not allowed")

    return auth


auth = make_auth()
"""Registered in langgraph.json as ``"auth": {"path": "server.auth:auth"}``."""
