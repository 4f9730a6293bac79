"""Chat turns versus checkpoints, and a rerun from turn N on a fork.

Seed 004: a chat turn (the user's question) is not a checkpoint; one turn spans
several checkpoints (input, every node, every pause and resume), and rerunning
question 2 must not disturb what came after it. On Agent Server that needs no
table of its own:

* **turns** are read from `threads.get_history`: a turn starts where a new
  HumanMessage (by id) appears in ``values.messages``; the input checkpoint just
  before it (``source == "input"``) belongs to that turn. A turn's *fork point*
  is the checkpoint before its first one: the end of the previous turn (for turn
  1, the thread's empty opening checkpoint).
* **rerun from turn N** is ``runs.create(..., checkpoint_id=<fork point of N>)``
  with the new text: the server starts a new branch from that checkpoint. The
  original branch is never written; its checkpoints stay readable by id
  (``get_state(checkpoint_id=...)``), and the thread's current state becomes the
  new branch's head.

A thread's history may hold several branches (after a rerun). Turns are mapped
along one branch: from a head checkpoint (default: the newest) back through
``parent_checkpoint`` links.

`map_turns` and `turns_from_history` are pure; `fetch_history` and
`rerun_from_turn` talk to the server through langgraph-sdk.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.schema import Checkpoint as SdkCheckpoint

from migrations_playbook.sources.api.paging import PageProgress, server_of

HISTORY_PAGE = 100
TEXT_PREVIEW = 60

TURNS_RESULT_VERSION = "1"


class TurnsError(ValueError):
    """A history or a turn number that cannot be mapped or rerun (exit 2 in the CLI)."""


@dataclass(frozen=True)
class Checkpoint:
    """What the turn mapping needs from one `get_history` entry."""

    checkpoint_id: str
    parent_id: str | None
    step: int | None
    source: str | None
    next: tuple[str, ...]
    human: tuple[tuple[str, str], ...]
    """``(message id, text)`` of every human message in ``values.messages``, in order."""
    run_id: str | None


@dataclass(frozen=True)
class Turn:
    """One chat turn: a new HumanMessage and every checkpoint until the next one."""

    index: int
    """1 for the first turn."""
    message_id: str
    text: str
    """The text of the human message that opened the turn."""
    first_checkpoint_id: str
    last_checkpoint_id: str
    first_step: int | None
    last_step: int | None
    checkpoints: int
    fork_from: str | None
    """Where a rerun of this turn forks: the checkpoint before the turn (the end of
    the previous turn). For turn 1, the thread's opening input checkpoint (its state
    is still empty, and a new input replaces the pending one); None when the thread
    did not start with an input checkpoint (e.g. it was seeded with update_state)."""
    complete: bool
    """False when the turn's last checkpoint still has work pending (an interrupt, a run in flight)."""
    run_ids: tuple[str, ...]
    """Runs that wrote the turn's checkpoints, oldest first."""


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            block if isinstance(block, str) else str(block.get("text", ""))
            for block in content
            if isinstance(block, (str, Mapping))
        )
    return ""


def _human(values: Any) -> tuple[tuple[str, str], ...]:
    messages = values.get("messages") if isinstance(values, Mapping) else None
    found = []
    for position, message in enumerate(messages or []):
        if isinstance(message, Mapping) and message.get("type") == "human":
            found.append((str(message.get("id") or f"#{position}"), _text(message.get("content"))))
    return tuple(found)


def checkpoint_of(entry: Mapping[str, Any]) -> Checkpoint:
    """One `get_history` entry (a ThreadState dict) as a `Checkpoint`."""
    checkpoint = entry.get("checkpoint") or {}
    parent = entry.get("parent_checkpoint") or {}
    metadata = entry.get("metadata") or {}
    if not checkpoint.get("checkpoint_id"):
        raise TurnsError("a history entry has no checkpoint id")
    step = metadata.get("step")
    return Checkpoint(
        checkpoint_id=checkpoint["checkpoint_id"],
        parent_id=parent.get("checkpoint_id"),
        step=step if isinstance(step, int) else None,
        source=metadata.get("source"),
        next=tuple(entry.get("next") or ()),
        human=_human(entry.get("values")),
        run_id=metadata.get("run_id"),
    )


