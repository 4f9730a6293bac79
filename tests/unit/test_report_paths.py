"""Reports never print the absolute paths of the machine that made them: every format of every command's report,
with every path under a temp dir, holds no trace of the temp dir (paths relative to the project, or their name)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from migrations_playbook.cli import build_parser
from migrations_playbook.model import Finding, GateReport, GraphSummary, UnprovenThread
from migrations_playbook.render import FORMATS, render
from migrations_playbook.render import migrate as render_migrate
from migrations_playbook.render.envelope import as_json
from migrations_playbook.render.paths import scrub, shown
from migrations_playbook.repair.prove import Proof
from migrations_playbook.repair.report import MigrateReport
from migrations_playbook.sources.repair_model import ThreadOutcome


def _formats() -> dict[str, tuple[str, ...]]:
    """command -> its report formats, from the parser."""
    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    found = {}
    for name, command in sub.choices.items():
        for action in command._actions:
            if "--format" in action.option_strings:
                found[name] = tuple(action.choices or ())
    return found


FORMATS_OF = _formats()
PATHLESS = {"inflight", "rules", "snapshot", "turns", "rerun", "activity"}
"""Commands whose output holds no path (thread counts, the rule table, thread data, trace counts); inflight's
Markdown names the live source, scrubbed (tests/unit/test_mermaid_render.py)."""
GATE_REPORTS = sorted(name for name, formats in FORMATS_OF.items() if "markdown" in formats and name not in PATHLESS)
"""The commands whose report is a `GateReport` (every other command with a Markdown report: `render.render`)."""


def test_every_report_command_is_covered() -> None:
    assert set(GATE_REPORTS) == {"check", "gate", "replay", "shadow"}
    assert all(set(FORMATS_OF[c]) == set(FORMATS) for c in GATE_REPORTS)  # render.render draws each of them
    assert set(FORMATS_OF) - set(GATE_REPORTS) - PATHLESS == {"migrate"}


@pytest.fixture
def machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    project = tmp_path / "work" / "project"
    (project / "contracts").mkdir(parents=True)
    outside = tmp_path / "elsewhere" / "deployed-locks"
    outside.mkdir(parents=True)
    monkeypatch.chdir(project)
    return {"root": tmp_path, "project": project, "outside": outside}


def _gate_report(command: str, m: dict[str, Path]) -> GateReport:
    project, outside = m["project"], m["outside"]
    finding = Finding(
        code="NODE_MISSING",
        severity="block",
        graph_id="helpdesk",
        message=f"paused at triage, which {project / 'langgraph.json'} no longer has",
        node="triage",
        thread_ids=["t-1"],
        thread_count=1,
        help=f"see {project / 'contracts' / 'helpdesk.json'}.",
        why=f"the lock {outside / 'helpdesk.json'} has it",
    )
    checked = command == "check"
    if checked:  # a settlement and an unproven thread, whose texts name paths too
        finding.settled, finding.evidence = "unverified", f"thread t-1 could not be run: {project / 'graph.py'} raised"
    unproven = [UnprovenThread("t-2", "helpdesk", f"the deployed code's resume failed in {outside / 'x.py'}", "answer it")]
    return GateReport(
        live_url=f"sqlite:///{project / 'store.db'}",
        candidate=str(project / "langgraph.json"),
        strict=True,
        graphs={"helpdesk": GraphSummary(threads_scanned=1, by_status={"interrupted": 1})},
        findings=[finding],
        notes=[
            f"live reducers from contract locks at {outside}",
            f"threads read from checkpointer sqlite:///{outside / 'live.db'} (read-only)",
            f"staging copy of {m['root'] / 'tmpcopy' / '.langgraph_api'}: served on http://127.0.0.1:2999/threads",
        ],
        command=command,
        unproven=unproven if checked else None,
    )


def _migrate_report(m: dict[str, Path]) -> MigrateReport:
    return MigrateReport(
        migration="0006-x",
        mode="staging",
        live_url="http://127.0.0.1:2024",
        candidate=str(m["project"] / "langgraph.json"),
        served={"helpdesk": "candidate"},
        before=_gate_report("gate", m),
        threads=[ThreadOutcome("t-1", "helpdesk", "interrupted", "would change", reason=f"plan {m['outside'] / 'p.json'}")],
        after=_gate_report("gate", m),
        proofs=[Proof("t-1", "helpdesk", "assess", ok=True, proven=True)],
        notes=[f"the live code's locks from {m['outside']}"],
        staging_url="http://127.0.0.1:3000",
    )


@pytest.mark.parametrize(("command", "fmt"), [(c, f) for c in GATE_REPORTS for f in FORMATS_OF[c]])
def test_no_gate_report_prints_the_machines_paths(command: str, fmt: str, machine: dict[str, Path]) -> None:
    text = render(_gate_report(command, machine), fmt)
    assert str(machine["root"]) not in text
    assert "langgraph.json" in text and "contracts/helpdesk.json" in text and "deployed-locks" in text
    assert "sqlite://store.db" in text  # the store's URI keeps its scheme
    assert "http://127.0.0.1:2999/threads" in text  # URLs are not paths
    if fmt == "json":
        assert json.loads(text)["candidate"] == "langgraph.json"


def test_the_json_envelope_alone_scrubs_too(machine: dict[str, Path]) -> None:
    assert str(machine["root"]) not in as_json(_gate_report("gate", machine))


@pytest.mark.parametrize("fmt", FORMATS_OF["migrate"])
def test_no_migrate_report_prints_the_machines_paths(fmt: str, machine: dict[str, Path]) -> None:
    text = render_migrate.render(_migrate_report(machine), fmt)
    assert str(machine["root"]) not in text
    assert "langgraph.json" in text and "deployed-locks" in text


def test_shown_and_scrub(tmp_path: Path) -> None:
    assert shown(tmp_path / "a" / "b.json", tmp_path) == "a/b.json"
    assert shown(tmp_path / "a", tmp_path / "other") == "a"
    assert shown("rel/x.json", tmp_path) == "rel/x.json"
    assert shown(tmp_path, tmp_path) == "."
    text = f"at {tmp_path / 'x.json'}. GET /playbook/contract on http://h:1/a/b, file `{tmp_path / 'y'}`"
    assert scrub(text, tmp_path) == "at x.json. GET /playbook/contract on http://h:1/a/b, file `y`"
    assert (
        scrub(f"file://{tmp_path / 'z.db'} and http://{tmp_path.name}/r", tmp_path) == f"file://z.db and http://{tmp_path.name}/r"
    )
