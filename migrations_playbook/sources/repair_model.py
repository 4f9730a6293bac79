"""What `playbook migrate` reads and writes through a source: one thread's view, the change the plan
makes to it, what was done, and the stamps that say a migration wrote a checkpoint or a context.

Plain data, below the sources that fill it (`api/views.py`, `store/repair.py`) and the repair
engine that plans it (`repair/`): a source's repair methods take and return these.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from migrations_playbook.model import CandidateGraph, ThreadSnapshot
from migrations_playbook.sources.interrupts import PendingInterrupt

MIGRATION_KEY = "playbook_migration"
"""Checkpoint metadata key: the id of the migration that wrote the checkpoint."""
BASE_KEY = "playbook_migration_base"
"""Checkpoint metadata key: the checkpoint the migration started from (the pre-migration head)."""
MOVED_KEY = "playbook_migration_moved"
"""Checkpoint metadata key: ``from->to`` when the migration moved the thread to another node."""
# Assistant metadata keys. Not the checkpoint keys: Agent Server copies an assistant's metadata
# into every run through it, and so into the checkpoints those runs write (observed on
# `langgraph dev` 0.16.7), where the checkpoint keys would read as a migration's stamp.
CONTEXT_MIGRATION_KEY = "playbook_context_migration"
"""The migration that wrote the assistant's current context."""
CONTEXT_BASE_KEY = "playbook_context_base_version"
"""The assistant's version before that migration."""
ROLLED_BACK_KEY = "playbook_context_rolled_back"
"""The migration whose context change was rolled back."""
HISTORY_LIMIT = 200
"""Checkpoints read per thread when looking for a migration's stamp (rollback)."""

Served = Literal["candidate", "live code"]
"""The code a thread's writes go through: the candidate's graph, or the live code's."""
Mode = Literal["dry run", "apply", "rollback", "staging"]
"""What a migrate run does: read and plan, write the plan, restore the heads, or prove the plan on staging."""
Action = Literal[
    "would change",
    "changed",
    "already applied",
    "no change",
    "skipped: busy",
    "skipped: moved on",
    "failed",
    "would restore",
    "restored",
    "already restored",
    "not migrated",
]
RunUpdates = tuple[dict[str, list[Any]], str | None]
"""What a run streamed: node path -> the updates it wrote, and why the run failed (None: it did not)."""


def stamped_by(metadata: Mapping[str, Any] | None, migration: str) -> bool:
    """A checkpoint this migration wrote: an update (not a run, whose metadata a caller may fill)
    carrying its id."""
    metadata = metadata or {}
    return metadata.get(MIGRATION_KEY) == migration and metadata.get("source") == "update"


# -- one thread -> one change ------------------------------------------------------------------


@dataclass(frozen=True)
class ThreadInfo:
    """What a python step is told about the thread (besides its values)."""

    thread_id: str
    graph_id: str
    status: str
    pending: tuple[str, ...]
    """Node paths the thread was going to run, as the code that paused it names them."""
    metadata: Mapping[str, Any]
    """The head checkpoint's metadata."""


@dataclass(frozen=True)
class KeyDiff:
    key: str
    before: Any
    after: Any
    how: str
    """``set``, ``renamed from X``, ``renamed to X`` (the old key; after = `DROPPED` or kept)."""


@dataclass(frozen=True)
class Move:
    from_node: str
    to_node: str
    as_node: str
    step: int


@dataclass
class Change:
    """What the plan does to one thread: one new checkpoint."""

    thread_id: str
    graph_id: str
    writes: dict[str, Any] = field(default_factory=dict)
    """Key -> the new value, as the state should hold it."""
    diff: list[KeyDiff] = field(default_factory=list)
    move: Move | None = None
    steps: list[int] = field(default_factory=list)
    """The steps that changed something, in order."""

    @property
    def empty(self) -> bool:
        return not self.writes and self.move is None

    def to_json(self) -> dict[str, Any]:
        return {
            "steps": list(self.steps),
            "diff": [{"key": d.key, "before": d.before, "after": d.after, "how": d.how} for d in self.diff],
            "move": None
            if self.move is None
            else {
                "from": self.move.from_node,
                "to": self.move.to_node,
                "as_node": self.move.as_node,
                "step": self.move.step,
            },
            "writes": dict(self.writes),
        }


