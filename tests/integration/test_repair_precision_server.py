"""A value-only repair on real `langgraph dev` servers: proved, applied, and then seen as repaired (issue 25).

The candidate (`VALUES_CANDIDATE_EDITS`) keeps the paused node `triage` and changes only values
(`response` renamed `reply`, a new key `summary`, `priority` narrowed); the plan
(`0009-helpdesk-values.plan.json`) has value steps only (`rename_key`, `set_default`, `transform`,
`python`). `update_state` on a thread paused at `triage` re-schedules `triage` under a new task id,
while Agent Server's thread record keeps the old interrupt (and, for every thread, the values of
the checkpoint the update started from). Nothing is lost: the serving code still has `triage`.

* **live**: v1 with the threads; `replay --plan` proves the plan on a staging copy;
* **rolled out**: a copy of the same threads served with the candidate: `migrate --apply`, then
  the gate and the runtime guard on the repaired threads, then a resume.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk import get_client

from migrations_playbook.cli import main
from migrations_playbook.staging.live_copy import absolute_config
from migrations_playbook.staging.server import DevServer
from tests.conftest import REPO_ROOT
from tests.fixtures.gate_projects.variants import V1, make_variant, populate
from tests.fixtures.migrate_plans import VALUES_CANDIDATE_EDITS, VALUES_MIGRATION, VALUES_PLAN


def _cli(*argv: str) -> tuple[int, dict[str, Any], str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    assert "Traceback" not in err.getvalue(), err.getvalue()
    return code, json.loads(out.getvalue()) if code in (0, 1) else {}, err.getvalue()


@dataclass
class World:
    root: Path
    project: Path
    rolled_out: Path
    locks: Path
    candidate: Path
    threads: dict[str, list[str]]

    @property
    def paused(self) -> list[str]:
        return self.threads["helpdesk_at_triage"]

    @property
    def idle(self) -> str:
        (thread_id,) = self.threads["helpdesk_idle"]
        return thread_id


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    root = tmp_path_factory.mktemp("repair-precision")
    project = root / "v1"
    shutil.copytree(V1, project)
    locks = root / "v1-locks"
    written = subprocess.run(
        [sys.executable, "-m", "migrations_playbook", "contract", "--config", str(project / "langgraph.json"), "--write",
         "--contracts-dir", str(locks)],
        capture_output=True, text=True, timeout=300, cwd=REPO_ROOT,
    )  # fmt: skip
    assert written.returncode == 0, written.stderr
    with DevServer(project / "langgraph.json", project) as server:
        threads = asyncio.run(populate(server.url))
    rolled_out = root / "rolled-out"
    shutil.copytree(project / ".langgraph_api", rolled_out / ".langgraph_api")
    candidate = make_variant(root, "candidate", VALUES_CANDIDATE_EDITS)
    return World(root, project, rolled_out, locks, candidate, threads)


def test_replay_with_a_value_only_plan_proves_the_paused_threads_and_the_gate_after_it_passes(world: World) -> None:
    with DevServer(world.project / "langgraph.json", world.project) as live:
        code, report, stderr = _cli(
            "replay", "--live", live.url, "--candidate", str(world.candidate), "--persistence", str(world.project),
            "--format", "json", "--resume", '"approved"', "--plan", str(VALUES_PLAN), "--live-contract", str(world.locks),
        )  # fmt: skip
    paused = len(world.paused)
    assert any(f"{paused} of {paused} resumed proven" in n for n in report["notes"]), report["notes"]
    assert "the gate on staging after the plan: PASS" in report["notes"], report["notes"]
    assert not [f for f in report["findings"] if f["severity"] == "block"], report["findings"]
    assert (code, report["verdict"]) == (0, "pass"), stderr


@dataclass
class Applied:
    apply: tuple[int, dict[str, Any]]
    gate_after: tuple[int, dict[str, Any]]
    guard_after: dict[str, Any]
    """thread id -> the runtime guard's refusal (None: admitted), for each repaired paused thread."""
    states: dict[str, dict[str, Any]]
    resumed: dict[str, dict[str, Any]]


