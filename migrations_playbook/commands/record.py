"""`playbook record new`: write the skeleton of the migration record the current contract change needs.

The record covers every graph whose code's contract hash no record lists (and every lock whose graph is
gone), says what changed per graph (the lock diff), and marks each line a person must write with
``TODO(playbook)``: `playbook contract --check` refuses the record until those lines are replaced.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from pathlib import Path

from migrations_playbook.commands.contract import code_contracts, paths_of
from migrations_playbook.errors import EXIT_PASS, UsageError
from migrations_playbook.graphcode import record
from migrations_playbook.graphcode.contract import unfilled
from migrations_playbook.render.record import skeleton


def _where(path: Path) -> str:
    """``path`` relative to the working folder when it lies in it (as `playbook contract` prints paths otherwise)."""
    try:
        return str(path.relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


@dataclass(frozen=True)
class RecordRequest:
    config: Path
    contracts_dir: str | None = None
    records_dir: str | None = None
    name: str | None = None
    """The record's name after its number (default: the graph ids)."""
    date: str | None = None
    """ISO date for the front matter (default: today, UTC)."""


def run(request: RecordRequest) -> int:
    config = request.config.resolve()
    if not config.is_file():
        raise UsageError(f"config not found: {_where(config)}")
    contracts_dir, records_dir = paths_of(config, request.contracts_dir, request.records_dir)
    draft = record.draft(code_contracts(config), contracts_dir, records_dir, request.name)
    if not draft.graphs:
        print(f"nothing to record: a record in {_where(records_dir)} covers every graph's contract")
        for skeleton_left in sorted(records_dir.glob("*.md")) if records_dir.is_dir() else []:
            if unfilled(skeleton_left.read_text()):
                print(f"{_where(skeleton_left)} still holds {record.PLACEHOLDER} lines: fill them in")
        return EXIT_PASS
    path = records_dir / f"{draft.record_id}.md"
    if path.exists():
        raise UsageError(f"{_where(path)} exists: choose another --name")
    date = request.date or datetime.datetime.now(datetime.UTC).date().isoformat()
    text = skeleton(draft, date)
    try:
        records_dir.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    except OSError as exc:
        raise UsageError(f"cannot write {_where(path)}: {exc.strerror or exc}") from None
    print(f"wrote {_where(path)}, covering " + ", ".join(f"{g.graph_id} {g.new_hash}" for g in draft.graphs))
    if draft.stale_locks:
        print(
            f"the locks of {', '.join(draft.stale_locks)} differ from the code: run `playbook contract --write` "
            "(the record lists the hashes it will write)"
        )
    print(
        f"fill in its {len(unfilled(text))} {record.PLACEHOLDER} lines; "
        "`playbook contract --check` refuses the record until none is left"
    )
    return EXIT_PASS
