"""`StoreSource`: the `Source` protocol over a self-hosted checkpointer (``--checkpointer URI``), read-only.

The threads come from the store's checkpoint tables (`store/tables.py`, `store/postgres.py`,
`store/sqlite.py`), derived in the live code's shape (`store/reads.py`): the contract locks of
the code that wrote them (``--live-contract``) are the best view of the live graph, so entering
the source checks them before the store is opened. Without them, the gate (a command that brings
a candidate: `graph_ids` gets ``owners``) takes the part of the shape the store itself shows
(`store/shape.py`: nodes, subgraphs, state keys; no reducer, edge, ``defer`` or breakpoint), reads
it in a pass before the scan, gives the rules no live lock (so they say what they could not check)
and says in the notes what was and was not derived. Commands without a candidate (``inflight``,
``snapshot``), ``replay`` and ``migrate`` still need the locks. A store has no assistants.

Store problems become the CLI's errors: a bad URI, a missing driver, a database without
checkpointer tables or a thread no graph can be told for is a usage error (exit 2), a store that
cannot be reached or stops answering is exit 3 (the URI is shown without its password).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Collection, Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from migrations_playbook.errors import LiveUnreachable, Unsupported, UsageError
from migrations_playbook.graphcode.contract import read_locks
from migrations_playbook.model import LiveGraph, ThreadSnapshot
from migrations_playbook.sources.base import Capability, Progress, SinkT, SourceRequest
from migrations_playbook.sources.replay_protocol import StagingCopy
from migrations_playbook.sources.store.attribution import Attribution, AttributionError
from migrations_playbook.sources.store.open import open_store
from migrations_playbook.sources.store.reads import live_graphs
from migrations_playbook.sources.store.repair import StoreRepair
from migrations_playbook.sources.store.replay import StoreReplay
from migrations_playbook.sources.store.shape import DerivedShape, derive_shapes, shapes_note
from migrations_playbook.sources.store.tables import Store, StoreError, StoreUnreachable, redact

WHY_NOT: Mapping[Capability, str] = {
    # "<what>: <why>", or a sentence of its own where it names "{what}"
    "assistants": "a checkpointer has no assistants",
    "dev_copy": "{what} copies a `langgraph dev` folder; with --checkpointer, prove the plan on a copy "
    "of the database (and the candidate resuming it) instead",
    "served_code": "a checkpointer runs no code: the candidate is compiled in-process",
    "staging_server": "a checkpointer is not served by an Agent Server",
    "thread_records": "a checkpointer keeps no Agent Server thread records (what the runtime guard judges)",
    "turns": "turns and rerun read a thread's history through an Agent Server: pass --live URL",
}


NEEDS_LIVE_CONTRACT = (
    "--checkpointer needs --live-contract DIR: the contract locks of the code that wrote the threads "
    "(`playbook contract --write` on the deployed commit) give the graph shape their checkpoints follow"
)
"""Why a command other than the gate refuses a store without locks (only the gate derives a partial shape)."""


def read_live_contract(folder: str | None) -> dict[str, dict[str, Any]]:
    """The live code's contract locks: the checkpointer source's view of the live graph shape."""
    if not folder:
        raise UsageError(NEEDS_LIVE_CONTRACT)
    path = Path(folder)
    if not path.exists():
        raise UsageError(f"--live-contract {folder}: no such file or folder")
    try:
        locks = read_locks(path)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UsageError(f"--live-contract {folder}: not a folder of contract locks ({type(exc).__name__}: {exc})") from None
    if not locks:
        raise UsageError(f"--live-contract {folder} holds no contract lock (<graph_id>.json)")
    bad = [graph_id for graph_id, lock in locks.items() if not lock.get("nodes")]
    if bad:
        raise UsageError(f"--live-contract {folder}: the lock of {', '.join(sorted(bad))} names no node")
    return locks


class StoreSource(StoreRepair, StoreReplay):
    """A self-hosted checkpointer's tables, read-only."""

    CAPABILITIES: frozenset[Capability] = frozenset()

    def __init__(self, request: SourceRequest) -> None:
        assert request.checkpointer is not None  # open_source picks this source for --checkpointer
        self.request = request
        self.uri: str = request.checkpointer
        self.label = redact(request.checkpointer)
        self.locks: dict[str, dict[str, Any]] = {}
        self.attribution = Attribution()
        self._notes: list[str] = []
        self.derived: dict[str, DerivedShape] | None = None
        """Without ``--live-contract``: graph id -> the live shape the store shows (`graph_ids` reads it)."""

    # -- the protocol ----------------------------------------------------------------------

    def supports(self, capability: Capability) -> bool:
        return capability in self.CAPABILITIES

    def require(self, capability: Capability, what: str) -> None:
        if not self.supports(capability):
            why = WHY_NOT[capability]
            raise Unsupported(why.format(what=what) if "{what}" in why else f"{what}: {why}")

    async def __aenter__(self) -> Self:
        if self.request.live_contract is not None:
            self.locks = read_live_contract(self.request.live_contract)
        return self

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        return None

    async def graph_ids(self, asked: Sequence[str], *, owners: Collection[str] | None = None) -> list[str]:
        wanted = list(asked)
        forced = self.request.all_threads_are
        if forced:
            if wanted and wanted != [forced]:
                raise UsageError(f"--all-threads-are {forced} scans only {forced}; drop --graph {' '.join(wanted)}")
            wanted = [forced]
        if self.request.live_contract is None:
            return self._derive_shapes(wanted, owners)
        unknown = [g for g in wanted if g not in self.locks]
        if unknown:
            raise UsageError(
                f"graph(s) {', '.join(unknown)} have no lock in --live-contract {self.request.live_contract}; "
                f"it has: {', '.join(sorted(self.locks))}"
            )
        self.attribution = self._attribution(set(self.locks) if owners is None else set(owners))
        return wanted or sorted(self.locks)

    async def live_graphs(self, graph_ids: Sequence[str], *, locks: bool = True) -> dict[str, LiveGraph]:
        if self.derived is not None:  # the store shows no edge, reducer or code fact: the rules get no live lock
            return {graph_id: LiveGraph(graph_id=graph_id, topology=None) for graph_id in graph_ids}
        return live_graphs(self.locks, graph_ids)

    async def threads(
        self, graph_ids: Sequence[str], *, live: Mapping[str, LiveGraph] | None = None, progress: Progress | None = None
    ) -> AsyncIterator[ThreadSnapshot]:
        from migrations_playbook.sources.store.scan import iter_snapshots

        with self.opened() as store:
            for thread in iter_snapshots(store, self.shapes(), graph_ids, self.attribution, progress=progress):
                yield thread

    async def assistants(self, graph_id: str) -> AsyncIterator[dict[str, Any]]:
        for _ in ():  # a checkpointer has no assistants
            yield {}

    async def scan(
        self,
        graph_ids: Sequence[str],
        live: Mapping[str, LiveGraph],
        make_sink: Callable[[], SinkT],
        *,
        progress: Progress | None = None,
    ) -> SinkT:
        """The threads judged in parts, in parallel where the store allows (`scan.partitioned`), and the
        parts merged in thread id order: the sink holds what a single pass gives."""
        from migrations_playbook.sources.store.reads import ScanCounts
        from migrations_playbook.sources.store.scan import iter_snapshots, partitioned

        locks, attribution = self.shapes(), self.attribution

        def judge(part: Any, shown: Any, total: int) -> tuple[Any, ScanCounts]:
            judged, counts = make_sink(), ScanCounts()
            for thread in iter_snapshots(part, locks, graph_ids, attribution, counts=counts, progress=shown, total=total):
                judged.add(thread)
            return judged.partial(), counts

        with self.opened() as store:
            parts = partitioned(store, judge, progress=progress)
            merged, counts = make_sink(), ScanCounts()
            for partial, part_counts in parts:
                merged.merge(partial)
                counts.merge(part_counts)
        self._notes = self._source_notes(graph_ids) + counts.notes(self.request.live_contract or "")
        self._notes.append("no assistants in a checkpointer: stored contexts (CONTEXT_INVALID) are not checked")
        return merged

    def notes(self) -> list[str]:
        return list(self._notes)

    async def contract_served(self) -> dict[str, str] | None:
        return None  # a store runs no code

    async def contract_stamps(self, graph_ids: Sequence[str]) -> dict[str, set[str]]:
        return {}  # not read from a store (its checkpoints' metadata may hold them: not used yet)

    # -- the live shape -------------------------------------------------------------------

    def shapes(self) -> dict[str, dict[str, Any]]:
        """What the stand-ins are compiled from: the live locks, else the shapes derived from the store."""
        if self.derived is None:
            return self.locks
        return {graph_id: shape.lock() for graph_id, shape in self.derived.items()}

    def _derive_shapes(self, wanted: list[str], owners: Collection[str] | None) -> list[str]:
        """Without ``--live-contract``: one pass over the store for the live shape of each graph its threads
        belong to (`store_shape`). Only for a command that brings a candidate (``owners``): it tells the
        graphs an unlabeled thread can belong to, and its report says what could not be derived."""
        if owners is None:
            raise UsageError(NEEDS_LIVE_CONTRACT)
        self.attribution = self._attribution(set(owners))
        with self.opened() as store:
            derived = derive_shapes(store.threads(), self.attribution)
        unknown = [g for g in wanted if g not in derived and g not in owners]
        if unknown:
            found = ", ".join(sorted(derived)) or "none"
            raise UsageError(
                f"graph(s) {', '.join(unknown)}: neither the candidate nor any thread of the store has it "
                f"(without --live-contract the threads tell the store's graphs; they belong to: {found})"
            )
        for graph_id in wanted:
            derived.setdefault(graph_id, DerivedShape(graph_id))
        self.derived = derived
        return wanted or sorted(derived)

    def staging_copy(
        self, candidate: Path, *, persistence: Path | None = None, url: str | None = None, plan: bool = False
    ) -> contextlib.AbstractAsyncContextManager[StagingCopy]:
        copy = super().staging_copy(candidate, persistence=persistence, url=url, plan=plan)
        if self.request.live_contract is None:  # a replay resumes threads on the live shape: a derived one has no edge
            raise UsageError(NEEDS_LIVE_CONTRACT)
        return copy

    async def repair_graphs(self, graph_ids: Sequence[str], *, migration: str, owners: Collection[str]) -> None:
        if self.request.live_contract is None:  # a plan is proved on the live shape: a derived one has no edge
            raise UsageError(NEEDS_LIVE_CONTRACT)
        await super().repair_graphs(graph_ids, migration=migration, owners=owners)

    # -- the store ------------------------------------------------------------------------

    @contextlib.contextmanager
    def opened(self) -> Iterator[Store]:
        """The store, opened read-only; its errors mapped onto the CLI's exit codes."""
        try:
            store = open_store(self.uri)
        except StoreUnreachable as exc:
            raise LiveUnreachable(str(exc)) from None
        except StoreError as exc:
            raise UsageError(str(exc)) from None
        try:
            yield store
        except StoreUnreachable as exc:
            raise LiveUnreachable(str(exc)) from None
        except (StoreError, AttributionError) as exc:
            raise UsageError(str(exc)) from None
        finally:
            store.close()

    def _attribution(self, owners: set[str]) -> Attribution:
        """``owners``: the graphs an unlabeled thread can belong to (the candidate's, or the locks')."""
        forced = self.request.all_threads_are
        if forced:
            return Attribution(single=forced, forced=True)
        return Attribution(single=next(iter(owners)) if len(owners) == 1 else None)

    def _source_notes(self, graph_ids: Sequence[str] = ()) -> list[str]:
        if self.derived is not None:
            notes = [f"threads read from checkpointer {self.label} (read-only)", shapes_note(self.derived, graph_ids)]
        else:
            notes = [
                f"threads read from checkpointer {self.label} (read-only); live graph shape and reducers from contract "
                f"locks at {self.request.live_contract}",
            ]
        if self.attribution.forced:
            notes.append(f"every thread of the store taken as graph {self.attribution.single!r} (--all-threads-are)")
        elif self.attribution.single:
            notes.append(f"threads without 'graph_id' checkpoint metadata taken as graph {self.attribution.single!r}")
        return notes

    async def guard_refusals(self, guard: Any, graph_ids: Sequence[str]) -> dict[str, Any]:
        self.require("thread_records", "counting the threads the runtime guard would refuse")
        return {}

    async def thread_history(self, thread_id: str) -> list[Mapping[str, Any]]:
        self.require("turns", "a thread's turns")
        return []

    async def rerun_turn(
        self, thread_id: str, turn: int, text: str, *, context: dict[str, Any] | None, assistant_id: str | None
    ) -> Any:
        self.require("turns", "rerun")
