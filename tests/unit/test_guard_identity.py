"""The runtime guard's view of the running code: what the running graphs are, not what a file says.

A deploy whose code changed but whose committed lock was not rewritten (a hotfix, a
skipped CI step) must not look unchanged: the guard describes the running graphs once
per process, stamps runs with that identity, logs that the lock is stale, and judges
threads with it. A thread stamped with an identity whose lock is not in the lock
history (what a stale-lock deploy stamps) is refused unless ``PLAYBOOK_GUARD_UNKNOWN=admit``.

The same on a real `langgraph dev`: tests/integration/test_guard_identity_server.py.
"""

from __future__ import annotations

import asyncio
import json
import logging
import shutil
import threading
from pathlib import Path
from typing import Any

import pytest

from migrations_playbook.graphcode.candidate import load_compiled
from migrations_playbook.graphcode.contract import contract_hash, strip_lock, write
from migrations_playbook.graphcode.describe import contract_of
from migrations_playbook.guard import CONTRACT_KEY, Guard
from server.guarding import CONTRACTS, GRAPHS
from tests.conftest import REPO_ROOT
from tests.unit.test_guard import RecordedClient

PROJECT = REPO_ROOT / "tests" / "fixtures" / "guard_project"

RENAME_IN_WIRING = [
    ('builder.add_node("triage", triage)', 'builder.add_node("assess", triage)'),
    ('builder.add_edge("intake", "triage")', 'builder.add_edge("intake", "assess")'),
    ('builder.add_edge("triage", "respond")', 'builder.add_edge("assess", "respond")'),
]


class Stale:
    """guard_project with its locks written for v1, then `triage` renamed in desk.py's wiring only."""

    def __init__(self, root: Path) -> None:
        self.folder = root / "project"
        shutil.copytree(PROJECT, self.folder, ignore=shutil.ignore_patterns("__pycache__"))
        self.config = self.folder / "langgraph.json"
        self.contracts = self.folder / "contracts"
        v1 = {gid: contract_of(gid, g) for gid, g in load_compiled(self.config).items()}
        write(v1, self.contracts)
        self.locked = contract_hash(v1["desk"])
        desk = self.folder / "desk.py"
        text = desk.read_text()
        for old, new in RENAME_IN_WIRING:
            assert old in text, f"fixture drift: {old!r} not in desk.py"
            text = text.replace(old, new)
        desk.write_text(text)
        self.running = contract_hash(contract_of("desk", load_compiled(self.config, ["desk"])["desk"]))
        assert self.running != self.locked
        assert contract_hash(strip_lock(json.loads((self.contracts / "desk.json").read_text()))) == self.locked

    def guard(self) -> Guard:
        return Guard.from_config(self.config, self.contracts)


@pytest.fixture
def stale(tmp_path: Path) -> Stale:
    return Stale(tmp_path)


