"""What a new migration record must cover (`playbook record new`), and whether a record is still a skeleton.

A record is what `contract.check` reads (`contract.parse_record`): front matter with ``id``, ``date``,
``gate`` and the ``contracts`` list (``- GRAPH sha256:...`` per new lock, ``- GRAPH removed`` per removed
graph), optionally ``accepts`` (then the shadow's passing output in the body). Below it, as this repo's
records have them: what changed per graph, how it was checked (the gate's output pasted), and the rollback.

`pending` finds the graphs whose code no record covers yet, each with what changed since the lock the
records last covered (the lock history keeps it) or, before ``contract --write``, since the committed
lock. `draft` adds the record's number and id. A skeleton carries `PLACEHOLDER` on every line a person
must write; `contract.check` refuses a record that still has one, so an unfilled skeleton never
satisfies the check.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from migrations_playbook.graphcode import contract

PLACEHOLDER = contract.PLACEHOLDER
SECTIONS = ("Change", "How it was checked", "Rollback")
"""The record's body headings (``## ...``), as this repo's records have them."""
FRONT_MATTER = ("id", "date", "gate", "contracts")
"""The record's front matter keys: `contract.check` reads ``contracts`` (and ``accepts``); ``id`` names the
record wherever it accepts a finding; ``date`` and ``gate`` (the gate's verdict) are for the reader."""
REQUIREMENTS = (
    "a Markdown file in the records folder whose front matter (between `---` lines) has id, date, gate "
    "(the gate's verdict) and a `contracts:` list naming each new lock (`- GRAPH sha256:...`, or `- GRAPH removed`), "
    "then what changed per graph, how it was checked (the gate's output pasted), and the rollback; "
    f"no `{PLACEHOLDER}` line left"
)
"""What a record must contain, as the contract check's error says it."""

_NUMBER = re.compile(r"^(\d+)-")


@dataclass(frozen=True)
class GraphChange:
    graph_id: str
    new_hash: str
    """The code's contract hash, or ``removed``."""
    old_hash: str | None = None
    """The hash of the lock the changes are against (None: no earlier lock is known)."""
    changes: list[str] = field(default_factory=list)
    base: str = ""
    """Which lock ``old_hash`` is: ``recorded`` (the last one a record covers) or ``committed`` (the lock file)."""


@dataclass(frozen=True)
class RecordDraft:
    number: str
    record_id: str
    graphs: list[GraphChange]
    stale_locks: list[str] = field(default_factory=list)
    """Graphs whose lock file differs from the code (``contract --write`` not run yet)."""


def _last_recorded(records_dir: Path) -> dict[str, str]:
    """graph id -> the hash the newest record (by file name) lists for it."""
    last: dict[str, str] = {}
    for record in sorted(records_dir.glob("*.md")) if records_dir.is_dir() else []:
        for entry in contract.parse_record(record.read_text()).get("contracts", []):
            graph_id, digest = contract.contract_entry(entry)
            if digest and digest != "removed":
                last[graph_id] = digest
    return last


def _lock_file(contracts_dir: Path, graph_id: str) -> dict[str, Any] | None:
    path = contracts_dir / f"{graph_id}.json"
    if not path.is_file():
        return None
    document: dict[str, Any] = json.loads(path.read_text())
    return contract.strip_lock(document)


def pending(contracts: dict[str, dict[str, Any]], contracts_dir: Path, records_dir: Path) -> tuple[list[GraphChange], list[str]]:
    """The graphs a new record must cover (their code's hash is in no record; a lock whose graph is gone and
    no record says so), with their changes; and the graphs whose lock file differs from the code."""
    covered = contract.covered_hashes(records_dir)
    recorded = _last_recorded(records_dir)
    changes: list[GraphChange] = []
    stale: list[str] = []
    for graph_id, code in sorted(contracts.items()):
        digest = contract.contract_hash(code)
        committed = _lock_file(contracts_dir, graph_id)
        if committed is not None and committed != code:
            stale.append(graph_id)
        if digest in covered.get(graph_id, set()):
            continue
        base: dict[str, Any] | None = None
        how = ""
        if graph_id in recorded:
            document = contract.read_history(contracts_dir, graph_id, recorded[graph_id])
            if document is not None:
                base, how = contract.strip_lock(document), "recorded"
        if base is None and committed is not None and committed != code:
            base, how = committed, "committed"
        if base is None and graph_id in recorded:
            unknown = f"changes unknown: the lock the records last cover ({recorded[graph_id]}) is not in the lock history"
            changes.append(GraphChange(graph_id, digest, recorded[graph_id], [unknown], "recorded"))
        elif base is None:
            changes.append(GraphChange(graph_id, digest, changes=["new graph (no earlier lock on record)"]))
        else:
            changes.append(GraphChange(graph_id, digest, contract.contract_hash(base), contract.diff_contracts(base, code), how))
    for lock_path in sorted(contracts_dir.glob("*.json")) if contracts_dir.is_dir() else []:
        graph_id = lock_path.stem
        if graph_id not in contracts and "removed" not in covered.get(graph_id, set()):
            old = _lock_file(contracts_dir, graph_id) or {}
            changes.append(GraphChange(graph_id, "removed", contract.contract_hash(old), ["graph removed"], "committed"))
    return changes, stale


def next_number(records_dir: Path) -> str:
    """One above the highest ``NNNN-`` of the records folder's files, as wide as they are (at least 4)."""
    numbers = [m for p in (records_dir.iterdir() if records_dir.is_dir() else ()) if (m := _NUMBER.match(p.name))]
    highest = max((int(m.group(1)) for m in numbers), default=0)
    width = max([4, *(len(m.group(1)) for m in numbers)])
    return str(highest + 1).zfill(width)


def slug(text: str) -> str:
    """A file-name slug: lower case, words joined by ``-``."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "change"


def draft(contracts: dict[str, dict[str, Any]], contracts_dir: Path, records_dir: Path, name: str | None = None) -> RecordDraft:
    """The new record: its number, id and the graphs it covers (an empty ``graphs``: nothing to record)."""
    graphs, stale = pending(contracts, contracts_dir, records_dir)
    number = next_number(records_dir)
    what = slug(name) if name else slug("-".join(g.graph_id for g in graphs))
    return RecordDraft(number=number, record_id=f"{number}-{what}", graphs=graphs, stale_locks=stale)
