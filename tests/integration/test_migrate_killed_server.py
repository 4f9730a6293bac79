"""`playbook migrate --apply` killed at any moment over many threads, on a real `langgraph dev`.

A small project (one graph, ``tiers``) with 30 idle threads; the plan gives every thread a new key
(``set_default tier``, ``select: all``). The server runs the code the plan targets, so ``--apply`` writes
through it (Agent Server: one checkpoint per thread, then the thread record's stamp).

* The window between the two writes, made exactly: a thread whose checkpoint an earlier run wrote and
  whose record it never stamped (the journal's last line for it says ``writing``). The dry run names it,
  a second ``--apply`` finishes it (the record stamped, so the gate reads its repaired state).
* ``--apply`` run as a subprocess and SIGKILLed after it announced its Nth thread in its journal, three
  times: after each kill every thread is untouched or carries the migration's checkpoint, and every
  thread the kill left half-written is reported by the next run; then one ``--apply`` finishes the job
  (exit 0), and ``--rollback`` (itself killed once, then rerun) restores every thread's values and
  ``next`` as they were before any of it.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk import get_client

from migrations_playbook.cli import main
from migrations_playbook.repair.journal import Journal, journal_path
from migrations_playbook.sources.api.state import MIGRATED_STATE_KEY
from migrations_playbook.sources.repair_model import BASE_KEY, MIGRATION_KEY
from migrations_playbook.staging.server import DevServer

MIGRATION = "0200-tier"
THREADS = 30

PROJECT = {
    "langgraph.json": json.dumps({"dependencies": ["."], "graphs": {"tiers": "./tiers.py:graph"}}),
    "tiers.py": '''"""One node; the migration adds `tier` to every thread."""

from typing import NotRequired

from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict


class State(TypedDict):
    name: str
    greeting: NotRequired[str]
    tier: NotRequired[str]


def greet(state: State) -> dict:
    return {"greeting": f"hello, {state['name']}"}


builder = StateGraph(State)
builder.add_node("greet", greet)
builder.add_edge(START, "greet")
builder.add_edge("greet", END)
graph = builder.compile()
''',
}
PLAN = {
    "plan_version": 1,
    "migration": MIGRATION,
    "graphs": ["tiers"],
    "steps": [{"op": "set_default", "key": "tier", "value": "basic", "select": "all"}],
}


@dataclass
class World:
    url: str
    workdir: Path
    """``XDG_STATE_HOME`` of `playbook migrate` (its journal is under playbook/migrate/ here)."""
    config: Path
    plan: Path
    locks: Path
    before: dict[str, dict[str, Any]]
    """thread id -> its state before any migration."""

    def argv(self, *mode: str) -> list[str]:
        return [
            "migrate",
            "--live",
            self.url,
            "--candidate",
            str(self.config),
            "--plan",
            str(self.plan),
            "--live-contract",
            str(self.locks),
            "--format",
            "json",
            *mode,
        ]

    @property
    def journal(self) -> Path:
        return journal_path(MIGRATION, self.url, root=self.workdir / "playbook" / "migrate")


async def _populate(url: str) -> dict[str, dict[str, Any]]:
    client = get_client(url=url)
    semaphore = asyncio.Semaphore(6)

    async def one(i: int) -> str:
        async with semaphore:
            thread = await client.threads.create()
            await client.runs.wait(thread["thread_id"], "tiers", input={"name": f"user-{i}"})
            return str(thread["thread_id"])

    ids = await asyncio.gather(*(one(i) for i in range(THREADS)))
    states = {tid: dict(await client.threads.get_state(tid)) for tid in ids}
    await client.aclose()
    return states


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    root = tmp_path_factory.mktemp("migrate-killed")
    project = root / "project"
    project.mkdir()
    for name, text in PROJECT.items():
        (project / name).write_text(text)
    locks = root / "locks"
    config = str(project / "langgraph.json")
    written = subprocess.run(
        [sys.executable, "-m", "migrations_playbook", "contract", "--write", "--contracts-dir", str(locks), "--config", config],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert written.returncode == 0, written.stderr
    plan = root / f"{MIGRATION}.plan.json"
    plan.write_text(json.dumps(PLAN))
    workdir = root / "ops"
    workdir.mkdir()
    with DevServer(project / "langgraph.json", project) as server:
        before = asyncio.run(_populate(server.url))
        yield World(server.url, workdir, project / "langgraph.json", plan, locks, before)


def _migrate(world: World, monkeypatch: pytest.MonkeyPatch, *mode: str) -> tuple[int, dict[str, Any]]:
    """``playbook migrate`` in-process, its journal in the world's state folder."""
    monkeypatch.setenv("XDG_STATE_HOME", str(world.workdir))
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(world.argv(*mode))
    assert "Traceback" not in err.getvalue()
    assert code in (0, 1), err.getvalue()
    return code, json.loads(out.getvalue())


