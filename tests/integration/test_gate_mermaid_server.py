"""The picture in the pull request, from a real `langgraph dev`: `playbook gate --format markdown` (and `inflight
--format markdown`, `shadow --format markdown`) against the v1 fixture project's live threads draws each graph from
the server's own topology (`get_graph(xray=True)`), with the threads paused at each node and the renamed node
marked; every diagram parses with Mermaid's own parser (tests/mermaid_check)."""

from __future__ import annotations

import asyncio
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from migrations_playbook.staging.server import DevServer
from tests.fixtures.gate_projects.variants import HELPDESK_TRIAGE_RENAMED, SAFE, V1, make_variant, populate
from tests.integration.background import Background, ahead
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


@dataclass(frozen=True)
class Live:
    url: str
    project: Path
    locks: Path
    root: Path


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    """The v1 fixture project served with threads at each position; stopped once (a graceful stop writes every
    checkpoint to .langgraph_api/, which the shadow copies) and served again."""
    reason = parser.available()
    if reason is not None:
        pytest.skip(reason)
    root = tmp_path_factory.mktemp("mermaid-live")
    project = root / "v1"
    shutil.copytree(V1, project)
    locks = root / "v1-locks"
    written = _playbook(
        "contract", "--config", str(project / "langgraph.json"), "--write", "--contracts-dir", str(locks), cwd=root
    )
    assert written.returncode == 0, written.stderr
    with DevServer(project / "langgraph.json", project) as server:
        positions = asyncio.run(populate(server.url))
    assert len(positions["helpdesk_at_triage"]) == 2
    with DevServer(project / "langgraph.json", project) as server:
        yield Live(url=server.url, project=project, locks=locks, root=root)


def _check_parses(named: dict[str, str]) -> None:
    diagrams = {f"{name} #{i}": b for name, text in named.items() for i, b in enumerate(FENCE.findall(text))}
    errors = {name: error for name, error in parser.parse(diagrams).items() if error}
    assert not errors, errors


def test_gate_and_inflight_markdown_draw_the_live_threads(
    live: Live, tmp_path: Path, shadowed: Background[subprocess.CompletedProcess[str]]
) -> None:
    """(``shadowed``: the shadow test's run goes on in the background meanwhile.)"""
    candidate = make_variant(tmp_path, "candidate", HELPDESK_TRIAGE_RENAMED)
    gate = _playbook(
        "gate",
        "--live",
        live.url,
        "--candidate",
        str(candidate),
        "--live-contract",
        str(live.locks),
        "--format",
        "markdown",
        cwd=live.root,
    )
    inflight = _playbook("inflight", "--live", live.url, "--format", "markdown", cwd=live.root)
    assert gate.returncode == 1, gate.stderr
    assert inflight.returncode == 0, inflight.stderr

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
    assert len(FENCE.findall(gate.stdout)) == len(FENCE.findall(inflight.stdout)) == 3  # helpdesk, escalation, notes
    _check_parses({"gate": gate.stdout, "inflight": inflight.stdout})


@pytest.fixture(scope="module")
def shadowed(
    request: pytest.FixtureRequest, live: Live, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Background[subprocess.CompletedProcess[str]]]:
    """The shadow run starts in the background as the live server is up (mostly waiting on its three staging
    servers), while the gate and inflight test runs (tests/integration/background.py)."""
    root = tmp_path_factory.mktemp("shadow-candidate")
    yield from ahead(request, {"test_shadow_markdown_draws_the_live_threads": lambda: _shadow_markdown(live, root)})


def test_shadow_markdown_draws_the_live_threads(shadowed: Background[subprocess.CompletedProcess[str]]) -> None:
    """The shadow (three staging copies of the live folder) draws the same live topology and counts."""
    shadow = shadowed.result("test_shadow_markdown_draws_the_live_threads")
    assert shadow.returncode == 0, shadow.stdout + shadow.stderr
    assert shadow.stdout.startswith("**Shadow verdict: pass**")
    assert 'n_triage["triage<br>2 interrupted"]' in _block(shadow.stdout, "n_triage")
    assert 'n_review__confirm["confirm<br>1 interrupted"]' in _block(shadow.stdout, "sg_review")
    _check_parses({"shadow": shadow.stdout})


def _shadow_markdown(live: Live, root: Path) -> subprocess.CompletedProcess[str]:
    candidate = make_variant(root, "candidate", SAFE["add-notrequired-field"])
    return _playbook(
        "shadow",
        "--live",
        live.url,
        "--persistence",
        str(live.project),
        "--live-code",
        str(live.project),
        "--candidate",
        str(candidate),
        "--format",
        "markdown",
        cwd=live.root,
    )
