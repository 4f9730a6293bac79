"""`playbook migrate`'s journal: what an ``--apply`` or ``--rollback`` is doing, one thread at a time, on disk.

A migration writes one thread at a time, and each write is more than one request (through Agent Server:
the checkpoint, then the record's stamp, `sources/api/repair.py`). A process killed between two of them leaves
a thread that is written but not finished. The stamps on the source say what landed; the journal says
what the killed run was in the middle of, so the next run names those threads and finishes them.

An append-only JSON-lines file, one per migration and source (`journal_path`, under `journal_root`:
``$XDG_STATE_HOME/playbook/migrate/``), each line written and fsynced before the step it announces (a
journal that cannot be written stops the run with a usage error, exit 2, before the next thread):

* ``{"event": "start", "run": ..., "op": "apply"|"rollback", "pid": ..., "at": ...}`` when the writes begin;
* ``{"event": "writing", "run": ..., "op": ..., "thread_id": ..., "graph_id": ..., "base": ...}`` before a
  thread is changed (``base``: the head it was read at);
* ``{"event": "done", ..., "action": ..., "new_head": ...}`` once it is changed (or refused, or skipped);
* ``{"event": "end", "run": ...}`` when the run's writes are over.

A thread whose last line is ``writing`` was being written when its run stopped; a run with a ``start``
and no ``end`` stopped. A run that reaches its ``end`` went through every thread (finishing what an
earlier run left), so what came before it is settled. A torn last line (the kill came while it was
written) is skipped.
"""

from __future__ import annotations

import json
import os
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from hashlib import sha256
from pathlib import Path
from typing import Any, Literal

from migrations_playbook.errors import UsageError

Op = Literal["apply", "rollback"]


def journal_root() -> Path:
    """Where journals are kept: ``$XDG_STATE_HOME/playbook/migrate`` (default ``~/.local/state/playbook/migrate``),
    the operator's own state, never the project's tree."""
    state = os.environ.get("XDG_STATE_HOME", "").strip()
    return (Path(state) if state else Path.home() / ".local" / "state") / "playbook" / "migrate"


def journal_path(migration: str, address: str, root: Path | None = None) -> Path:
    """The journal of ``migration`` on the source at ``address`` (a URL or a store URI: only a hash of it is
    in the name, with the host part, so no password lands in a file name), under ``root`` (`journal_root`)."""
    host = re.sub(r"^[a-z+]+://", "", address).split("@")[-1].split("/")[0]
    slug = re.sub(r"[^A-Za-z0-9.-]+", "_", host).strip("_")[:60] or "source"
    digest = sha256(address.encode()).hexdigest()[:10]
    safe_id = re.sub(r"[^A-Za-z0-9._-]+", "_", migration)
    return (root or journal_root()) / f"{safe_id}--{slug}-{digest}.jsonl"


@dataclass
class Previous:
    """What earlier runs left unfinished, as the journal tells it."""

    runs: list[dict[str, Any]] = field(default_factory=list)
    """``start`` lines without their ``end``: runs that stopped (killed, or failed) midway."""
    threads: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Thread id -> its ``writing`` line, where that is the thread's last line (of this op)."""
    torn: int = 0
    """Lines that could not be read (a kill while a line was written)."""
    path: str = ""
    """The journal file (for the note)."""

    @property
    def empty(self) -> bool:
        return not self.runs and not self.threads

    def note(self, op: Op) -> str | None:
        """The report's note on it (None when nothing was left unfinished)."""
        if self.empty:
            return None
        runs = ", ".join(f"pid {r.get('pid')} at {r.get('at')}" for r in self.runs) or "an earlier run"
        text = f"a previous --{op} stopped before its end ({runs})"
        if self.threads:
            shown = ", ".join(sorted(self.threads)[:10]) + (" ..." if len(self.threads) > 10 else "")
            text += (
                f", while writing {len(self.threads)} thread(s): {shown}; each is reported below as the source shows it "
                "now (a written one as already applied, and finished if a step was left)"
            )
        else:
            text += ", between two threads: no thread was half-written"
        return text + f" (journal {Path(self.path).name})" if self.path else text  # a name: no machine paths in reports


class Journal:
    """The journal of one migration on one source (`journal_path`)."""

    def __init__(self, path: Path, migration: str) -> None:
        self.path = path
        self.migration = migration
        self.run = uuid.uuid4().hex[:12]

    def _lines(self) -> tuple[list[dict[str, Any]], int]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return [], 0
        entries, torn = [], 0
        for line in text.splitlines():
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
            except ValueError:
                torn += 1
                continue
            if isinstance(entry, dict) and entry.get("migration") == self.migration:
                entries.append(entry)
        return entries, torn

    def previous(self, op: Op) -> Previous:
        """What runs of ``op`` before this one left unfinished."""
        entries, torn = self._lines()
        started: dict[str, dict[str, Any]] = {}
        last: dict[str, dict[str, Any]] = {}
        for entry in entries:
            if entry.get("op") != op or entry.get("run") == self.run:
                continue
            event = entry.get("event")
            if event == "start":
                started[str(entry.get("run"))] = entry
            elif event == "end":  # a run that went through every thread: what came before it is settled
                started.clear()
                last.clear()
            elif event in ("writing", "done") and entry.get("thread_id"):
                last[str(entry["thread_id"])] = entry
        threads = {t: e for t, e in last.items() if e.get("event") == "writing"}
        return Previous(runs=list(started.values()), threads=threads, torn=torn, path=str(self.path))

    def _append(self, entry: Mapping[str, Any]) -> None:
        """One line, on disk (fsynced, the folder too when the file is new) before this returns."""
        try:
            self._write(entry)
        except OSError as exc:
            raise UsageError(
                f"cannot write migrate's journal {self.path}: {exc} (set XDG_STATE_HOME to a folder you can write; "
                "every thread changed so far is in the journal and stamped on the source: run again to go on)"
            ) from None

    def _write(self, entry: Mapping[str, Any]) -> None:
        new = not self.path.exists()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = json.dumps({"migration": self.migration, "run": self.run, **entry}, default=str, ensure_ascii=False)
        with open(self.path, "a+b") as handle:
            # A run killed mid-write left a torn last line with no newline: end it first, or this
            # line would be read as part of the torn one and lost with it.
            handle.seek(0, os.SEEK_END)
            if handle.tell() > 0:
                handle.seek(-1, os.SEEK_END)
                torn = handle.read(1) != b"\n"
                handle.seek(0, os.SEEK_END)
                if torn:
                    handle.write(b"\n")
            handle.write((line + "\n").encode("utf-8"))
            handle.flush()
            os.fsync(handle.fileno())
        if new:
            directory = os.open(self.path.parent, os.O_RDONLY)
            try:
                os.fsync(directory)
            finally:
                os.close(directory)

    def start(self, op: Op) -> None:
        self._append({"event": "start", "op": op, "pid": os.getpid(), "at": datetime.now(UTC).isoformat(timespec="seconds")})

    def writing(self, op: Op, thread_id: str, graph_id: str, base: str | None) -> None:
        self._append({"event": "writing", "op": op, "thread_id": thread_id, "graph_id": graph_id, "base": base})

    def done(self, op: Op, thread_id: str, action: str, new_head: str | None) -> None:
        self._append({"event": "done", "op": op, "thread_id": thread_id, "action": action, "new_head": new_head})

    def end(self, op: Op) -> None:
        self._append({"event": "end", "op": op})
