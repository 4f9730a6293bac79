"""`playbook record new`: the skeleton of the record a contract change needs, refused by the check until filled."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from migrations_playbook import cli
from migrations_playbook.graphcode.candidate import contract_of, load_compiled
from migrations_playbook.graphcode.contract import PLACEHOLDER, check, contract_hash, unfilled, write
from migrations_playbook.graphcode.record import FRONT_MATTER, SECTIONS, draft, next_number, pending
from migrations_playbook.render.record import skeleton
from tests.conftest import REPO_ROOT
from tests.fixtures.gate_projects.variants import V1, make_variant

RENAME = [("helpdesk.py", "    response: NotRequired[str]", "    reply: NotRequired[str]")]


def _contracts(config: Path) -> dict[str, dict]:
    return {gid: contract_of(gid, g) for gid, g in load_compiled(config).items()}


def _fill(path: Path) -> None:
    """What a person does: every placeholder line replaced by text."""
    lines = [re.sub(re.escape(PLACEHOLDER) + r".*", "written by hand", line) for line in path.read_text().splitlines()]
    path.write_text("\n".join(lines) + "\n")


def test_next_number_follows_the_highest_and_keeps_the_width(tmp_path: Path) -> None:
    assert next_number(tmp_path / "none") == "0001"
    for name in ("0001-a.md", "0006-b.plan.json", "0004-c.md", "README.md"):
        (tmp_path / name).write_text("")
    assert next_number(tmp_path) == "0007"


def test_pending_diffs_against_the_last_recorded_lock(tmp_path: Path) -> None:
    locks, records = tmp_path / "contracts", tmp_path / "records"
    v1 = {"helpdesk": _contracts(V1 / "langgraph.json")["helpdesk"]}
    write(v1, locks)
    records.mkdir()
    (records / "0001-base.md").write_text(f"---\nid: 0001-base\ncontracts:\n  - helpdesk {contract_hash(v1['helpdesk'])}\n---\n")
    assert pending(v1, locks, records) == ([], [])

    v2 = {"helpdesk": _contracts(make_variant(tmp_path, "v2", RENAME))["helpdesk"]}
    (before,), stale = pending(v2, locks, records)  # before `contract --write`: the committed lock
    assert stale == ["helpdesk"]
    write(v2, locks)
    (after,), stale = pending(v2, locks, records)  # after it: the last recorded lock, from the history
    assert stale == []
    for change in (before, after):
        assert (change.old_hash, change.new_hash) == (contract_hash(v1["helpdesk"]), contract_hash(v2["helpdesk"]))
        assert change.changes == ["field added: reply: str", "field removed: response"]
    assert (before.base, after.base) == ("recorded", "recorded")


def test_a_removed_graph_is_recorded_as_removed(tmp_path: Path) -> None:
    locks, records = tmp_path / "contracts", tmp_path / "records"
    write({"helpdesk": _contracts(V1 / "langgraph.json")["helpdesk"]}, locks)
    (gone,) = draft({}, locks, records).graphs
    assert (gone.graph_id, gone.new_hash) == ("helpdesk", "removed")
    assert "  - helpdesk removed" in skeleton(draft({}, locks, records), "2026-12-04").splitlines()


def test_the_skeleton_has_the_checked_front_matter_the_sections_and_the_diff(tmp_path: Path) -> None:
    locks, records = tmp_path / "contracts", tmp_path / "records"
    contracts = {"helpdesk": _contracts(V1 / "langgraph.json")["helpdesk"]}
    write(contracts, locks)
    text = skeleton(draft(contracts, locks, records, "first lock"), "2026-12-04")
    assert text.startswith("---\nid: 0001-first-lock\ndate: 2026-12-04\n")
    front = text.split("---")[1]
    for key in FRONT_MATTER:
        assert f"\n{key}:" in front
    for section in SECTIONS:
        assert f"\n## {section}\n" in text
    assert f"  - helpdesk {contract_hash(contracts['helpdesk'])}" in text
    assert len(unfilled(text)) == 5


def test_the_check_refuses_the_unfilled_skeleton_and_passes_it_filled(tmp_path: Path) -> None:
    locks, records = tmp_path / "contracts", tmp_path / "records"
    contracts = {"helpdesk": _contracts(V1 / "langgraph.json")["helpdesk"]}
    write(contracts, locks)
    records.mkdir()
    record = records / "0001-helpdesk.md"
    record.write_text(skeleton(draft(contracts, locks, records), "2026-12-04"))
    statuses = check(contracts, locks, records)
    problems = [p for s in statuses for p in s.problems]
    assert len(problems) == 1 and "0001-helpdesk.md is an unfilled skeleton" in problems[0]
    _fill(record)
    assert [p for s in check(contracts, locks, records) for p in s.problems] == []


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = cli.main(argv)
    out = capsys.readouterr()
    return code, out.out + out.err


def test_cli_from_a_graph_change_to_a_passing_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The hook's run (`playbook contract --check`) on a fixture project whose graph changes."""
    project = tmp_path / "v1"
    shutil.copytree(V1, project)
    (project / ".git").mkdir()  # the project's root: no pyproject.toml above it is read
    monkeypatch.chdir(project)
    assert _run(["contract", "--write"], capsys)[0] == 0
    assert _run(["record", "new", "--name", "baseline", "--date", "2026-12-01"], capsys)[0] == 0
    _fill(project / "playbook" / "records" / "0001-baseline.md")
    assert _run(["contract", "--check"], capsys)[0] == 0

    # The change: a copy of the project (own folder, so the changed module is imported afresh), field renamed.
    changed = make_variant(tmp_path, "v2", RENAME).parent
    shutil.copytree(project / "playbook", changed / "playbook")
    (changed / ".git").mkdir()
    monkeypatch.chdir(changed)
    code, out = _run(["contract", "--write"], capsys)
    assert code == 0 and "`playbook record new` writes its skeleton" in out
    code, out = _run(["contract", "--check"], capsys)
    assert code == 1
    assert re.search(r"no migration record in \S*playbook/records covers helpdesk", out)
    assert "A migration record is a Markdown file" in out and "`contracts:` list" in out
    assert out.rstrip().splitlines()[-1] == "fix: playbook record new"

    code, out = _run(["record", "new", "--name", "rename reply"], capsys)
    assert code == 0 and "wrote playbook/records/0002-rename-reply.md" in out
    record = changed / "playbook" / "records" / "0002-rename-reply.md"
    assert "- field removed: response" in record.read_text()
    code, out = _run(["contract", "--check"], capsys)
    assert code == 1 and "0002-rename-reply.md is an unfilled skeleton" in out  # never satisfied silently
    code, out = _run(["record", "new"], capsys)
    assert (
        code == 0
        and out.splitlines()[-1] == f"playbook/records/0002-rename-reply.md still holds {PLACEHOLDER} lines: fill them in"
    )
    _fill(record)
    code, out = _run(["contract", "--check"], capsys)
    assert code == 0, out
    # The pre-commit hook's own entry, in a process of its own, as pre-commit runs it.
    (hook,) = yaml.safe_load((REPO_ROOT / ".pre-commit-hooks.yaml").read_text())
    argv = hook["entry"].split()
    assert argv[0] == "playbook"
    done = subprocess.run([sys.executable, "-m", "migrations_playbook", *argv[1:]], cwd=changed, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert _run(["record", "new"], capsys) == (
        0,
        "nothing to record: a record in playbook/records covers every graph's contract\n",
    )


def test_record_new_without_a_config_is_a_message_not_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out = _run(["record", "new"], capsys)
    assert code == cli.EXIT_USAGE
    assert out == "playbook: error: config not found: langgraph.json\n"


def test_a_recorded_lock_missing_from_the_history_is_said(tmp_path: Path) -> None:
    locks, records = tmp_path / "contracts", tmp_path / "records"
    v2 = {"helpdesk": _contracts(make_variant(tmp_path, "v2", RENAME))["helpdesk"]}
    write(v2, locks)
    records.mkdir()
    (records / "0001-base.md").write_text("---\nid: 0001-base\ncontracts:\n  - helpdesk sha256:0000000000000000\n---\n")
    ((change,), _) = pending(v2, locks, records)
    assert change.old_hash == "sha256:0000000000000000"
    assert change.changes == [
        "changes unknown: the lock the records last cover (sha256:0000000000000000) is not in the lock history"
    ]


def test_an_unwritable_records_folder_is_a_message_not_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "v1"
    shutil.copytree(V1, project)
    (project / ".git").mkdir()
    monkeypatch.chdir(project)
    (project / "records-file").write_text("not a folder")
    code, out = _run(["record", "new", "--records-dir", "records-file/records"], capsys)
    assert code == cli.EXIT_USAGE
    assert out.startswith("playbook: error: cannot write records-file/records/0001-") and "Traceback" not in out


def test_the_last_recorded_hash_of_a_graph_id_with_spaces(tmp_path: Path) -> None:
    """`record new` diffs against the lock the records last covered: found for ``Deep Researcher`` too
    (open_deep_research's graph id, docs/public-projects.md)."""
    from migrations_playbook.graphcode.record import _last_recorded

    (tmp_path / "0001-deep.md").write_text("---\nid: 0001-deep\ncontracts:\n  - Deep Researcher sha256:0123456789abcdef\n---\n")
    assert _last_recorded(tmp_path) == {"Deep Researcher": "sha256:0123456789abcdef"}