def branch(checkpoints: Sequence[Checkpoint], head: str | None = None) -> list[Checkpoint]:
    """The checkpoints from the root to ``head`` (default: the first, i.e. newest, entry), oldest first."""
    if not checkpoints:
        return []
    by_id = {c.checkpoint_id: c for c in checkpoints}
    head_id = head or checkpoints[0].checkpoint_id
    if head_id not in by_id:
        raise TurnsError(f"checkpoint {head_id} is not in the thread's history")
    chain: list[Checkpoint] = []
    current: str | None = head_id
    while current is not None and current in by_id:
        chain.append(by_id[current])
        current = by_id[current].parent_id
        if len(chain) > len(by_id):
            raise TurnsError("the history's parent links form a cycle")
    chain.reverse()
    return chain


def _opens_thread(checkpoint: Checkpoint) -> bool:
    """The root input checkpoint of a thread: no parent, no messages yet."""
    return checkpoint.parent_id is None and checkpoint.source == "input" and not checkpoint.human


def map_turns(chain: Sequence[Checkpoint]) -> list[Turn]:
    """Turns along one branch (oldest first), split at HumanMessage boundaries."""
    starts: list[tuple[int, str, str]] = []  # (index in chain, message id, text)
    seen: set[str] = set()
    for position, checkpoint in enumerate(chain):
        new = [(mid, text) for mid, text in checkpoint.human if mid not in seen]
        if not new:
            continue
        seen.update(mid for mid, _ in new)
        start = position
        previous_start = starts[-1][0] if starts else -1
        if position > 0 and chain[position - 1].source == "input" and position - 1 > previous_start:
            start = position - 1  # the input checkpoint that carried the message opens the turn
        starts.append((start, *new[0]))
    turns = []
    for number, (start, message_id, text) in enumerate(starts, start=1):
        end = starts[number][0] if number < len(starts) else len(chain)
        members = chain[start:end]
        first, last = members[0], members[-1]
        turns.append(
            Turn(
                index=number,
                message_id=message_id,
                text=text,
                first_checkpoint_id=first.checkpoint_id,
                last_checkpoint_id=last.checkpoint_id,
                first_step=first.step,
                last_step=last.step,
                checkpoints=len(members),
                fork_from=first.parent_id or (first.checkpoint_id if _opens_thread(first) else None),
                complete=not last.next,
                run_ids=tuple(dict.fromkeys(c.run_id for c in members if c.run_id)),
            )
        )
    return turns


def turns_from_history(history: Sequence[Mapping[str, Any]], head: str | None = None) -> list[Turn]:
    """`get_history` entries (newest first, as the API returns them) -> turns of the head's branch."""
    return map_turns(branch([checkpoint_of(entry) for entry in history], head))


def turn(turns: Sequence[Turn], number: int) -> Turn:
    """Turn ``number`` (1-based), or a `TurnsError` naming the range."""
    if not 1 <= number <= len(turns):
        raise TurnsError(f"turn {number} does not exist: the thread has {len(turns)} turn(s)")
    return turns[number - 1]


def preview(text: str, width: int = TEXT_PREVIEW) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def to_json(thread_id: str, head: str | None, turns: Sequence[Turn]) -> dict[str, Any]:
    return {
        "turns_result_version": TURNS_RESULT_VERSION,
        "thread_id": thread_id,
        "head_checkpoint_id": head,
        "turns": [{**asdict(t), "run_ids": list(t.run_ids)} for t in turns],
    }


