"""Contract locks and records: no contract change lands without a record."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from migrations_playbook.graphcode.candidate import contract_of, load_compiled
from migrations_playbook.graphcode.contract import check, contract_hash, parse_record, write
from tests.conftest import REPO_ROOT
from tests.fixtures.gate_projects.variants import V1, make_variant

RECORD = """---
id: 0007-example
date: 2026-11-30
gate: pass
contracts:
  - helpdesk {digest}
  - old_graph removed
---
# Example
"""


def _contracts(config: Path) -> dict[str, dict]:
    return {gid: contract_of(gid, g) for gid, g in load_compiled(config).items()}


def test_parse_record_front_matter() -> None:
    meta = parse_record(RECORD.format(digest="sha256:abc"))
    assert meta["id"] == "0007-example"
    assert meta["contracts"] == ["helpdesk sha256:abc", "old_graph removed"]


def test_check_walks_from_missing_lock_to_recorded(tmp_path: Path) -> None:
    contracts = {"helpdesk": _contracts(V1 / "langgraph.json")["helpdesk"]}
    locks, records = tmp_path / "contracts", tmp_path / "records"
    (status,) = check(contracts, locks, records)
    assert "no lock" in status.problems[0]

    write(contracts, locks)
    (status,) = check(contracts, locks, records)
    assert status.problems == [f"no migration record in {records} covers helpdesk {contract_hash(contracts['helpdesk'])}"]

    records.mkdir()
    (records / "0007-example.md").write_text(RECORD.format(digest=contract_hash(contracts["helpdesk"])))
    (status,) = check(contracts, locks, records)
    assert status.problems == []


def test_code_drift_from_lock_fails_and_names_the_changes(tmp_path: Path) -> None:
    locks = tmp_path / "contracts"
    write({"helpdesk": _contracts(V1 / "langgraph.json")["helpdesk"]}, locks)
    renamed = make_variant(
        tmp_path,
        "v2",
        [
            ("helpdesk.py", "    response: NotRequired[str]", "    reply: NotRequired[str]"),
            ("helpdesk.py", 'builder.add_node("enrich", enrich)\n', ""),
            (
                "helpdesk.py",
                'builder.add_edge("intake", "enrich")\nbuilder.add_edge("enrich", "triage")',
                'builder.add_edge("intake", "triage")',
            ),
        ],
    )
    (status,) = check({"helpdesk": _contracts(renamed)["helpdesk"]}, locks, tmp_path / "records")
    assert "code differs" in status.problems[0]
    assert status.changes == [
        "node removed: enrich",
        "edge removed: enrich -> triage",
        "edge removed: intake -> enrich",
        "edge added: intake -> triage",
        "field added: reply: str",
        "field removed: response",
    ]


def test_stale_lock_of_removed_graph_needs_a_removal_record(tmp_path: Path) -> None:
    locks, records = tmp_path / "contracts", tmp_path / "records"
    write(_contracts(V1 / "langgraph.json"), locks)
    remaining = {gid: c for gid, c in _contracts(V1 / "langgraph.json").items() if gid != "notes"}
    statuses = {s.graph_id: s for s in check(remaining, locks, records)}
    assert "no longer registers" in statuses["notes"].problems[0]
    records.mkdir()
    (records / "r.md").write_text("---\ncontracts:\n  - notes removed\n---\n")
    assert "notes" not in {s.graph_id for s in check(remaining, locks, records)}


def test_this_repo_matches_its_locks_and_records() -> None:
    """The gate the suite enforces: a contract change needs `contract --write` and a record."""
    result = subprocess.run(
        [sys.executable, "-m", "migrations_playbook", "contract", "--config", str(REPO_ROOT / "langgraph.json"), "--check"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_contract_cli_writes_then_checks_a_foreign_project(tmp_path: Path) -> None:
    project = tmp_path / "p"
    shutil.copytree(V1, project)
    run = lambda *a: subprocess.run(  # noqa: E731 - tiny local helper
        [sys.executable, "-m", "migrations_playbook", "contract", "--config", str(project / "langgraph.json"), *a],
        capture_output=True,
        text=True,
        timeout=300,
    )
    written = run("--write")
    assert written.returncode == 0 and "helpdesk sha256:" in written.stdout
    lock = json.loads((project / "playbook" / "contracts" / "helpdesk.json").read_text())  # the default beside the config
    assert lock["interrupt_nodes"] == ["triage"]
    assert lock["fields"]["notes"]["reducer"] == "BinaryOperatorAggregate(_operator.add)"
    assert lock["fields"]["request"]["required"] is True
    checked = run("--check")
    assert checked.returncode == 1 and "no migration record" in checked.stdout
    assert run("--write", "--check").returncode == 2


def test_a_graph_id_with_spaces_is_covered_by_its_record(tmp_path: Path) -> None:
    """langgraph.json's graph keys are free text (open_deep_research's is ``Deep Researcher``): the record line
    `- Deep Researcher sha256:...` that `playbook record new` writes covers that graph (docs/public-projects.md)."""
    contracts = {"Deep Researcher": _contracts(V1 / "langgraph.json")["helpdesk"]}
    locks, records = tmp_path / "contracts", tmp_path / "records"
    write(contracts, locks)
    records.mkdir()
    digest = contract_hash(contracts["Deep Researcher"])
    (records / "0001-deep.md").write_text(f"---\nid: 0001-deep\ncontracts:\n  - Deep Researcher {digest}\n---\n")
    (status,) = check(contracts, locks, records)
    assert status.problems == []
