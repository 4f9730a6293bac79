"""`playbook migrate`'s journal (migrations_playbook/repair/journal.py) after a run killed mid-write."""

from __future__ import annotations

from pathlib import Path

from migrations_playbook.repair.journal import Journal


def test_a_line_written_after_a_torn_one_is_read_not_lost_with_it(tmp_path: Path) -> None:
    path = tmp_path / "0006--host.jsonl"
    killed = Journal(path, "0006")
    killed.start("apply")
    killed.writing("apply", "thread-1", "helpdesk", "base-1")
    with path.open("ab") as handle:  # SIGKILL in the middle of the next line
        handle.write(b'{"migration": "0006", "run": "' + killed.run.encode() + b'", "event": "wri')

    second = Journal(path, "0006")
    second.start("apply")
    second.writing("apply", "thread-2", "helpdesk", "base-2")

    third = Journal(path, "0006")
    previous = third.previous("apply")
    assert previous.torn == 1
    assert {str(run.get("run")) for run in previous.runs} == {killed.run, second.run}
    assert set(previous.threads) == {"thread-1", "thread-2"}