def _paused_at_triage(stamp: str | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """A ticket paused at `triage` under v1, as the server running the renamed code answers it."""
    thread = {
        "thread_id": "t-paused",
        "status": "interrupted",
        "values": {"request": "refund"},
        "interrupts": {"task-of-triage": [{"id": "i-1", "value": {"kind": "approval", "request": "refund"}}]},
        "metadata": {},
    }
    state = {"values": {"request": "refund"}, "next": [], "tasks": [], "metadata": {CONTRACT_KEY: stamp} if stamp else {}}
    return thread, state


def _idle(stamp: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A finished ticket: nothing the running code alone could object to."""
    values = {"request": "reset", "decision": "yes", "response": "reset: yes"}
    thread = {"thread_id": "t-idle", "status": "idle", "values": values, "interrupts": {}, "metadata": {}}
    return thread, {"values": values, "next": [], "tasks": [], "metadata": {CONTRACT_KEY: stamp}}


def _stale_warnings(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.levelno == logging.WARNING and "playbook contract --write" in r.getMessage()]


async def test_runs_are_stamped_with_the_running_code_not_the_stale_lock(stale: Stale) -> None:
    guard = stale.guard()
    assert await guard.metadata_for("desk") == {CONTRACT_KEY: stale.running}
    assert (await guard.current_hashes())["desk"] == stale.running
    # A thread stamped by this very code costs no read at all.
    thread, state = _paused_at_triage(stale.running)
    client = RecordedClient(state)
    assert await guard.check(client, graph_id="desk", thread={**thread, "metadata": {CONTRACT_KEY: stale.running}}) is None
    assert client.calls == []


async def test_a_stale_lock_is_logged_once_naming_the_graph_both_hashes_and_the_fix(
    stale: Stale, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="migrations_playbook.guard")
    guard = stale.guard()
    await asyncio.gather(*(guard.metadata_for("desk") for _ in range(4)))
    thread, state = _paused_at_triage(stale.locked)
    await guard.check(RecordedClient(state), graph_id="desk", thread=thread)
    await guard.metadata_for("desk")
    (warning,) = _stale_warnings(caplog)
    text = warning.getMessage()
    assert "desk" in text and stale.locked in text and stale.running in text and "stale" in text
    # The graphs whose code and lock agree say nothing.
    assert await guard.metadata_for("orders") == {
        CONTRACT_KEY: contract_hash(strip_lock(json.loads((stale.contracts / "orders.json").read_text())))
    }
    assert len(_stale_warnings(caplog)) == 1


async def test_a_ticket_paused_under_the_locked_code_is_refused_naming_the_lost_node(stale: Stale) -> None:
    """The report: a resume, or a new message, on a paused ticket after the rename with the lock left as it was."""
    guard = stale.guard()
    thread, state = _paused_at_triage(stale.locked)
    client = RecordedClient(state)
    refusal = await guard.check(client, graph_id="desk", thread=thread, stamp=True)
    assert refusal is not None
    assert (refusal.findings[0].code, refusal.findings[0].node) == ("NODE_MISSING", "triage")
    assert "t-paused" in refusal.message and "playbook migrate" in refusal.message
    assert "lock history" not in refusal.message  # the locked code's lock is the committed one: found
    assert not any(call.startswith("update") for call in client.calls)  # refused: not stamped


async def test_the_running_code_is_described_once_per_process_off_the_event_loop(tmp_path: Path) -> None:
    stale = Stale(tmp_path)
    compiled = load_compiled(stale.config, ["desk"])["desk"]
    loads: list[threading.Thread] = []

    def load() -> Any:
        loads.append(threading.current_thread())
        return compiled

    guard = Guard({"desk": load}, stale.contracts)
    stamps = await asyncio.gather(*(guard.metadata_for("desk") for _ in range(5)))
    assert stamps == [{CONTRACT_KEY: stale.running}] * 5
    thread, state = _paused_at_triage(stale.locked)
    assert await guard.check(RecordedClient(state), graph_id="desk", thread=thread) is not None
    await guard.candidate("desk")
    assert len(loads) == 1
    assert loads[0] is not threading.main_thread()


async def test_an_identity_missing_from_the_lock_history_is_refused_by_default(
    stale: Stale, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a stale-lock deploy stamps: the guard cannot know that code's shape, so it refuses."""
    monkeypatch.delenv("PLAYBOOK_GUARD_UNKNOWN", raising=False)
    unknown = "sha256:feedfeedfeedfeed"
    thread, state = _idle(unknown)
    client = RecordedClient(state)
    refusal = await stale.guard().check(client, graph_id="desk", thread=thread, stamp=True)
    assert refusal is not None and refusal.findings[0].code == "LOCK_UNKNOWN"
    message = refusal.message
    assert "t-idle" in message and unknown in message and "lock history" in message
    assert "playbook contract --write" in message and "PLAYBOOK_GUARD_UNKNOWN=admit" in message
    assert not any(call.startswith("update") for call in client.calls)


async def test_an_unknown_identity_is_judged_with_the_running_code_alone_when_admitted(
    stale: Stale, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("PLAYBOOK_GUARD_UNKNOWN", "admit")
    caplog.set_level(logging.WARNING, logger="migrations_playbook.guard")
    unknown = "sha256:feedfeedfeedfeed"
    guard = stale.guard()
    thread, state = _idle(unknown)
    assert await guard.check(RecordedClient(state), graph_id="desk", thread=thread) is None
    admitted = [r.getMessage() for r in caplog.records if "t-idle" in r.getMessage()]
    assert admitted and unknown in admitted[0] and "not in the lock history" in admitted[0]
    # Admitting means judging without the old lock, not looking away: a lost step still refuses.
    thread, state = _paused_at_triage(unknown)
    refusal = await guard.check(RecordedClient(state), graph_id="desk", thread=thread)
    assert refusal is not None and refusal.findings[0].code == "NODE_MISSING"
    assert "is not in the lock history" in refusal.message


@pytest.mark.parametrize(("value", "policy"), [(None, "refuse"), ("admit", "admit"), ("REFUSE", "refuse"), ("bogus", "refuse")])
def test_the_unknown_identity_setting_defaults_to_refuse(value: str | None, policy: str) -> None:
    from migrations_playbook.guard import unknown_policy

    assert unknown_policy({} if value is None else {"PLAYBOOK_GUARD_UNKNOWN": value}) == policy


async def test_the_deployment_guard_reads_its_own_graphs_and_sees_a_stale_lock(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """This repo's guard (server/guarding.py): the running graphs' identity is the committed
    lock's hash when the two agree, and a lock that no longer matches the code is seen."""
    caplog.set_level(logging.WARNING, logger="migrations_playbook.guard")
    contracts = tmp_path / "contracts"
    shutil.copytree(CONTRACTS, contracts)
    committed = contract_hash(strip_lock(json.loads((contracts / "ticket_triage.json").read_text())))
    lock = json.loads((contracts / "ticket_triage.json").read_text())
    lock["nodes"] = sorted({*lock["nodes"], "escalate_legacy"})  # the code changed (a node gone), the lock did not
    (contracts / "ticket_triage.json").write_text(json.dumps(lock, indent=2) + "\n")
    guard = Guard(GRAPHS, contracts)
    assert await guard.metadata_for("ticket_triage") == {CONTRACT_KEY: committed}
    (warning,) = _stale_warnings(caplog)
    assert "ticket_triage" in warning.getMessage() and committed in warning.getMessage()