# -- reading ---------------------------------------------------------------------------------


@dataclass
class ThreadView:
    """One thread as migrate sees it: what the gate judges, and what the plan reads and writes."""

    thread_id: str
    graph_id: str
    status: str
    values: dict[str, Any]
    """The values the plan reads: the head's, plus keys only the thread record still shows."""
    head: str | None
    metadata: dict[str, Any]
    """The head checkpoint's metadata."""
    next: tuple[str, ...]
    pending: tuple[str, ...]
    """Node paths the thread was going to run, named as the code that paused it names them."""
    interrupts: tuple[PendingInterrupt, ...]
    """The questions it waits on (a lost step's from the thread record)."""
    snapshot: ThreadSnapshot
    lost: tuple[str, ...] = ()
    """Steps the serving code no longer schedules (read from the thread record)."""
    hidden: tuple[str, ...] = ()
    """Keys read from the thread record because the serving code does not show them."""
    assistant_id: str | None = None
    blocks: tuple[str, ...] = ()
    """The block finding codes the gate gives this thread."""

    @property
    def info(self) -> ThreadInfo:
        return ThreadInfo(self.thread_id, self.graph_id, self.status, self.pending, dict(self.metadata))


@dataclass(frozen=True)
class ViewRequest:
    """What a source is told when it reads the plan's threads as `ThreadView`s."""

    graph_ids: Sequence[str]
    served: Mapping[str, Served]
    candidates: Mapping[str, CandidateGraph]
    compiled: Mapping[str, Any]
    """The candidate's compiled graphs (a store derives a thread the migration stamped in their shape)."""
    locks: Mapping[str, Any] | None
    """The contract locks of the code the threads last ran (None: none known)."""
    moved_from: Sequence[str]
    """The nodes the plan moves threads from (names a lost step when the lock cannot)."""
    migration: str
    owners: frozenset[str]
    """The graphs a thread without a graph label can belong to (the candidate's)."""


@dataclass(frozen=True)
class PendingState:
    """Where a thread waits, as its head says: the nodes it runs next and the questions it waits on."""

    next: tuple[str, ...]
    interrupts: tuple[PendingInterrupt, ...]


# -- what was done ---------------------------------------------------------------------------


@dataclass
class ThreadOutcome:
    """What migrate did (or would do) to one thread."""

    thread_id: str
    graph_id: str
    status: str
    action: Action
    blocks: tuple[str, ...] = ()
    change: Change | None = None
    base: str | None = None
    """The pre-migration head (rollback: the head restored)."""
    new_head: str | None = None
    reason: str = ""
    hidden: tuple[str, ...] = ()
    lost: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "thread_id": self.thread_id,
            "graph_id": self.graph_id,
            "status": self.status,
            "action": self.action,
            "blocked_by": list(self.blocks),
            "base_checkpoint": self.base,
            "new_checkpoint": self.new_head,
            "reason": self.reason,
            "read_from_thread_record": {"keys": list(self.hidden), "lost_steps": list(self.lost)},
            **(self.change.to_json() if self.change is not None else {"steps": [], "diff": [], "move": None, "writes": {}}),
        }


@dataclass
class AssistantOutcome:
    assistant_id: str
    graph_id: str
    action: str
    before: dict[str, Any] = field(default_factory=dict)
    after: dict[str, Any] = field(default_factory=dict)
    step: int | None = None
    base_version: int | None = None
    reason: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "assistant_id": self.assistant_id,
            "graph_id": self.graph_id,
            "action": self.action,
            "step": self.step,
            "context_before": self.before,
            "context_after": self.after,
            "base_version": self.base_version,
            "reason": self.reason,
        }
