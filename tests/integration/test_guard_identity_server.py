"""The runtime guard on a real `langgraph dev` after a deploy that forgot the lock (issue 25).

tests/fixtures/guard_project (its auth installs `migrations_playbook.guard` through
`Guard.from_config`) is served with its locks written, tickets are left paused at
`triage`, the server stops, `triage` is renamed in the wiring only with the committed
lock left as it was (a hotfix, a skipped CI step), and the same folder is served again.
The guard must see the running code, not the file: the typed resume and a new message
on a paused ticket are refused with its 409 naming the lost node, nothing on the
thread changes, the stale lock is logged once, and new runs carry the real identity.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_client

from migrations_playbook.graphcode.contract import contract_hash, strip_lock
from migrations_playbook.staging.server import DevServer
from tests.conftest import REPO_ROOT

PROJECT = REPO_ROOT / "tests" / "fixtures" / "guard_project"

RENAME_IN_WIRING = [
    ('builder.add_node("triage", triage)', 'builder.add_node("assess", triage)'),
    ('builder.add_edge("intake", "triage")', 'builder.add_edge("intake", "assess")'),
    ('builder.add_edge("triage", "respond")', 'builder.add_edge("assess", "respond")'),
]


@dataclass
class Restarted:
    url: str
    log: Path
    locked: str
    """The committed lock's hash for `desk` (the code that paused the tickets)."""
    stamped: dict[str, str]
    """ticket -> the contract hash its paused checkpoint was stamped with."""
    tickets: dict[str, str]
    """ticket -> thread id."""


async def _pause_tickets(url: str) -> tuple[dict[str, str], dict[str, str]]:
    client = get_client(url=url)
    tickets, stamped = {}, {}
    for name, request in (("to_resume", "refund"), ("to_message", "reset")):
        thread = await client.threads.create()
        await client.runs.wait(thread["thread_id"], "desk", input={"request": request})
        state = await client.threads.get_state(thread["thread_id"])
        assert state["next"] == ["triage"], state
        tickets[name] = thread["thread_id"]
        stamped[name] = state["metadata"]["playbook_contract"]
    await client.aclose()
    return tickets, stamped


@pytest.fixture(scope="module")
def restarted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Restarted]:
    root = tmp_path_factory.mktemp("stale-lock")
    project = root / "project"
    shutil.copytree(PROJECT, project, ignore=shutil.ignore_patterns("__pycache__"))
    written = subprocess.run(
        [
            *(sys.executable, "-m", "migrations_playbook", "contract", "--config", str(project / "langgraph.json")),
            *("--write", "--contracts-dir", str(project / "contracts"), "--records-dir", str(root / "records")),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert written.returncode == 0, written.stdout + written.stderr
    locked = contract_hash(strip_lock(json.loads((project / "contracts" / "desk.json").read_text())))
    with DevServer(project / "langgraph.json", project) as server:
        tickets, stamped = asyncio.run(_pause_tickets(server.url))
    desk = project / "desk.py"
    text = desk.read_text()
    for old, new in RENAME_IN_WIRING:
        assert old in text, f"fixture drift: {old!r} not in desk.py"
        text = text.replace(old, new)
    desk.write_text(text)  # the lock is left as it was
    with DevServer(project / "langgraph.json", project) as server:
        yield Restarted(url=server.url, log=server.log_path, locked=locked, stamped=stamped, tickets=tickets)


def _post_run(url: str, thread_id: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(f"{url}/threads/{thread_id}/runs/wait", json={"assistant_id": "desk", **body}, timeout=60)


def _thread_record(url: str, thread_id: str) -> tuple[Any, Any, Any]:
    thread = httpx.get(f"{url}/threads/{thread_id}", timeout=30).json()
    state = httpx.get(f"{url}/threads/{thread_id}/state", timeout=30).json()
    history = httpx.post(f"{url}/threads/{thread_id}/history", json={"limit": 50}, timeout=30).json()
    return {k: thread.get(k) for k in ("status", "values", "metadata", "interrupts")}, state, history


@pytest.mark.parametrize(
    ("ticket", "body"),
    [
        pytest.param("to_resume", {"command": {"resume": "yes"}}, id="typed-resume"),
        pytest.param("to_message", {"input": {"request": "any news?"}}, id="new-message"),
    ],
)
def test_a_paused_ticket_is_refused_after_a_rename_the_lock_does_not_show(
    restarted: Restarted, ticket: str, body: dict[str, Any]
) -> None:
    thread_id = restarted.tickets[ticket]
    assert restarted.stamped[ticket] == restarted.locked  # code and lock agreed: one hash
    before = _thread_record(restarted.url, thread_id)
    response = _post_run(restarted.url, thread_id, body)
    assert response.status_code == 409, response.text
    detail = response.json()["detail"]
    assert thread_id in detail and "NODE_MISSING" in detail and "node 'triage'" in detail, detail
    assert "playbook migrate" in detail and "Nothing on the thread changed" in detail
    assert _thread_record(restarted.url, thread_id) == before


def test_the_stale_lock_is_logged_once_and_new_runs_carry_the_running_code(restarted: Restarted) -> None:
    thread = httpx.post(f"{restarted.url}/threads", json={}, timeout=30).json()
    response = _post_run(restarted.url, thread["thread_id"], {"input": {"request": "new ticket"}})
    assert response.status_code == 200, response.text
    state = httpx.get(f"{restarted.url}/threads/{thread['thread_id']}/state", timeout=30).json()
    stamp = state["metadata"]["playbook_contract"]
    assert stamp.startswith("sha256:") and stamp != restarted.locked
    assert state["next"] == ["assess"]
    log = restarted.log.read_text()
    stale = [line for line in log.splitlines() if "playbook contract --write" in line and "'desk'" in line]
    assert len(stale) == 1, log[-3000:]
    assert restarted.locked in stale[0] and stamp in stale[0]