async def _guard(url: str, world: World, thread_ids: list[str]) -> dict[str, Any]:
    from migrations_playbook.guard import Guard

    guard = Guard.from_config(world.candidate, world.locks)
    client = get_client(url=url)
    try:
        return {t: await guard.check(client, graph_id="helpdesk", thread=dict(await client.threads.get(t))) for t in thread_ids}
    finally:
        await client.aclose()


async def _states(url: str, thread_ids: list[str]) -> dict[str, dict[str, Any]]:
    client = get_client(url=url)
    try:
        return {t: dict(await client.threads.get_state(t)) for t in thread_ids}
    finally:
        await client.aclose()


async def _resume(url: str, thread_ids: list[str]) -> dict[str, dict[str, Any]]:
    client = get_client(url=url)
    try:
        return {t: dict(await client.runs.wait(t, "helpdesk", command={"resume": "approved"})) for t in thread_ids}  # type: ignore[arg-type]
    finally:
        await client.aclose()


@pytest.fixture(scope="module")
def applied(world: World):
    (world.rolled_out / "langgraph.json").write_text(json.dumps(absolute_config(world.candidate), indent=2))
    server = DevServer(world.rolled_out / "langgraph.json", world.rolled_out, env={"PYTHONPATH": str(world.candidate.parent)})
    with server:
        url = server.url
        code, report, _ = _cli(
            "migrate", "--live", url, "--candidate", str(world.candidate), "--plan", str(VALUES_PLAN),
            "--live-contract", str(world.locks), "--format", "json", "--apply",
        )  # fmt: skip
        gate_code, gate, _ = _cli(
            "gate", "--live", url, "--candidate", str(world.candidate), "--live-contract", str(world.locks),
            "--format", "json", "--no-progress",
        )  # fmt: skip
        guard_after = asyncio.run(_guard(url, world, world.paused))
        states = asyncio.run(_states(url, [*world.paused, world.idle]))
        resumed = asyncio.run(_resume(url, world.paused))
        yield Applied((code, report), (gate_code, gate), guard_after, states, resumed)


def _blocked_ids(report: dict[str, Any]) -> set[str]:
    return {t for f in report["findings"] if f["severity"] == "block" for t in f["thread_ids"]}


def test_a_value_only_apply_on_paused_threads_exits_0_and_its_gate_after_passes(applied: Applied, world: World) -> None:
    code, report = applied.apply
    changed = {t["thread_id"] for t in report["threads"] if t["action"] == "changed"}
    assert changed >= {*world.paused, world.idle}
    assert report["gate_before"]["verdict"] == "block"
    blocks = [f for f in report["gate_after"]["findings"] if f["severity"] == "block"]
    assert not blocks, blocks
    assert (code, report["gate_after"]["verdict"]) == (0, "pass")
    for thread_id in world.paused:  # the same node, asked again under a new task id
        state = applied.states[thread_id]
        assert state["next"] == ["triage"] and state["metadata"]["playbook_migration"] == VALUES_MIGRATION


def test_the_gate_after_a_value_only_apply_blocks_none_of_the_repaired_threads(applied: Applied, world: World) -> None:
    code, report = applied.gate_after
    assert not [f for f in report["findings"] if f["code"] == "NODE_MISSING"], report["findings"]
    assert not _blocked_ids(report) & {*world.paused, world.idle}, report["findings"]
    assert (code, report["verdict"]) == (0, "pass")


def test_an_idle_thread_repaired_by_apply_is_not_blocked_by_the_gate_afterwards(applied: Applied, world: World) -> None:
    """The thread record still holds the values the update started from; the state holds the repair."""
    idle = applied.states[world.idle]["values"]
    assert (idle.get("reply"), idle.get("priority"), "response" in idle) == ("done: reset my password", "low", False)
    _, report = applied.gate_after
    assert world.idle not in _blocked_ids(report), report["findings"]


def test_the_runtime_guard_admits_the_repaired_paused_threads(applied: Applied, world: World) -> None:
    refused = {t: [f.code for f in r.findings] for t, r in applied.guard_after.items() if r is not None}
    assert refused == {}


def test_the_repaired_threads_resume_at_the_same_node(applied: Applied, world: World) -> None:
    for thread_id, values in applied.resumed.items():
        assert "triage:approved" in values["notes"], (thread_id, values)
        assert values["reply"].startswith("done: ")
