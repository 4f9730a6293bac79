"""The picture in the pull request, from a real `langgraph dev`: `playbook gate --format markdown` (and `inflight
--format markdown`) against the v1 fixture project's live threads draws each graph from the server's own topology
(`get_graph(xray=True)`), with the threads paused at each node and the renamed node marked; every diagram parses
with Mermaid's own parser (tests/mermaid_check)."""

from __future__ import annotations

import asyncio
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from migrations_playbook.sources.devserver import DevServer
from tests.fixtures.gate_projects.variants import HELPDESK_TRIAGE_RENAMED, V1, make_variant, populate
from tests.mermaid_check import parser

FENCE = re.compile(r"```mermaid\n(.*?)\n```", re.S)


def _playbook(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "migrations_playbook", *args], capture_output=True, text=True, timeout=300, cwd=cwd
    )


def _block(text: str, marker: str) -> str:
    found = [b for b in FENCE.findall(text) if marker in b]
    assert len(found) == 1, text
    return found[0]


def _classes(text: str) -> dict[str, set[str]]:
    return {name: set(members.split(",")) for members, name in re.findall(r"^\s*class (\S+) (\w+)$", text, re.M)}


def test_gate_and_inflight_markdown_draw_the_live_threads(tmp_path: Path) -> None:
    reason = parser.available()
    if reason is not None:
        pytest.skip(reason)
    project = tmp_path / "v1"
    shutil.copytree(V1, project)
    locks = tmp_path / "v1-locks"
    written = _playbook(
        "contract", "--config", str(project / "langgraph.json"), "--write", "--contracts-dir", str(locks), cwd=tmp_path
    )
    assert written.returncode == 0, written.stderr
    candidate = make_variant(tmp_path, "candidate", HELPDESK_TRIAGE_RENAMED)
    with DevServer(project / "langgraph.json", project) as server:
        positions = asyncio.run(populate(server.url))
        gate = _playbook(
            "gate",
            "--live",
            server.url,
            "--candidate",
            str(candidate),
            "--live-contract",
            str(locks),
            "--format",
            "markdown",
            cwd=tmp_path,
        )
        inflight = _playbook("inflight", "--live", server.url, "--format", "markdown", cwd=tmp_path)
    assert gate.returncode == 1, gate.stderr
    assert inflight.returncode == 0, inflight.stderr
    assert len(positions["helpdesk_at_triage"]) == 2

    helpdesk = _block(gate.stdout, "n_triage")
    assert 'n_triage["triage<br>2 interrupted"]' in helpdesk
    assert 't_start(["START<br>1 idle"])' in helpdesk
    assert _classes(helpdesk)["blocking"] == {"n_triage"}
    assert "  n_enrich --> n_triage" in helpdesk.splitlines()  # the live topology: the candidate has no triage
    escalation = _block(gate.stdout, "sg_review")
    assert 'n_review__confirm["confirm<br>1 interrupted"]' in escalation
    assert "Drawn from the live server's topology (`get_graph(xray=True)`)." in gate.stdout
    assert "Red: blocking findings at `triage` (NODE_MISSING)." in gate.stdout

    assert 'n_triage["triage<br>2 interrupted"]' in _block(inflight.stdout, "n_triage")
    assert 'n_review__confirm["confirm<br>1 interrupted"]' in _block(inflight.stdout, "sg_review")

    diagrams = {f"gate #{i}": b for i, b in enumerate(FENCE.findall(gate.stdout))}
    diagrams |= {f"inflight #{i}": b for i, b in enumerate(FENCE.findall(inflight.stdout))}
    assert len(diagrams) == 6  # helpdesk, escalation, notes: each has live threads
    errors = {name: error for name, error in parser.parse(diagrams).items() if error}
    assert not errors, errors
