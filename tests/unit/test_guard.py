"""The runtime guard's own logic, off the server: which code a thread ran, what it refuses.

The guard against a real `langgraph dev` (a deploy without the gate, 409s, threads
unchanged) is tests/integration/test_runtime_guard_server.py; here the same
`Guard.check` runs with a stand-in client that answers what the server's in-process
client answers, shaped as recorded from it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from migrations_playbook.graphcode.candidate import load_compiled
from migrations_playbook.graphcode.contract import contract_hash, write
from migrations_playbook.graphcode.describe import contract_of
from migrations_playbook.guard import CONTRACT_KEY, Guard, guard_enabled
from migrations_playbook.model import Topology
from tests.fixtures.gate_projects.variants import HELPDESK_TRIAGE_RENAMED, V1, make_variant


class RecordedClient:
    """Stand-in for the in-process `langgraph_sdk` client: answers one thread's state and runs."""

    def __init__(self, state: dict[str, Any], runs: list[dict[str, Any]] | None = None) -> None:
        self.threads = self
        self.runs = self
        self._state, self._runs = state, runs or []
        self.calls: list[str] = []

    async def get_state(self, thread_id: str, subgraphs: bool = False) -> dict[str, Any]:
        self.calls.append("get_state")
        return self._state

    async def list(self, thread_id: str, limit: int = 10) -> list[dict[str, Any]]:
        self.calls.append("runs.list")
        return self._runs[:limit]

    async def update(self, thread_id: str, metadata: dict[str, Any]) -> dict[str, Any]:
        self.calls.append(f"update {sorted(metadata.items())}")
        return {}


@pytest.fixture
def deployed(tmp_path: Path) -> tuple[Guard, str, str]:
    """v1's lock kept in the history; the running code is v1 with `triage` renamed."""
    contracts = tmp_path / "contracts"
    v1 = {gid: contract_of(gid, g) for gid, g in load_compiled(V1 / "langgraph.json", ["helpdesk"]).items()}
    write(v1, contracts)
    candidate = make_variant(tmp_path, "v2", HELPDESK_TRIAGE_RENAMED)
    v2 = {gid: contract_of(gid, g) for gid, g in load_compiled(candidate, ["helpdesk"]).items()}
    write(v2, contracts)
    return Guard.from_config(candidate, contracts), contract_hash(v1["helpdesk"]), contract_hash(v2["helpdesk"])


THREAD = {
    "thread_id": "t-1",
    "status": "interrupted",
    "values": {"request": "r"},
    "interrupts": {"task-of-triage": [{"id": "i", "value": {"kind": "plan_approval"}}]},
    "metadata": {},
}


def _state(stamp: str | None) -> dict[str, Any]:
    # What the server running the renamed code answers: it no longer schedules `triage`.
    return {"values": {"request": "r"}, "next": [], "tasks": [], "metadata": {CONTRACT_KEY: stamp} if stamp else {}}


async def test_a_thread_stamped_with_the_running_code_costs_one_state_read(deployed) -> None:
    guard, _, current = deployed
    client = RecordedClient(_state(current))
    assert await guard.check(client, graph_id="helpdesk", thread=THREAD) is None
    assert client.calls == ["get_state"]


async def test_a_thread_admitted_under_the_running_code_costs_no_read_and_an_admitted_one_is_stamped(deployed) -> None:
    guard, _, current = deployed
    client = RecordedClient(_state(current))
    assert await guard.check(client, graph_id="helpdesk", thread={**THREAD, "metadata": {CONTRACT_KEY: current}}) is None
    assert client.calls == []
    assert await guard.check(client, graph_id="helpdesk", thread=THREAD, stamp=True) is None
    assert client.calls == ["get_state", f"update {[(CONTRACT_KEY, current)]}"]


async def test_a_refused_thread_is_not_stamped(deployed) -> None:
    guard, old, _ = deployed
    client = RecordedClient(_state(old))
    assert await guard.check(client, graph_id="helpdesk", thread=THREAD, stamp=True) is not None
    assert not any(call.startswith("update") for call in client.calls)


async def test_a_paused_node_the_running_code_lost_is_refused_naming_it_from_the_old_lock(deployed) -> None:
    guard, old, _ = deployed
    refusal = await guard.check(RecordedClient(_state(old)), graph_id="helpdesk", thread=THREAD)
    assert refusal is not None
    assert refusal.findings[0].code == "NODE_MISSING" and refusal.findings[0].node == "triage"
    assert "t-1" in refusal.message and "playbook migrate" in refusal.message and "lock history" not in refusal.message


async def test_an_unstamped_checkpoint_falls_back_to_the_last_runs_stamp(deployed) -> None:
    guard, old, _ = deployed
    client = RecordedClient(_state(None), runs=[{"metadata": {CONTRACT_KEY: old}}])
    refusal = await guard.check(client, graph_id="helpdesk", thread=THREAD)
    assert refusal is not None and "runs.list" in client.calls
    assert "lock history" not in refusal.message  # the old lock was found


async def test_a_missing_lock_is_said_in_the_refusal(deployed) -> None:
    guard, _, _ = deployed
    refusal = await guard.check(RecordedClient(_state("sha256:0000000000000000")), graph_id="helpdesk", thread=THREAD)
    assert refusal is not None and "is not in the lock history" in refusal.message


async def test_a_thread_with_nothing_stored_is_never_read(deployed) -> None:
    guard, _, _ = deployed
    client = RecordedClient(_state(None))
    fresh = {"thread_id": "t-new", "status": "idle", "values": None, "interrupts": {}, "metadata": {}}
    assert await guard.check(client, graph_id="helpdesk", thread=fresh) is None
    assert client.calls == []


def test_topology_from_a_lock_keeps_conditional_edges() -> None:
    lock = {"nodes": ["a", "b"], "edges": ["__start__ -> a", "a -?-> b", "b -> __end__"]}
    topology = Topology.from_lock(lock)
    assert ("a", "b", True) in topology.edges and ("__start__", "a", False) in topology.edges
    assert topology.nodes == frozenset({"a", "b", "__start__", "__end__"})


@pytest.mark.parametrize(("value", "enabled"), [(None, True), ("on", True), ("off", False), ("0", False), ("FALSE", False)])
def test_the_guard_is_on_unless_turned_off(value: str | None, enabled: bool) -> None:
    assert guard_enabled({} if value is None else {"PLAYBOOK_GUARD": value}) is enabled


def test_every_written_lock_is_kept_in_the_history(tmp_path: Path) -> None:
    contracts = tmp_path / "contracts"
    lock = {"graph_id": "g", "nodes": ["a"], "edges": []}
    (digest,) = [d for _, d, _ in write({"g": lock}, contracts)]
    write({"g": {**lock, "nodes": ["b"]}}, contracts)
    kept = contracts / "history" / "g" / f"{digest.replace(':', '-')}.json"
    assert json.loads(kept.read_text())["nodes"] == ["a"]