def render_table(turns: Sequence[Turn]) -> str:
    rows = [("turn", "steps", "checkpoints", "status", "first checkpoint", "fork from", "message")]
    for t in turns:
        steps = f"{t.first_step}..{t.last_step}"
        rows.append(
            (
                str(t.index),
                steps,
                str(t.checkpoints),
                "done" if t.complete else "pending",
                t.first_checkpoint_id,
                t.fork_from or "-",
                preview(t.text),
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows)


# -- server side ----------------------------------------------------------------------


async def fetch_history(client: LangGraphClient, thread_id: str, *, page: int = HISTORY_PAGE) -> list[Mapping[str, Any]]:
    """Every checkpoint of the thread's root namespace, newest first (paged with ``before``, each page
    checked to advance: `paging.PageProgress`)."""
    entries: list[Mapping[str, Any]] = []
    before: SdkCheckpoint | None = None
    progress = PageProgress(server_of(client), f"POST /threads/{thread_id}/history", "checkpoints")
    while True:
        batch = await client.threads.get_history(thread_id, limit=page, before=before)
        at = f"the page before checkpoint {before.get('checkpoint_id')}" if before is not None else "the first page"
        progress.advance([str(entry["checkpoint"]["checkpoint_id"]) for entry in batch], at)
        entries.extend(batch)
        if len(batch) < page:
            return entries
        before = batch[-1]["checkpoint"]


@dataclass(frozen=True)
class Rerun:
    """What `rerun_from_turn` did."""

    thread_id: str
    turn: int
    fork_from: str
    original_head: str
    run_id: str
    run_status: str
    new_head: str | None
    turns: tuple[Turn, ...]
    """The turns of the new branch."""


async def rerun_from_turn(
    client: LangGraphClient,
    thread_id: str,
    number: int,
    text: str,
    *,
    context: Mapping[str, Any] | None = None,
    assistant_id: str | None = None,
) -> Rerun:
    """Rerun turn ``number`` with ``text`` on a fork from the checkpoint before it, and wait.

    The run uses the thread's assistant (``metadata.assistant_id``) unless one is
    given, and the context of the run that made turn ``number`` unless one is given.
    Nothing of the original branch is written.
    """
    if not text.strip():
        raise TurnsError("the rerun needs a non-empty input text")
    history = await fetch_history(client, thread_id)
    if not history:
        raise TurnsError(f"thread {thread_id} has no checkpoints")
    original_head = history[0]["checkpoint"]["checkpoint_id"]
    chosen = turn(turns_from_history(history), number)
    if chosen.fork_from is None:
        raise TurnsError(
            f"turn {number} has no checkpoint to fork from (the thread did not start with an input): "
            "start a new thread with the new text"
        )
    thread = await client.threads.get(thread_id)
    assistant = assistant_id or (thread.get("metadata") or {}).get("assistant_id")
    if not assistant:
        raise TurnsError(f"thread {thread_id} has no assistant_id in its metadata; pass one")
    if context is None and chosen.run_ids:
        # the server's run carries ``kwargs`` (a dict), which langgraph-sdk's Run TypedDict leaves out
        original: Mapping[str, Any] = await client.runs.get(thread_id, chosen.run_ids[0])
        context = ((original.get("kwargs") or {}).get("context")) or None
    rerun_input: dict[str, Any] = {"messages": [{"role": "user", "content": text}]}
    run = await client.runs.create(
        thread_id,
        assistant,
        input=rerun_input,
        checkpoint_id=chosen.fork_from,
        context=dict(context) if context else None,
    )
    await client.runs.join(thread_id, run["run_id"])
    finished = await client.runs.get(thread_id, run["run_id"])
    state = await client.threads.get_state(thread_id)
    new_head = (state.get("checkpoint") or {}).get("checkpoint_id")
    new_turns = turns_from_history(await fetch_history(client, thread_id), new_head) if new_head else []
    return Rerun(
        thread_id=thread_id,
        turn=number,
        fork_from=chosen.fork_from,
        original_head=original_head,
        run_id=run["run_id"],
        run_status=finished["status"],
        new_head=new_head,
        turns=tuple(new_turns),
    )
