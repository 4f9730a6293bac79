"""The replay part of the `Source` protocol (see `base.py`): what `playbook replay` (`proof/replay.py`)
reads through a source, and the staging copy it compares the live threads with.

The comparison is written once, over these: the source lists its paused threads and reads each
one's live state; its `StagingCopy` holds the same threads under the candidate code and reads and
resumes them there. `ApiReplay` (`api/replay.py`) implements it over an Agent Server, whose copy
is a staging Agent Server (``--persistence DIR``: a copy of a `langgraph dev` folder served with
the candidate; ``--staging-url URL``); `StoreReplay` (`store/replay.py`) over a checkpointer, whose
copy is a throwaway copy of the store with the candidate compiled in-process on it.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, Self


@dataclass(frozen=True)
class RunOutcome:
    """What one resumed run on the staging copy showed (`StagingCopy.resume_staged`)."""

    ran: frozenset[str] = frozenset()
    """Node paths that streamed an update (``__interrupt__`` when the run paused again)."""
    refused: tuple[int, str] | None = None
    """HTTP status and message when staging refused the run request."""
    error: str | None = None
    """The run failed (an ``error`` event), or the request failed without a 4xx."""
    after: Mapping[str, Any] | None = None
    """The staging state after a run that paused again."""


@dataclass(frozen=True)
class PausedThread:
    """A live thread with pending work (status interrupted, busy or error)."""

    graph_id: str
    thread_id: str
    status: str
    derived: Mapping[str, Any] | None = None
    """The live state, where the source derives it to tell the status (a store; `ReplaySource.paused_state`)."""


class StagingCopy(Protocol):
    """The live threads' staging copy, under the candidate code (`ReplaySource.staging_copy`)."""

    async def open(self, asked: Sequence[str]) -> list[str]:
        """Make the copy ready, once the source is entered, and return the graphs to replay: ``asked``
        (``--graph``), else all of them. An Agent Server's staging server is checked reachable; a
        store's copy is made and the candidate's graphs compiled on it."""
        ...

    def serves(self, graph_id: str) -> bool:
        """Whether the copy runs the candidate's ``graph_id`` (False: not in the candidate)."""
        ...

    def note(self) -> str:
        """The report's note on what the copy is."""
        ...

    async def staged_state(self, thread_id: str, graph_id: str, live_state: Mapping[str, Any]) -> Mapping[str, Any]:
        """The thread's state on the copy (``get_state(subgraphs=True)`` shape); `staging.StaleCopy` when
        the copy does not hold ``live_state``'s checkpoint."""
        ...

    async def resume_staged(self, thread_id: str, graph_id: str, resume: Any) -> RunOutcome:
        """Resume the thread on the copy with ``Command(resume=resume)`` and collect what the run showed."""
        ...


class ReplaySource(Protocol):
    """What `replay` needs of a source, beyond the reads every command makes."""

    def staging_copy(
        self, candidate: Path, *, persistence: Path | None = None, url: str | None = None, plan: bool = False
    ) -> AbstractAsyncContextManager[StagingCopy]:
        """The staging copy of this source's threads under ``candidate`` (removed on exit). Entered before
        the source itself, and ready once `StagingCopy.open` is awaited inside the source's block.
        ``persistence``/``url``: where an Agent Server's copy is; ``plan``: a migration plan is to be
        applied on the copy first. What the source cannot copy that way is refused here (exit 2)."""
        ...

    def staging_source(self, copy: StagingCopy) -> Self:
        """The opened copy as a source of its own (what `repair`'s flow applies a plan on; capability
        ``staging_server``)."""
        ...

    def paused_threads(self, graph_ids: Sequence[str]) -> AsyncGenerator[PausedThread, None]:
        """Every thread of ``graph_ids`` with pending work, in the source's order."""
        ...

    async def paused_state(self, thread: PausedThread) -> Mapping[str, Any] | None:
        """The thread's live state (``get_state(subgraphs=True)`` shape); None when it cannot be read."""
        ...