async def _now(url: str) -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    """thread id -> (its state, its record), for every thread of the world."""
    client = get_client(url=url)
    try:
        threads = await client.threads.search(metadata={"graph_id": "tiers"}, limit=1000)
        ids = [str(t["thread_id"]) for t in threads]
        states = await asyncio.gather(*(client.threads.get_state(tid) for tid in ids))
        records = await asyncio.gather(*(client.threads.get(tid) for tid in ids))
        return {tid: (dict(s), dict(r)) for tid, s, r in zip(ids, states, records, strict=True)}
    finally:
        await client.aclose()


def _written(state: dict[str, Any]) -> bool:
    return (state.get("metadata") or {}).get(MIGRATION_KEY) == MIGRATION


def _record_stamped(record: dict[str, Any]) -> bool:
    at = record.get("state_updated_at")
    return (record.get("metadata") or {}).get(MIGRATED_STATE_KEY) == (str(at) if at else "unknown")


def _check_no_silent_half(world: World, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Every thread is untouched or carries the migration's checkpoint (values as the plan says); every thread
    whose record lacks its stamp, or that the journal says was being written, is named by the dry run."""
    now = asyncio.run(_now(world.url))
    assert set(now) == set(world.before)
    half = set()
    for tid, (state, record) in now.items():
        original = world.before[tid]
        if _written(state):
            assert state["values"] == {**original["values"], "tier": "basic"}, tid
            assert state["metadata"][BASE_KEY] == original["checkpoint"]["checkpoint_id"], tid
            if not _record_stamped(record):
                half.add(tid)
        else:
            assert state["checkpoint"]["checkpoint_id"] == original["checkpoint"]["checkpoint_id"], tid
            assert state["values"] == original["values"], tid
    previous = Journal(world.journal, MIGRATION).previous("apply")
    _, dry = _migrate(world, monkeypatch)
    actions = {t["thread_id"]: t for t in dry["threads"]}
    for tid, (state, _) in now.items():
        assert actions[tid]["action"] == ("already applied" if _written(state) else "would change"), actions[tid]
    for tid in half:
        assert "lacks the migration's stamp" in actions[tid]["reason"], actions[tid]
    for tid in previous.threads:
        assert "a previous --apply stopped while writing it" in actions[tid]["reason"], actions[tid]
    if not previous.empty:
        assert any("a previous --apply stopped before its end" in n for n in dry["notes"]), dry["notes"]
    return {tid: t["action"] for tid, t in actions.items()}


def test_a_thread_written_but_not_stamped_is_reported_and_the_next_apply_finishes_it(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Exactly the window a kill can hit: the checkpoint written (as `write_thread` writes it), the record's
    stamp not, and the journal's last line for the thread ``writing``."""
    tids = sorted(world.before)[:2]

    async def write_checkpoints() -> None:
        client = get_client(url=world.url)
        for tid in tids:
            head = world.before[tid]["checkpoint"]["checkpoint_id"]
            stamp = {"checkpoint_id": head, MIGRATION_KEY: MIGRATION, BASE_KEY: head}
            await client.threads.update_state(tid, {"tier": "basic"}, checkpoint=stamp)  # type: ignore[arg-type]
        await client.aclose()

    journal = Journal(world.journal, MIGRATION)
    journal.start("apply")
    for tid in tids:
        journal.writing("apply", tid, "tiers", world.before[tid]["checkpoint"]["checkpoint_id"])
    asyncio.run(write_checkpoints())
    # ... and here the run was killed.

    actions = _check_no_silent_half(world, monkeypatch)
    assert all(actions[tid] == "already applied" for tid in tids)

    code, applied = _migrate(world, monkeypatch, "--apply")
    assert code == 0, applied
    finished = {t["thread_id"]: t for t in applied["threads"]}
    for tid in tids:
        assert "stamped now" in finished[tid]["reason"], finished[tid]
    now = asyncio.run(_now(world.url))
    assert all(_written(s) and _record_stamped(r) for s, r in now.values())
    assert Journal(world.journal, MIGRATION).previous("apply").empty
    code, rolled = _migrate(world, monkeypatch, "--rollback", MIGRATION)
    assert code == 0, rolled
    _assert_restored(world)
    world.before.update({tid: state for tid, (state, _) in asyncio.run(_now(world.url)).items()})  # the heads now


def _assert_restored(world: World) -> None:
    for tid, (state, _) in asyncio.run(_now(world.url)).items():
        original = world.before[tid]
        assert state["values"] == original["values"], tid
        assert list(state["next"]) == list(original["next"]), tid


def _killed_after(world: World, mode: list[str], started: int) -> int:
    """Run ``migrate`` in a subprocess and SIGKILL it once its journal announces its ``started``-th thread;
    returns how many threads it had announced."""
    seen_before = _journal_lines(world, "writing")
    process = subprocess.Popen(
        [sys.executable, "-m", "migrations_playbook", *world.argv(*mode)],
        env={**os.environ, "XDG_STATE_HOME": str(world.workdir)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 240
    try:
        while time.monotonic() < deadline and process.poll() is None:
            announced = _journal_lines(world, "writing") - seen_before
            if announced >= started:
                os.kill(process.pid, signal.SIGKILL)
                break
            time.sleep(0.002)
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == -signal.SIGKILL, f"the run ended before its {started}th thread: {process.stderr.read()}"
    return _journal_lines(world, "writing") - seen_before


def _journal_lines(world: World, event: str) -> int:
    try:
        text = world.journal.read_text()
    except FileNotFoundError:
        return 0
    count = 0
    for line in text.splitlines():
        with contextlib.suppress(ValueError):
            count += json.loads(line).get("event") == event
    return count


def test_apply_killed_at_several_points_is_reported_finished_by_a_second_apply_and_rolled_back(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    for started in (1, 9, 9):  # the first thread; then nine more, twice (each run starts with what is left)
        _killed_after(world, ["--apply"], started)
        _check_no_silent_half(world, monkeypatch)
    remaining = [tid for tid, (s, _) in asyncio.run(_now(world.url)).items() if not _written(s)]
    assert remaining, "the kills came too late to leave any thread for the second --apply"

    code, applied = _migrate(world, monkeypatch, "--apply")
    assert code == 0, applied
    now = asyncio.run(_now(world.url))
    assert all(_written(s) and _record_stamped(r) for s, r in now.values())
    assert applied["counts"].get("changed", 0) == len(remaining)
    assert Journal(world.journal, MIGRATION).previous("apply").empty

    _killed_after(world, ["--rollback", MIGRATION], 5)
    assert not Journal(world.journal, MIGRATION).previous("rollback").empty
    code, rolled = _migrate(world, monkeypatch, "--rollback", MIGRATION)
    assert code == 0, rolled
    assert any("a previous --rollback stopped before its end" in n for n in rolled["notes"])
    assert {t["action"] for t in rolled["threads"]} <= {"restored", "already restored"}
    assert len(rolled["threads"]) == THREADS
    _assert_restored(world)
