"""The Source protocol: the one interface every command reads the live threads through.

Two implementations: `ApiSource` (`api/source.py`: an Agent Server, through langgraph-sdk)
and `StoreSource` (`store/source.py`: a self-hosted checkpointer's tables, PostgreSQL or SQLite,
read-only). `open_source` picks one from the command's `SourceRequest`; the command never
asks which one it got. What differs between them (how threads are listed and derived, where
the live graph's shape comes from, whether assistants exist, whether a scan can be split over
processes) is behind these methods. An operation a source cannot do is a `Capability` it
lacks: `require` refuses it with a message that says what to do instead (exit 2).

Every source is an async context manager: entering it checks what can be checked before any
thread is read (the server answers; the contract locks a store needs are there), and the
errors of its own transport (a refused request, a dropped connection, a missing table) come
out of it as the CLI's errors (`UsageError`: exit 2, `LiveUnreachable`: exit 3).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Literal, Protocol, Self

from migrations_playbook.model import LiveGraph, ThreadSnapshot
from migrations_playbook.sources.budget import Deadline
from migrations_playbook.sources.repair_protocol import RepairSource
from migrations_playbook.sources.replay_protocol import ReplaySource

Capability = Literal["assistants", "dev_copy", "served_code", "staging_server", "thread_records", "turns"]
"""What a source may lack:

* ``assistants``: stored assistants with their contexts (CONTEXT_INVALID, a plan's context steps);
* ``dev_copy``: a copy of the live `langgraph dev` folder, served with the candidate (migrate's ``--persistence``);
* ``served_code``: a running server whose code can be compared with the candidate's (migrate's
  "which code does the server run");
* ``staging_server``: a staging copy served by an Agent Server (``--persistence``, ``--staging-url``);
* ``thread_records``: Agent Server's thread records, which the runtime guard judges (`guard_refusals`);
* ``turns``: a thread's checkpoint history by chat turn, and a rerun of turn N on a fork (`thread_history`, `rerun_turn`)."""

Progress = Callable[[str, int, int], None]
"""``progress(label, threads_done, threads_total)``."""


class Sink(Protocol):
    """What a scan feeds thread snapshots to (the gate's `Evaluator`). A scan split into parts feeds
    one fresh sink per part and merges the parts, in thread order, into another fresh one."""

    def add(self, thread: ThreadSnapshot) -> None: ...

    def partial(self) -> Any: ...

    def merge(self, partial: Any) -> None: ...


SinkT = Any  # a concrete Sink (the Evaluator); typed loosely so the factory's own type flows through


@dataclass(frozen=True)
class SourceRequest:
    """Where the live threads are, as the command's flags say it (parsed, typed)."""

    live: str | None = None
    """An Agent Server URL (``--live``)."""
    checkpointer: str | None = None
    """A store URI (``--checkpointer postgresql://...`` or ``sqlite:///ABS/PATH.db``)."""
    headers: Mapping[str, str] = field(default_factory=dict)
    """Extra HTTP headers for the server (``--header``)."""
    live_contract: str | None = None
    """The live code's contract locks (``--live-contract DIR``)."""
    all_threads_are: str | None = None
    """A store's every thread belongs to this graph (``--all-threads-are``)."""
    deadline: Deadline | None = None
    """When the command stops waiting for Agent Servers (``--deadline``, started with the command; `budget.py`):
    every client opened for it (live, staging, the shadow's sides) sends every request within it. None: no total."""


class Source(RepairSource, ReplaySource, Protocol):
    """The live threads, wherever they are kept."""

    label: str
    """How reports name the source: the live URL, or the store's URI without its password."""

    def supports(self, capability: Capability) -> bool: ...

    def require(self, capability: Capability, what: str) -> None:
        """Raise `Unsupported` (exit 2) naming ``what`` when the source lacks ``capability``."""
        ...

    async def __aenter__(self) -> Self: ...

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None: ...

    async def graph_ids(self, asked: Sequence[str], *, owners: Collection[str] | None = None) -> list[str]:
        """The graphs to read: ``asked`` (``--graph``), checked against what the source has, else all
        of them. ``owners``: the graphs a thread without a graph label can belong to (default: the
        source's own graphs)."""
        ...

    async def live_graphs(self, graph_ids: Sequence[str], *, locks: bool = True) -> dict[str, LiveGraph]:
        """The live code's shape of each graph (topology, reducers, lock, and the keys its state
        schemas name where the source serves them); without ``locks``, the topology alone where
        the source can tell it without them."""
        ...

    def threads(
        self, graph_ids: Sequence[str], *, live: Mapping[str, LiveGraph] | None = None, progress: Progress | None = None
    ) -> AsyncIterator[ThreadSnapshot]:
        """Every thread of ``graph_ids`` (all statuses) as a snapshot, in the source's own order."""
        ...

    def assistants(self, graph_id: str) -> AsyncIterator[dict[str, Any]]:
        """Every assistant of ``graph_id`` with its stored context (nothing where the source has none)."""
        ...

    async def scan(
        self,
        graph_ids: Sequence[str],
        live: Mapping[str, LiveGraph],
        make_sink: Callable[[], SinkT],
        *,
        progress: Progress | None = None,
    ) -> SinkT:
        """Feed every thread of ``graph_ids`` to a sink from ``make_sink`` and return the sink that
        holds them all: one pass, or parts read in parallel and merged as one pass would have found them."""
        ...

    def notes(self) -> list[str]:
        """Where what was read came from (for the report), as of the reads so far."""
        ...

    async def contract_served(self) -> dict[str, str] | None:
        """Graph id -> the contract hash the running deployment says it runs (its served locks);
        None where the source says nothing about the code it runs."""
        ...

    async def contract_stamps(self, graph_ids: Sequence[str]) -> dict[str, set[str]]:
        """Graph id -> the contract hashes the runtime guard stamped on the graph's most recently
        updated threads (``playbook_contract`` in their latest checkpoint's metadata): which code
        last ran them; empty where nothing is stamped (no guard) or the source cannot tell."""
        ...

    async def guard_refusals(self, guard: Any, graph_ids: Sequence[str]) -> dict[str, Any]:
        """Per graph, the threads the runtime guard ``guard`` (`guard.Guard`) would refuse, by finding code
        (capability ``thread_records``)."""
        ...

    async def thread_history(self, thread_id: str) -> list[Mapping[str, Any]]:
        """Every checkpoint of one thread, newest first (capability ``turns``); a thread the source
        does not have is a usage error."""
        ...

    async def rerun_turn(
        self, thread_id: str, turn: int, text: str, *, context: dict[str, Any] | None, assistant_id: str | None
    ) -> Any:
        """Rerun ``turn`` with ``text`` on a fork from the checkpoint before it (`turns.Rerun`; capability ``turns``)."""
        ...
