"""Stale live locks refused by the runtime guard's stamps (issue 25, honest inputs) on a real `langgraph dev`.

tests/fixtures/guard_project installs the guard (its runs are stamped with the running code's contract
hash) but serves no contract route, so the gate cannot ask the deployment which code it runs. Tickets are
paused on v1; the candidate renames `triage` in the wiring. Locks rewritten from the candidate (what a
`contract --write` after the edit gives) would compare the candidate with itself and pass: the gate must
refuse them (exit 2), naming the code the stamps say ran the threads, and must take the deployed code's
locks as before.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import pytest
from langgraph_sdk import get_client

from migrations_playbook.staging.server import DevServer
from tests.conftest import REPO_ROOT
from tests.integration.test_guard_identity_server import RENAME_IN_WIRING
from tests.playbook_cli import playbook

PROJECT = REPO_ROOT / "tests" / "fixtures" / "guard_project"


@dataclass(frozen=True)
class Live:
    url: str
    deployed_locks: Path
    candidate: Path
    candidate_locks: Path
    stamp: str


_playbook = partial(playbook, timeout=300)


def _locks(config: Path, folder: Path) -> None:
    done = _playbook(
        "contract", "--config", str(config), "--write", "--contracts-dir", str(folder), "--records-dir", str(folder / "r")
    )
    assert done.returncode == 0, done.stdout + done.stderr


async def _pause(url: str) -> str:
    client = get_client(url=url)
    try:
        thread = await client.threads.create()
        await client.runs.wait(thread["thread_id"], "desk", input={"request": "refund"})
        state = await client.threads.get_state(thread["thread_id"])
        return str(state["metadata"]["playbook_contract"])
    finally:
        await client.aclose()


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    root = tmp_path_factory.mktemp("stamped-locks")
    project = root / "deployed"
    shutil.copytree(PROJECT, project, ignore=shutil.ignore_patterns("__pycache__"))
    _locks(project / "langgraph.json", project / "contracts")  # the guard's lock history
    candidate = root / "candidate"
    shutil.copytree(project, candidate, ignore=shutil.ignore_patterns("__pycache__", "contracts"))
    desk = candidate / "desk.py"
    text = desk.read_text()
    for old, new in RENAME_IN_WIRING:
        assert old in text, f"fixture drift: {old!r} not in desk.py"
        text = text.replace(old, new)
    desk.write_text(text)
    _locks(candidate / "langgraph.json", root / "candidate-locks")
    with DevServer(project / "langgraph.json", project) as server:
        stamp = asyncio.run(_pause(server.url))
        yield Live(server.url, project / "contracts", candidate / "langgraph.json", root / "candidate-locks", stamp)


def test_the_candidates_own_locks_are_refused_by_the_stamps(live: Live) -> None:
    done = _playbook("gate", "--live", live.url, "--candidate", str(live.candidate), "--live-contract", str(live.candidate_locks))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "candidate's own" in done.stderr and live.stamp in done.stderr and "stamps" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_the_deployed_codes_locks_are_taken_and_the_rename_blocked(live: Live) -> None:
    done = _playbook(
        "gate",
        "--live",
        live.url,
        "--candidate",
        str(live.candidate),
        "--live-contract",
        str(live.deployed_locks),
        "--format",
        "json",
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert '"NODE_MISSING"' in done.stdout
