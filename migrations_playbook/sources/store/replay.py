"""The replay operations of `StoreSource` (a mixin; see `replay_protocol.py`): the candidate, in-process,
over a throwaway copy of the store.

There is no server to serve a copy with the candidate code, so the replay makes the copy and runs
the candidate itself (`StoreCopy`):

* the copy: SQLite, the database file backed up into a temporary folder (SQLite's online backup,
  read through the source's read-only connection); PostgreSQL, a new database
  ``playbook_replay_<random>`` on the same server (the URI's user needs the CREATEDB privilege),
  its tables made by ``PostgresSaver.setup()`` and filled with ``COPY`` from the source's read-only
  snapshot of the live database. The copy is removed afterwards (the folder deleted, the database
  dropped), whatever happened;
* the live side: every paused thread (interrupted, busy, error) as the live code shows it, derived
  from the store read-only in the live code's shape (a stand-in of ``--live-contract``'s lock), from
  the same read the copy was made from;
* the candidate side: the candidate's graphs compiled in-process with a saver on the copy
  (`SqliteSaver` / `PostgresSaver`), its ``get_state(subgraphs=True)``, and the resume,
  ``stream(Command(resume=...))`` on the copy.

The original store is only read. The candidate's code (its graph factories, and the nodes a resume
runs: model calls, tools) runs in this process, off the event loop, as it would in a script.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Collection, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Self

from migrations_playbook.errors import Unsupported, UsageError
from migrations_playbook.model import PAUSED_STATUSES
from migrations_playbook.sources.base import SourceRequest
from migrations_playbook.sources.replay_protocol import PausedThread, RunOutcome, StagingCopy
from migrations_playbook.sources.store.attribution import Attribution
from migrations_playbook.sources.store.repair import writable_saver
from migrations_playbook.sources.store.tables import Store

COPY_PREFIX = "playbook_replay_"
"""Name prefix of the throwaway PostgreSQL database (dropped at the end)."""

STAGING_FLAGS_REFUSED = (
    "replay --checkpointer makes its own staging copy (a throwaway copy of the store): drop --persistence/--staging-url"
)
PLAN_REFUSED = (
    "replay --plan runs on an Agent Server's staging copy (--persistence DIR or --staging-url URL). "
    "For a self-hosted store: copy the store (the SQLite file, or `createdb -T`), apply the plan "
    "there with `playbook migrate --checkpointer <the copy> --apply`, and resume its threads with "
    "the candidate on the copy"
)


@contextlib.contextmanager
def staging_copy(store: Any, uri: str) -> Iterator[tuple[Any, str]]:
    """(a writable saver on a copy of ``store``, where the copy is); removed on exit."""
    with copy_of_store(store, uri) as (copy, where):
        with writable_saver(copy) as saver:
            yield saver, where


def _postgres_saver() -> Any:
    try:
        from langgraph.checkpoint.postgres import PostgresSaver
    except ImportError:
        raise UsageError(
            "running graphs on a copy of a postgresql:// store goes through PostgresSaver: "
            "pip install 'langgraph-playbook[postgres]'"
        ) from None
    return PostgresSaver


@contextlib.contextmanager
def copy_of_store(store: Any, uri: str) -> Iterator[tuple[str, str]]:
    """(the URI of a throwaway copy of ``store``, where the copy is); removed on exit, whatever happened.
    SQLite: the file backed up into a temporary folder; PostgreSQL: a new database on the same server."""
    from migrations_playbook.sources.store.sqlite import SqliteStore

    if isinstance(store, SqliteStore):
        with tempfile.TemporaryDirectory(prefix="playbook-replay-") as folder:
            path = Path(folder) / "copy.db"
            store.copy_to(path)
            yield f"sqlite://{path}", f"a copy of the SQLite file (in {folder}, deleted afterwards)"
        return
    with _postgres_copy(store, uri) as found:
        yield found


@contextlib.contextmanager
def _postgres_copy(store: Any, uri: str) -> Iterator[tuple[str, str]]:
    import psycopg
    from psycopg.conninfo import conninfo_to_dict, make_conninfo
    from psycopg.rows import dict_row

    from migrations_playbook.sources.store.tables import scrub

    PostgresSaver = _postgres_saver()  # noqa: N806 - a class
    name = f"{COPY_PREFIX}{uuid.uuid4().hex[:12]}"
    try:
        admin = psycopg.connect(uri, autocommit=True, connect_timeout=5, application_name="playbook-replay")
    except psycopg.Error as exc:
        raise UsageError(
            f"checkpointer {store.label}: cannot open a second connection for the copy: {scrub(' '.join(str(exc).split()), uri)}"
        ) from None
    try:
        try:
            admin.execute(f'CREATE DATABASE "{name}"')
        except psycopg.Error as exc:
            raise UsageError(
                f"replay --checkpointer makes a throwaway copy of the store as a new database on the same server, "
                f"and {store.label} refused it ({scrub(' '.join(str(exc).split()), uri)}): grant the URI's user "
                "CREATEDB, or replay on a SQLite copy of the store"
            ) from None
        try:
            params = conninfo_to_dict(uri)
            params["dbname"] = name
            params.pop("options", None)  # a search_path of the live database need not exist in the copy
            copy = make_conninfo("", **params)
            with psycopg.connect(copy, autocommit=True, prepare_threshold=0, row_factory=dict_row) as connection:
                PostgresSaver(connection).setup()  # on the copy: its own tables
                store.copy_into(connection)
            yield copy, f"database {name} on the same server (a copy of the store, dropped afterwards)"
        finally:
            force = " WITH (FORCE)" if admin.info.server_version >= 130000 else ""
            admin.execute(f'DROP DATABASE IF EXISTS "{name}"{force}')
    finally:
        admin.close()


def _config(thread_id: str, graph_id: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id}, "metadata": {"graph_id": graph_id}}


def candidate_state(graph: Any, thread_id: str, graph_id: str) -> dict[str, Any]:
    """The candidate's ``get_state(subgraphs=True)`` on the copy, in the API's shape."""
    from migrations_playbook.sources.api.shape import state_json, to_json

    state: dict[str, Any] = to_json(state_json(graph.get_state(_config(thread_id, graph_id), subgraphs=True)))
    return state


def resume_in_process(graph: Any, thread_id: str, graph_id: str, resume: Any) -> RunOutcome:
    """Resume one thread of the copy with ``resume``, as ``runs.stream(command={"resume": ...},
    stream_mode="updates", stream_subgraphs=True)`` does on a server, and collect what ran."""
    from langgraph.types import Command

    ran: set[str] = set()
    try:
        for namespace, update in graph.stream(
            Command(resume=resume), _config(thread_id, graph_id), stream_mode="updates", subgraphs=True
        ):
            prefix = ":".join(part.split(":")[0] for part in namespace)
            if isinstance(update, Mapping):
                ran.update(f"{prefix}:{node}" if prefix else node for node in update)
    except Exception as exc:  # noqa: BLE001 - the candidate's failure is the finding, never a traceback
        return RunOutcome(ran=frozenset(ran), error=f"the resumed run failed: {type(exc).__name__}: {exc}")
    after = candidate_state(graph, thread_id, graph_id) if "__interrupt__" in ran else None
    return RunOutcome(ran=frozenset(ran), after=after)


class StoreReplay:
    """Mixed into `StoreSource`."""

    uri: str
    label: str
    request: SourceRequest
    locks: dict[str, dict[str, Any]]
    attribution: Attribution
    _replayed: StoreCopy | None = None
    """The copy being replayed on: its store is the read the copy was made from."""

    def opened(self) -> contextlib.AbstractContextManager[Store]:
        raise NotImplementedError  # StoreSource's

    async def graph_ids(self, asked: Sequence[str], *, owners: Collection[str] | None = None) -> list[str]:
        raise NotImplementedError  # StoreSource's

    # -- the protocol ----------------------------------------------------------------------

    def staging_copy(
        self, candidate: Path, *, persistence: Path | None = None, url: str | None = None, plan: bool = False
    ) -> contextlib.AbstractAsyncContextManager[StagingCopy]:
        if persistence is not None or url is not None:
            raise Unsupported(STAGING_FLAGS_REFUSED)
        if plan:
            raise Unsupported(PLAN_REFUSED)
        return self._store_copy(candidate)

    @contextlib.asynccontextmanager
    async def _store_copy(self, candidate: Path) -> AsyncIterator[StagingCopy]:
        from migrations_playbook.graphcode.candidate import graph_specs, read_config

        registered = set(graph_specs(read_config(candidate.resolve())))
        with contextlib.ExitStack() as stack:
            copy = StoreCopy(self, candidate, registered, stack)
            self._replayed = copy
            try:
                yield copy
            finally:
                self._replayed = None

    def staging_source(self, copy: StagingCopy) -> Self:
        raise Unsupported(PLAN_REFUSED)  # a copy of a store is no Agent Server a plan could be applied on

    async def paused_threads(self, graph_ids: Sequence[str]) -> AsyncGenerator[PausedThread, None]:
        from migrations_playbook.sources.store.reads import HeadsSaver, snapshot_and_state
        from migrations_playbook.sources.store.standin import StandIns

        heads = HeadsSaver()
        stand_ins = {g: StandIns(self.locks[g], heads) for g in graph_ids}
        with contextlib.ExitStack() as stack:
            copy = self._replayed
            store = copy.store if copy is not None and copy.store is not None else stack.enter_context(self.opened())
            for thread in store.threads():
                graph_id = self.attribution.graph_of(thread)
                if graph_id not in stand_ins:
                    continue
                snap, live_state = snapshot_and_state(thread, graph_id, self.locks[graph_id], stand_ins[graph_id], heads)
                if snap.status in PAUSED_STATUSES:
                    yield PausedThread(graph_id=graph_id, thread_id=snap.thread_id, status=snap.status, derived=live_state)

    async def paused_state(self, thread: PausedThread) -> Mapping[str, Any] | None:
        return thread.derived


class StoreCopy:
    """A throwaway copy of the store with the candidate's graphs compiled on it."""

    def __init__(self, source: StoreReplay, candidate: Path, registered: set[str], stack: contextlib.ExitStack) -> None:
        self.source = source
        self.candidate = candidate
        self.registered = registered
        self.store: Store | None = None
        self.where = ""
        self.graphs: dict[str, Any] = {}
        self._stack = stack

    async def open(self, asked: Sequence[str]) -> list[str]:
        from migrations_playbook.graphcode.candidate import load_compiled

        wanted = await self.source.graph_ids(asked, owners=self.registered)
        replayed = [g for g in wanted if g in self.registered]
        # The candidate's factories run as in a script: off the event loop (one may call asyncio.run).
        compiled = await asyncio.to_thread(load_compiled, self.candidate, replayed) if replayed else {}
        self.store = self._stack.enter_context(self.source.opened())
        saver, self.where = self._stack.enter_context(staging_copy(self.store, self.source.uri))
        self.graphs = {g: graph.copy(update={"checkpointer": saver}) for g, graph in compiled.items()}
        return wanted

    def serves(self, graph_id: str) -> bool:
        return graph_id in self.registered

    def note(self) -> str:
        return (
            f"threads read from checkpointer {self.source.label} (read-only; the live shape from --live-contract "
            f"{self.source.request.live_contract}); the candidate ran in-process on {self.where}"
        )

    async def staged_state(self, thread_id: str, graph_id: str, live_state: Mapping[str, Any]) -> Mapping[str, Any]:
        try:
            return await asyncio.to_thread(candidate_state, self.graphs[graph_id], thread_id, graph_id)
        except Exception as exc:  # noqa: BLE001 - a candidate that cannot read the thread is a divergence
            return {"next": [f"(get_state failed: {type(exc).__name__}: {exc})"], "tasks": []}

    async def resume_staged(self, thread_id: str, graph_id: str, resume: Any) -> RunOutcome:
        return await asyncio.to_thread(resume_in_process, self.graphs[graph_id], thread_id, graph_id, resume)
