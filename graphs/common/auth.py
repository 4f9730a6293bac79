"""Custom auth of the deployment (``"auth": {"path": "graphs.common.auth:auth"}``).

Who may do what, on Agent Server's native resources (seed 004: ownership,
duplicate runs; here on thread metadata and the auth handlers, not home-made tables):

* **authenticate**: bearer token -> user (`graphs/common/access.py`). With no
  ``AUTH_TOKENS`` every request is the dev user ``dev``, so ``make run`` and Studio
  work without keys; with tokens, a missing or unknown token is a 401.
* **threads**: creation stamps ``metadata.owner``; in token mode reads,
  searches, state, history, updates, deletes and runs are filtered to the owner.
  Another user's thread answers 404, never its data. Operators (``AUTH_OPERATORS``)
  read every thread, and write only their own. Dev mode stamps but does not filter.
* **runs**: before a run is inserted, `graphs/common/serving.py` refuses what
  its graph does not serve (a second run on a busy approval thread, input that
  cannot start a turn, a resume that answers no pending approval), and the
  runtime guard (`graphs/common/guarding.py`) refuses a run on a thread the
  running code cannot continue correctly (a 409 naming the finding): a 4xx with
  a message, and the thread stays exactly as it was. Accepted runs get the
  LangSmith metadata of `graphs/common/tracing.py` and the contract hash of the
  running code.
* **assistants**: the graphs' system assistants are readable by all; assistants a
  user creates are theirs.
* **store**: namespaced under the owner. **crons**: not offered (creating,
  updating or deleting one is a 403; listing them answers nothing).
* Anything else is denied: the handler list fails closed.

`make_auth(policies=...)` builds the same object for another policy table
(tests serve slow stand-in graphs with it).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any

from langgraph_sdk import Auth, get_client
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.errors import NotFoundError

from graphs.common import access, serving, tracing
from graphs.common.guarding import deployment_guard
from migrations_playbook.guard import Guard

NOT_FOUND = "Thread or assistant not found."
"""What the server itself answers for a thread the caller may not see."""


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


async def _pending(client: LangGraphClient, thread_id: str, config: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    checkpoint_id = ((config or {}).get("configurable") or {}).get("checkpoint_id")
    state = await client.threads.get_state(thread_id, checkpoint_id=checkpoint_id)
    return serving.pending_interrupts(state)


# -- handlers shared by several resource actions ----------------------------------------


async def _stamp_owner(ctx: Auth.types.AuthContext, value: Any) -> Auth.types.FilterType | None:
    """threads.create, assistants.create: the creator owns it, whatever metadata the client sent."""
    value.setdefault("metadata", {})[access.OWNER_KEY] = _owner(ctx)
    return _write_filter(ctx)


async def _read_own(ctx: Auth.types.AuthContext, value: Any) -> Auth.types.FilterType | None:
    """threads.read (get, state, history, runs, streams), threads.search (and count), crons.read/search."""
    return _read_filter(ctx)


async def _read_own_or_system(ctx: Auth.types.AuthContext, value: Any) -> Auth.types.FilterType | None:
    """assistants.read, assistants.search: the graphs' own assistants are everyone's."""
    own = _read_filter(ctx)
    return None if own is None else {"$or": [own, {"created_by": "system"}]}


async def _write_own(ctx: Auth.types.AuthContext, value: Any) -> Auth.types.FilterType | None:
    """threads.delete, assistants.update, assistants.delete."""
    return _write_filter(ctx)


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
    ``check_owner``; 409, 413, 422 from `graphs/common/serving.py`). ``client`` reads
    the thread: the run handler passes the in-process client, which reads as the
    caller. Code that starts runs without going through the API's auth (a custom
    route using the in-process client) can call this itself with its own user.
    With a ``guard`` (`migrations_playbook.guard`), a run on a thread the running code
    cannot continue correctly is refused with a 409 naming the finding and the fix,
    and every accepted run is stamped with the running code's contract hash.
    """
    policy = serving.policy_for(graph_id, policies)
    thread = await _visible_thread(client, thread_id)
    if thread is not None and check_owner and (thread.get("metadata") or {}).get(access.OWNER_KEY) != owner:
        raise serving.RunRefused(404, NOT_FOUND)  # an operator reads it, but runs only on their own threads
    serving.check_strategy(graph_id, policy, multitask_strategy)
    serving.check_input(graph_id, policy, input, limit=serving.max_message_chars())
    if thread is not None and thread_id is not None:
        serving.check_not_busy(graph_id, policy, thread_id, thread.get("status"))
        if command and "resume" in command and policy.resume_parser is not None:
            pending = await _pending(client, thread_id, config)
            serving.check_resume(graph_id, policy, thread_id, command["resume"], pending)
        if guard is not None:
            refusal = await guard.check(client, graph_id=graph_id, thread=thread, stamp=True)
            if refusal is not None:
                raise serving.RunRefused(409, refusal.message)
    flow_version = tracing.thread_flow_version(
        thread.get("values") if thread else None, serving.current_flow_version(policy)
    )
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

    for action in (auth.on.threads.create, auth.on.assistants.create):
        action(_stamp_owner)
    for action in (auth.on.threads.read, auth.on.threads.search):
        action(_read_own)
    for action in (auth.on.assistants.read, auth.on.assistants.search):
        action(_read_own_or_system)
    for action in (auth.on.threads.delete, auth.on.assistants.update, auth.on.assistants.delete):
        action(_write_own)

    @auth.on.threads.update
    async def on_thread_update(ctx: Auth.types.AuthContext, value: Auth.types.on.threads.update.value) -> Auth.types.FilterType | None:
        metadata = value.get("metadata") or {}
        if access.OWNER_KEY in metadata and metadata[access.OWNER_KEY] != _owner(ctx):
            raise _refuse(403, "a thread's owner cannot be changed")
        return _write_filter(ctx)

    @auth.on.threads.create_run
    async def on_run_create(ctx: Auth.types.AuthContext, value: Auth.types.on.threads.create_run.value) -> Auth.types.FilterType | None:
        kwargs = value.get("kwargs") or {}
        async with _loopback() as client:
            graph_id = await _graph_of(client, value.get("assistant_id"))
            if graph_id is None:
                return _write_filter(ctx)  # the server answers 404 for the assistant
            try:
                metadata = await admit_run(
                    client,
                    owner=_owner(ctx),
                    check_owner=not access.access_config().dev_mode,
                    graph_id=graph_id,
                    thread_id=str(value["thread_id"]) if value.get("thread_id") else None,
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

    for action in (auth.on.crons.read, auth.on.crons.search):
        action(_read_own)  # nothing to see (none can be made), but listing them works, as Studio does

    @auth.on.crons
    async def on_crons(ctx: Auth.types.AuthContext, value: Any) -> bool:
        raise _refuse(403, "crons are not offered by this deployment")

    @auth.on.store
    async def on_store(ctx: Auth.types.AuthContext, value: Auth.types.on.store.value) -> None:
        owner = _owner(ctx)
        namespace = tuple(value.get("namespace") or ())
        if not namespace or namespace[0] != owner:
            value["namespace"] = (owner, *namespace)

    @auth.on
    async def deny_unhandled(ctx: Auth.types.AuthContext, value: Any) -> bool:
        raise _refuse(403, f"{ctx.resource}.{ctx.action} is not allowed")

    return auth


auth = make_auth()
"""Registered in langgraph.json as ``"auth": {"path": "graphs.common.auth:auth"}``."""
