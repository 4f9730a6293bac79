"""`playbook migrate` on real `langgraph dev` servers: detect, repair, prove, roll back.

The live side is the v1 fixture project (tests/fixtures/gate_projects/v1) with threads in
each position (`variants.populate`, plus one finished urgent ticket and one more ticket
paused at `triage`). The candidate (tests/fixtures/migrate_plans) renames the paused node
`triage` to `assess`, renames the key `response` to `reply`, reads a new key `summary`
and narrows `priority`; `0006-helpdesk-assess.plan.json` repairs all four.

Three servers, as a rollout goes (each a `langgraph dev` of its own):

* **live**: v1, before the rollout: the dry run reads it, `--apply` is refused there (it
  writes through the graph the server runs), and `--persistence` proves the plan on a copy;
* **rolled out**: a copy of the same folder served with the candidate (the deploy): the
  dry run reads what the candidate hides from the thread records, `--apply` repairs the
  blocked threads (skipping a busy one), a second `--apply` changes nothing;
* **rolled back**: the same folder served with v1 again (the code rolled back): `--rollback`
  restores the pre-migration heads. Its fixture stops the rolled-out server, so the tests that
  use it come last in this file.

A fourth pair of servers (v1, then the candidate) holds assistants whose stored context the
candidate rejects, for the context step. `playbook migrate` runs in-process through the CLI's
`main` (stdout and stderr captured), and in a subprocess where a test is about stderr.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import shutil
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk import get_client

from migrations_playbook.cli import main
from migrations_playbook.staging.live_copy import absolute_config
from migrations_playbook.staging.server import DevServer
from tests.conftest import REPO_ROOT
from tests.fixtures.gate_projects.variants import V1, make_variant, populate
from tests.fixtures.migrate_plans import (
    CANDIDATE_EDITS,
    CTX_CANDIDATE_EDITS,
    CTX_MIGRATION,
    CTX_PLAN,
    CTX_V1,
    MIGRATION,
    PLAN,
)
from tests.playbook_cli import playbook

TRANSFORMS = "tests.fixtures.migrate_plans.helpdesk_transforms"


_playbook = partial(playbook, timeout=300, cwd=REPO_ROOT)


@dataclass
class World:
    root: Path
    project: Path
    """The live server's folder (v1 code, its .langgraph_api/)."""
    rolled_out: Path
    """A copy of it taken at the same graceful stop: what the rollout serves with the candidate."""
    locks: Path
    """v1's contract locks (the code the threads last ran)."""
    candidate: Path
    threads: dict[str, list[str]]

    def one(self, position: str) -> str:
        (thread_id,) = self.threads[position]
        return thread_id

    @property
    def helpdesk(self) -> set[str]:
        return {t for p in ("helpdesk_at_triage", "helpdesk_idle", "urgent_done", "busy_later") for t in self.threads[p]}

    @property
    def blocked(self) -> set[str]:
        """The helpdesk threads the gate blocks: paused at triage (NODE_MISSING), or holding priority "normal"."""
        return {*self.threads["helpdesk_at_triage"], *self.threads["helpdesk_idle"], *self.threads["busy_later"]}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    root = tmp_path_factory.mktemp("migrate")
    project = root / "v1"
    shutil.copytree(V1, project)
    locks = root / "v1-locks"
    written = _playbook("contract", "--config", str(project / "langgraph.json"), "--write", "--contracts-dir", str(locks))
    assert written.returncode == 0, written.stderr

    async def positions(url: str) -> dict[str, list[str]]:
        threads = await populate(url)
        client = get_client(url=url)
        done = await client.threads.create()
        await client.runs.wait(done["thread_id"], "helpdesk", input={"request": "urgent: reboot", "messages": []})
        await client.runs.wait(done["thread_id"], "helpdesk", command={"resume": "approved"})
        later = await client.threads.create()
        await client.runs.wait(later["thread_id"], "helpdesk", input={"request": "slow printer", "messages": []})
        await client.aclose()
        return {**threads, "urgent_done": [done["thread_id"]], "busy_later": [later["thread_id"]]}

    with DevServer(project / "langgraph.json", project) as server:
        threads = asyncio.run(positions(server.url))
    # Stopped gracefully: every checkpoint is on disk, for both copies.
    rolled_out = root / "rolled-out"
    shutil.copytree(project / ".langgraph_api", rolled_out / ".langgraph_api")
    candidate = make_variant(root, "candidate", CANDIDATE_EDITS)
    return World(root, project, rolled_out, locks, candidate, threads)


def _serve(folder: Path, config: Path) -> DevServer:
    """Serve ``folder``'s threads with the code of ``config`` (paths made absolute, code from its folder)."""
    (folder / "langgraph.json").write_text(json.dumps(absolute_config(config), indent=2))
    return DevServer(folder / "langgraph.json", folder, env={"PYTHONPATH": str(config.parent)})


@pytest.fixture(scope="module")
def live(world: World):
    """v1 serving the live threads, before the rollout."""
    with DevServer(world.project / "langgraph.json", world.project) as server:
        yield server.url


def _migrate(url: str, world: World, *extra: str, plan: Path = PLAN, isolated: bool = False) -> tuple[int, dict[str, Any], str]:
    """``playbook migrate ... --format json`` with the world's candidate and v1 locks."""
    return _migrate_with(url, world.candidate, world.locks, *extra, plan=plan, isolated=isolated)


def _migrate_with(
    url: str, candidate: Path, locks: Path, *extra: str, plan: Path = PLAN, isolated: bool = False
) -> tuple[int, dict[str, Any], str]:
    """(exit code, the JSON report, stderr). In-process through the CLI's `main` (a subprocess costs
    seconds of imports per call), or ``isolated`` in a subprocess."""
    argv = [
        "migrate",
        "--live",
        url,
        "--candidate",
        str(candidate),
        "--plan",
        str(plan),
        "--live-contract",
        str(locks),
        "--format",
        "json",
        *extra,
    ]
    if isolated:
        result = _playbook(*argv)
        code, stdout, stderr = result.returncode, result.stdout, result.stderr
    else:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
        stdout, stderr = out.getvalue(), err.getvalue()
    assert "Traceback" not in stderr, stderr
    return code, json.loads(stdout) if code in (0, 1) else {}, stderr


async def _record_async(url: str) -> dict[str, Any]:
    """Every thread's state and full history: what "writes nothing" compares."""
    client = get_client(url=url)
    found = {}
    for thread in await client.threads.search(limit=100):
        thread_id = thread["thread_id"]
        found[thread_id] = (
            await client.threads.get_state(thread_id, subgraphs=True),
            await client.threads.get_history(thread_id, limit=100),
        )
    await client.aclose()
    return found


def _record(url: str) -> dict[str, Any]:
    return asyncio.run(_record_async(url))


def _by_thread(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["thread_id"]: t for t in report["threads"]}


# -- before the rollout: the live server runs v1 ---------------------------------------------------


def test_dry_run_before_the_rollout_shows_each_blocked_threads_change_and_writes_nothing(live: str, world: World) -> None:
    before = _record(live)
    code, report, _ = _migrate(live, world)
    assert _record(live) == before
    assert (code, report["mode"], report["served"]) == (0, "dry run", {"helpdesk": "live code"})
    assert report["gate_before"]["verdict"] == "block"
    assert set(report["blocked_before"]) == world.blocked
    threads = _by_thread(report)
    assert {t for t, o in threads.items() if o["action"] == "would change"} == world.blocked
    paused = threads[world.threads["helpdesk_at_triage"][1]]
    assert paused["move"] == {"from": "triage", "to": "assess", "as_node": "enrich", "step": 1}
    assert {(d["key"], d["before"], d["after"]) for d in paused["diff"]} == {
        ("summary", "<absent>", "slow page"),
        ("priority", "normal", "low"),
    }
    idle = threads[world.one("helpdesk_idle")]
    assert idle["move"] is None
    assert {d["key"]: (d["before"], d["how"]) for d in idle["diff"]}["reply"] == ("<absent>", "renamed from response")
    assert threads[world.one("urgent_done")]["action"] == "no change"  # only a warning (FIELD_DROPPED): not blocked
    assert any("Apply AFTER the rollout" in n for n in report["notes"])


def test_apply_on_a_server_still_running_the_live_code_is_refused_and_writes_nothing(live: str, world: World) -> None:
    before = _record(live)
    code, _, stderr = _migrate(live, world, "--apply")
    assert code == 2
    assert "runs the live code of helpdesk" in stderr and "after the rollout" in stderr and "--persistence" in stderr
    assert _record(live) == before


def test_staging_proof_resumes_the_repaired_threads_and_the_moved_question_is_answered_at_the_new_node(
    live: str, world: World
) -> None:
    before = _record(live)
    code, report, stderr = _migrate(live, world, "--persistence", str(world.project), "--resume", '"approved"')
    assert code == 0, stderr
    assert _record(live) == before  # the proof ran on the copy only
    assert report["mode"] == "staging" and report["served"] == {"helpdesk": "candidate"}
    assert {t["thread_id"] for t in report["threads"] if t["action"] == "changed"} == world.blocked
    assert report["gate_after"]["verdict"] == "pass"
    paused = {*world.threads["helpdesk_at_triage"], *world.threads["busy_later"]}
    proofs = {p["thread_id"]: p for p in report["proofs"]}
    assert set(proofs) == paused
    for proof in proofs.values():
        assert (proof["node"], proof["asked_again"], proof["answer"], proof["proven"]) == ("assess", True, "approved", True)
        assert proof["wrote"] == {"notes": ["triage:approved"]}  # the answer landed in the new node


def _replay(live: str, world: World, *extra: str) -> tuple[int, dict[str, Any], str]:
    out, err = io.StringIO(), io.StringIO()
    argv = [
        "replay",
        "--live",
        live,
        "--candidate",
        str(world.candidate),
        "--persistence",
        str(world.project),
        "--format",
        "json",
        *extra,
    ]
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    assert "Traceback" not in err.getvalue(), err.getvalue()
    return code, json.loads(out.getvalue()) if code in (0, 1) else {}, err.getvalue()


def test_replay_with_the_plan_proves_the_repaired_threads_where_the_plain_replay_blocks(live: str, world: World) -> None:
    before = _record(live)
    plain_code, plain, _ = _replay(live, world, "--resume", '"approved"')
    code, report, stderr = _replay(
        live, world, "--resume", '"approved"', "--plan", str(PLAN), "--live-contract", str(world.locks)
    )
    assert _record(live) == before  # both ran on copies
    # Without the plan: the paused step (triage) never runs under the candidate.
    assert (plain_code, plain["verdict"]) == (1, "block")
    failed = {t for f in plain["findings"] if f["code"] == "STAGING_RESUME_FAILED" for t in f["thread_ids"]}
    assert failed >= set(world.threads["helpdesk_at_triage"])
    # With it: applied on the copy, every repaired thread resumed there and proven, the gate passes there.
    assert code == 0, (stderr, report.get("findings"))
    assert report["verdict"] == "pass"
    assert not [f for f in report["findings"] if f["severity"] == "block"]
    paused = {*world.threads["helpdesk_at_triage"], *world.threads["busy_later"]}
    assert any(
        n.startswith(
            f"plan {MIGRATION} applied on staging: {len(world.blocked)} thread(s) repaired, "
            f"{len(paused)} of {len(paused)} resumed proven"
        )
        for n in report["notes"]
    ), report["notes"]
    for thread_id in paused:
        assert any(n.startswith(f"helpdesk {thread_id}: proven at 'assess'") for n in report["notes"])
    assert "the gate on staging after the plan: PASS" in report["notes"]


# -- after the rollout: the same threads served with the candidate ---------------------------------


@dataclass
class Migrated:
    """What each command did on the rolled-out server, in the order of a real rollout."""

    url: str
    server: DevServer
    untouched_before: dict[str, Any]
    dry_run: tuple[int, dict[str, Any]]
    dry_run_wrote_nothing: bool
    rollback_refused: tuple[int, str]
    first: tuple[int, dict[str, Any]]
    """--apply while one thread is busy."""
    second: tuple[int, dict[str, Any]]
    """--apply once it is idle again."""
    third: tuple[int, dict[str, Any]]
    third_wrote_nothing: bool
    records: dict[str, Any]
    """Every thread's state and history after the second apply."""
    guard_before: Any
    guard_after: Any
    gate_before: tuple[int, dict[str, Any]]
    """`playbook gate` on the rolled-out server before any apply."""


async def _guard_check(url: str, candidate: Path, contracts: Path, thread_id: str) -> Any:
    from migrations_playbook.guard import Guard

    client = get_client(url=url)
    try:
        thread = await client.threads.get(thread_id)
        return await Guard.from_config(candidate, contracts).check(client, graph_id="helpdesk", thread=dict(thread))
    finally:
        await client.aclose()


@pytest.fixture(scope="module")
def migrated(world: World):
    server = _serve(world.rolled_out, world.candidate).start()
    try:
        url = server.url
        paused = world.threads["helpdesk_at_triage"][0]
        empty_contracts = world.root / "no-locks"
        empty_contracts.mkdir()
        guard_before = asyncio.run(_guard_check(url, world.candidate, empty_contracts, paused))
        untouched_before = {t: v for t, v in _record(url).items() if t not in world.blocked}

        async def make_busy() -> tuple[str, str]:
            client = get_client(url=url)
            run = await client.runs.create(world.one("busy_later"), "helpdesk", command={"resume": "later"}, after_seconds=600)
            await client.aclose()
            return run["thread_id"], run["run_id"]

        async def cancel(thread_id: str, run_id: str) -> None:
            client = get_client(url=url)
            await client.runs.cancel(thread_id, run_id)
            await client.aclose()

        gate_before = _gate(url, world)
        busy = asyncio.run(make_busy())
        before_dry = _record(url)
        dry = _migrate(url, world)
        dry_wrote_nothing = _record(url) == before_dry
        refused = _migrate(url, world, "--rollback", MIGRATION, isolated=True)
        first = _migrate(url, world, "--apply")
        asyncio.run(cancel(*busy))
        second = _migrate(url, world, "--apply")
        records = _record(url)
        third = _migrate(url, world, "--apply")
        third_wrote_nothing = _record(url) == records
        guard_after = asyncio.run(_guard_check(url, world.candidate, empty_contracts, paused))
        yield Migrated(
            url=url,
            server=server,
            untouched_before=untouched_before,
            dry_run=dry[:2],
            dry_run_wrote_nothing=dry_wrote_nothing,
            rollback_refused=(refused[0], refused[2]),
            first=first[:2],
            second=second[:2],
            third=third[:2],
            third_wrote_nothing=third_wrote_nothing,
            records=records,
            guard_before=guard_before,
            guard_after=guard_after,
            gate_before=gate_before,
        )
    finally:
        server.stop()


def _gate(url: str, world: World) -> tuple[int, dict[str, Any]]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(
            [
                "gate",
                "--live",
                url,
                "--candidate",
                str(world.candidate),
                "--live-contract",
                str(world.locks),
                "--format",
                "json",
                "--no-progress",
            ]
        )
    return code, json.loads(out.getvalue())


def test_the_gate_after_the_rollout_still_sees_the_threads_paused_in_the_node_the_candidate_lacks(
    migrated: Migrated, world: World
) -> None:
    """The server derives state with the candidate (nothing pending at `triage`); the thread
    records still hold the interrupts, and the gate reads them: no silent pass after a rollout."""
    code, report = migrated.gate_before
    assert (code, report["verdict"]) == (1, "block")
    missing = [f for f in report["findings"] if f["code"] == "NODE_MISSING"]
    assert [f["node"] for f in missing] == ["triage"]
    assert set(missing[0]["thread_ids"]) == {*world.threads["helpdesk_at_triage"], *world.threads["busy_later"]}


def test_dry_run_after_the_rollout_reads_what_the_candidate_hides_from_the_thread_records(
    migrated: Migrated, world: World
) -> None:
    code, report = migrated.dry_run
    assert migrated.dry_run_wrote_nothing
    assert (code, report["served"]) == (0, {"helpdesk": "candidate"})
    threads = _by_thread(report)
    for thread_id in world.threads["helpdesk_at_triage"]:
        assert threads[thread_id]["read_from_thread_record"]["lost_steps"] == ["triage"]
        assert threads[thread_id]["move"]["to"] == "assess"
    assert threads[world.one("helpdesk_idle")]["read_from_thread_record"]["keys"] == ["response"]
    assert threads[world.one("busy_later")]["action"] == "skipped: busy"


def test_apply_repairs_exactly_the_threads_the_gate_blocked_and_skips_the_busy_one(migrated: Migrated, world: World) -> None:
    code, report = migrated.first
    assert code == 1  # the busy thread still blocks
    actions = {t["thread_id"]: t["action"] for t in report["threads"]}
    assert {t for t, a in actions.items() if a == "changed"} == world.blocked - set(world.threads["busy_later"])
    assert actions[world.one("busy_later")] == "skipped: busy"
    assert actions[world.one("urgent_done")] == "no change"
    blocks = [f for f in report["gate_after"]["findings"] if f["severity"] == "block"]
    assert blocks and all(f["thread_ids"] == world.threads["busy_later"] for f in blocks)
    untouched_now = {t: v for t, v in migrated.records.items() if t in migrated.untouched_before}
    assert untouched_now == migrated.untouched_before


def test_once_idle_the_skipped_thread_is_repaired_and_the_gate_passes(migrated: Migrated, world: World) -> None:
    code, report = migrated.second
    assert (code, report["gate_after"]["verdict"]) == (0, "pass")
    changed = {t["thread_id"] for t in report["threads"] if t["action"] == "changed"}
    assert changed == set(world.threads["busy_later"])


def test_each_change_is_one_new_stamped_checkpoint_and_the_pre_migration_head_stays_readable(
    migrated: Migrated, world: World
) -> None:
    first = _by_thread(migrated.first[1])
    for thread_id in world.threads["helpdesk_at_triage"]:
        state, history = migrated.records[thread_id]
        outcome = first[thread_id]
        assert state["checkpoint"]["checkpoint_id"] == outcome["new_checkpoint"]
        assert state["parent_checkpoint"]["checkpoint_id"] == outcome["base_checkpoint"]
        assert state["metadata"]["playbook_migration"] == MIGRATION
        assert state["metadata"]["playbook_migration_base"] == outcome["base_checkpoint"]
        assert state["metadata"]["playbook_migration_moved"] == "triage->assess"
        assert state["next"] == ["assess"]
        assert outcome["base_checkpoint"] in [h["checkpoint"]["checkpoint_id"] for h in history]
    idle, _ = migrated.records[world.one("helpdesk_idle")]
    assert (idle["values"]["reply"], idle["values"]["priority"]) == ("done: reset my password", "low")
    assert "response" not in idle["values"]


def test_a_second_apply_changes_nothing(migrated: Migrated, world: World) -> None:
    code, report = migrated.third
    assert migrated.third_wrote_nothing
    assert code == 0
    actions = {t["thread_id"]: t["action"] for t in report["threads"]}
    assert {t for t, a in actions.items() if a == "already applied"} == world.blocked
    assert set(actions.values()) == {"already applied", "no change"}


def test_the_runtime_guard_refuses_the_stranded_thread_before_and_admits_it_after(migrated: Migrated) -> None:
    assert migrated.guard_before is not None
    assert "NODE_MISSING" in {f.code for f in migrated.guard_before.findings}
    assert migrated.guard_after is None


def test_rollback_on_a_server_still_running_the_candidate_is_refused(migrated: Migrated) -> None:
    code, stderr = migrated.rollback_refused
    assert code == 2
    assert "still runs the candidate" in stderr and "Roll the code back first" in stderr


# -- bad plans: exit 2, named, nothing written ----------------------------------------------------------


def _plan(tmp: Path, name: str, mutate: Any) -> Path:
    """The good plan, changed by ``mutate``, written elsewhere (its functions named by their full module path)."""
    data = json.loads(PLAN.read_text())
    for step in data["steps"]:
        if "function" in step:
            step["function"] = step["function"].replace("helpdesk_transforms:", f"{TRANSFORMS}:")
    mutate(data)
    path = tmp / f"{name}.plan.json"
    path.write_text(json.dumps(data))
    return path


BAD_PLANS = {
    "unknown-op": (
        lambda d: d["steps"].append({"op": "rename_node", "from": "a", "to": "b"}),
        'step 5: unknown op "rename_node"',
    ),
    "missing-field": (lambda d: d["steps"][1].pop("to"), "step 2 (rename_key): missing 'to'"),
    "target-node-the-candidate-lacks": (
        lambda d: d["steps"][0].update(to="review"),
        "step 1 (move_node triage -> review): the candidate's helpdesk has no node 'review'",
    ),
    "transform-that-raises": (
        lambda d: d.update(
            migration="0007-broken",
            steps=[
                {"op": "transform", "key": "priority", "function": f"{TRANSFORMS}:explode", "select": "all"},
            ],
        ),
        "step 1 (transform priority): tests.fixtures.migrate_plans.helpdesk_transforms:explode raised ValueError",
    ),
    "unknown-function": (
        lambda d: d["steps"][2].update(function=f"{TRANSFORMS}:nope"),
        f"step 3 (set_default summary): '{TRANSFORMS}' has no 'nope'",
    ),
}


@pytest.fixture(scope="module")
def bad_plan_runs(world: World, migrated: Migrated, tmp_path_factory: pytest.TempPathFactory):
    """Every bad plan with --apply against the server running the candidate (where --apply writes)."""
    folder = tmp_path_factory.mktemp("bad-plans")
    plans = {name: _plan(folder, name, mutate) for name, (mutate, _) in BAD_PLANS.items()}
    before = _record(migrated.url)
    with ThreadPoolExecutor(max_workers=len(plans)) as pool:
        runs = dict(
            zip(
                plans,
                pool.map(lambda p: _migrate(migrated.url, world, "--apply", plan=p, isolated=True), plans.values()),
                strict=True,
            )
        )
    return runs, _record(migrated.url) == before


@pytest.mark.parametrize("name", list(BAD_PLANS))
def test_a_bad_plan_exits_2_naming_the_step_and_writes_nothing(bad_plan_runs, name: str) -> None:
    runs, wrote_nothing = bad_plan_runs
    code, _, stderr = runs[name]
    assert code == 2, stderr
    assert BAD_PLANS[name][1] in stderr
    assert wrote_nothing


def test_an_unreachable_server_exits_3_naming_it(world: World) -> None:
    from migrations_playbook.staging.server import free_port

    url = f"http://127.0.0.1:{free_port()}"
    code, _, stderr = _migrate(url, world, "--apply")
    assert code == 3 and url in stderr


# -- the code rolled back: v1 serves the migrated threads again --------------------------------------


@dataclass
class RolledBack:
    url: str
    client_resume: dict[str, Any]
    first: tuple[int, dict[str, Any]]
    second: tuple[int, dict[str, Any]]
    records: dict[str, Any]
    second_wrote_nothing: bool


@pytest.fixture(scope="module")
def rolled_back(world: World, migrated: Migrated):
    # A user answers one moved thread under the candidate first: its answer lands in `assess`,
    # and the thread has moved on, so the rollback must leave it alone.
    async def answer() -> dict[str, Any]:
        client = get_client(url=migrated.url)
        result = await client.runs.wait(world.threads["helpdesk_at_triage"][0], "helpdesk", command={"resume": "approved"})
        await client.aclose()
        return result

    resumed = asyncio.run(answer())
    migrated.server.stop()
    with _serve(world.rolled_out, world.project / "langgraph.json") as server:
        first = _migrate(server.url, world, "--rollback", MIGRATION)
        records = _record(server.url)
        second = _migrate(server.url, world, "--rollback", MIGRATION)
        yield RolledBack(server.url, resumed, first[:2], second[:2], records, _record(server.url) == records)


def test_a_client_answer_to_a_moved_thread_lands_in_the_new_node(rolled_back: RolledBack) -> None:
    assert "triage:approved" in rolled_back.client_resume["notes"]
    assert rolled_back.client_resume["reply"] == "done: urgent: printer on fire"  # respond ran with the default summary


def test_rollback_restores_the_pre_migration_heads_and_skips_the_thread_that_moved_on(
    rolled_back: RolledBack, migrated: Migrated, world: World
) -> None:
    code, report = rolled_back.first
    assert code == 1  # one thread could not be rolled back: it is named
    actions = {t["thread_id"]: t for t in report["threads"]}
    moved_on = world.threads["helpdesk_at_triage"][0]
    assert actions[moved_on]["action"] == "skipped: moved on"
    restored = world.blocked - {moved_on}
    assert {t for t, o in actions.items() if o["action"] == "restored"} == restored
    for thread_id in restored:
        state, history = rolled_back.records[thread_id]
        base = actions[thread_id]["base_checkpoint"]
        (pre,) = [h for h in history if h["checkpoint"]["checkpoint_id"] == base]
        assert (state["values"], state["next"]) == (pre["values"], pre["next"])
        assert any(h["metadata"].get("playbook_migration") == MIGRATION for h in history)  # history kept
    paused, _ = rolled_back.records[world.threads["helpdesk_at_triage"][1]]
    assert paused["next"] == ["triage"]  # v1 waits at its own node again


def test_a_second_rollback_changes_nothing(rolled_back: RolledBack, world: World) -> None:
    code, report = rolled_back.second
    assert rolled_back.second_wrote_nothing
    assert code == 1  # the moved-on thread is still named
    actions = {t["thread_id"]: t["action"] for t in report["threads"]}
    assert {t for t, a in actions.items() if a == "already restored"} == world.blocked - {world.threads["helpdesk_at_triage"][0]}


# -- assistants whose stored context the candidate rejects ----------------------------------------------


@dataclass
class ContextMigrated:
    assistants: dict[str, str]
    """tenant -> assistant id."""
    thread: str
    """A thread that ran through the "silver" assistant."""
    dry_run: tuple[int, dict[str, Any]]
    apply: tuple[int, dict[str, Any]]
    run_after: dict[str, Any]
    again: tuple[int, dict[str, Any]]
    rollback: tuple[int, dict[str, Any]]
    rollback_again: tuple[int, dict[str, Any]]
    contexts: dict[str, dict[str, Any]]
    """tenant -> the stored context after the rollback."""


@pytest.fixture(scope="module")
def ctx_migrated(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("migrate-ctx")
    project = root / "v1"
    shutil.copytree(CTX_V1, project)
    locks = root / "v1-locks"
    written = _playbook("contract", "--config", str(project / "langgraph.json"), "--write", "--contracts-dir", str(locks))
    assert written.returncode == 0, written.stderr
    candidate = root / "candidate"
    shutil.copytree(CTX_V1, candidate)
    for file, old, new in CTX_CANDIDATE_EDITS:
        text = (candidate / file).read_text()
        assert old in text, f"fixture drift: {old!r} not in {file}"
        (candidate / file).write_text(text.replace(old, new))

    async def start(url: str) -> tuple[dict[str, str], str]:
        client = get_client(url=url)
        ids = {}
        for tenant, tier in (("acme", "silver"), ("beta", "gold")):
            ids[tenant] = (await client.assistants.create("ctx_flow", context={"tenant": tenant, "tier": tier}, name=tenant))[
                "assistant_id"
            ]
        thread = await client.threads.create()
        await client.runs.wait(thread["thread_id"], ids["acme"], input={"request": "hi"})
        await client.aclose()
        return ids, thread["thread_id"]

    with DevServer(project / "langgraph.json", project) as server:
        assistants, thread = asyncio.run(start(server.url))
    served = root / "rolled-out"
    shutil.copytree(project / ".langgraph_api", served / ".langgraph_api")

    async def run_through(url: str, assistant_id: str) -> dict[str, Any]:
        client = get_client(url=url)
        fresh = await client.threads.create()
        result = await client.runs.wait(fresh["thread_id"], assistant_id, input={"request": "after"})
        await client.aclose()
        return result

    async def contexts(url: str) -> dict[str, dict[str, Any]]:
        client = get_client(url=url)
        found = {tenant: (await client.assistants.get(aid))["context"] for tenant, aid in assistants.items()}
        await client.aclose()
        return found

    candidate_config = candidate / "langgraph.json"
    with _serve(served, candidate_config) as server:
        migrate = lambda *extra: _migrate_with(server.url, candidate_config, locks, *extra, plan=CTX_PLAN)[:2]  # noqa: E731
        dry = migrate()
        applied = migrate("--apply")
        run_after = asyncio.run(run_through(server.url, assistants["acme"]))
        again = migrate("--apply")
        rollback = migrate("--rollback", CTX_MIGRATION)
        rollback_again = migrate("--rollback", CTX_MIGRATION)
        return ContextMigrated(
            assistants, thread, dry, applied, run_after, again, rollback, rollback_again, asyncio.run(contexts(server.url))
        )


def test_a_rejected_assistant_context_is_transformed_and_runs_through_it_work(ctx_migrated: ContextMigrated) -> None:
    code, dry = ctx_migrated.dry_run
    assert code == 0 and dry["gate_before"]["verdict"] == "block"
    assert {f["code"] for f in dry["gate_before"]["findings"] if f["severity"] == "block"} == {"CONTEXT_INVALID"}
    planned = {a["assistant_id"]: a for a in dry["assistants"]}
    acme, beta = ctx_migrated.assistants["acme"], ctx_migrated.assistants["beta"]
    assert (planned[acme]["action"], planned[acme]["context_after"]) == ("would change", {"tenant": "acme", "tier": "standard"})
    assert planned[beta]["action"] == "no change"
    code, applied = ctx_migrated.apply
    assert (code, applied["gate_after"]["verdict"]) == (0, "pass")
    assert {a["assistant_id"]: a["action"] for a in applied["assistants"]}[acme] == "changed"
    assert ctx_migrated.run_after["reply"] == "acme/standard: after"


def test_a_second_context_apply_changes_nothing(ctx_migrated: ContextMigrated) -> None:
    code, again = ctx_migrated.again
    assert code == 0
    assert {a["assistant_id"]: a["action"] for a in again["assistants"]}[ctx_migrated.assistants["acme"]] == "already applied"


def test_a_context_rollback_writes_the_old_context_back_once(ctx_migrated: ContextMigrated) -> None:
    code, rollback = ctx_migrated.rollback
    assert code == 0
    assert [(a["assistant_id"], a["action"]) for a in rollback["assistants"]] == [(ctx_migrated.assistants["acme"], "restored")]
    assert ctx_migrated.contexts == {"acme": {"tenant": "acme", "tier": "silver"}, "beta": {"tenant": "beta", "tier": "gold"}}
    assert rollback["gate_after"]["verdict"] == "block"  # the candidate rejects it again, as before the migration
    code, again = ctx_migrated.rollback_again
    assert code == 0
    assert [a["action"] for a in again["assistants"]] == ["already restored"]


# -- a self-hosted checkpointer (SQLite, PostgreSQL): the same plan, read-only reads, writes through the candidate --


@dataclass
class StoreMigrated:
    kind: str
    uri: str
    threads: dict[str, list[str]]
    dry_run: tuple[int, dict[str, Any]]
    dry_run_wrote_nothing: bool
    apply: tuple[int, dict[str, Any]]
    again: tuple[int, dict[str, Any]]
    again_wrote_nothing: bool
    resumed: dict[str, list[Any]]
    """On a copy of the migrated database, the candidate's own runs per paused thread: continue, then answer."""
    rollback: tuple[int, dict[str, Any]]
    rollback_again: tuple[int, dict[str, Any]]
    rollback_again_wrote_nothing: bool
    heads: dict[str, tuple[Any, Any]]
    """thread -> (the head's channel values after the rollback, the pre-migration head's)."""


def _store_bytes(path: Path) -> bytes:
    wal = path.with_name(path.name + "-wal")
    return path.read_bytes() + (wal.read_bytes() if wal.exists() else b"")


class _Store:
    """One self-hosted store for the migrate tests: SQLite (a file) or PostgreSQL (a database on a
    server of the tests' own, tests/postgres_server.py)."""

    def __init__(self, kind: str, folder: Path, postgres: Any = None) -> None:
        self.kind, self.folder, self.postgres = kind, folder, postgres
        self.uri = f"sqlite:///{folder / 'checkpoints.db'}" if kind == "sqlite" else self._create("migrate_store")

    def _create(self, name: str, template: str | None = None) -> str:
        import psycopg

        with psycopg.connect(self.postgres.url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else ""))
        return self.postgres.url_for(name)

    @contextlib.contextmanager
    def saver(self, uri: str | None = None):
        uri = uri or self.uri
        if self.kind == "sqlite":
            from langgraph.checkpoint.sqlite import SqliteSaver

            with SqliteSaver.from_conn_string(uri.removeprefix("sqlite:///")) as saver:
                yield saver
        else:
            from langgraph.checkpoint.postgres import PostgresSaver

            with PostgresSaver.from_conn_string(uri) as saver:
                saver.setup()
                yield saver

    def dump(self) -> Any:
        """Everything the store holds, byte for byte (PostgreSQL: every row in its text form)."""
        if self.kind == "sqlite":
            return _store_bytes(self.folder / "checkpoints.db")
        import psycopg

        with psycopg.connect(self.uri, autocommit=True) as conn:
            tables = [
                r[0]
                for r in conn.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1")
            ]
            return {t: [r[0] for r in conn.execute(f'SELECT t::text FROM "{t}" t ORDER BY 1')] for t in tables}

    def copy(self) -> str:
        """A copy of the store (for the proof), as a URI."""
        if self.kind == "sqlite":
            shutil.copy(self.folder / "checkpoints.db", self.folder / "proof.db")
            return f"sqlite:///{self.folder / 'proof.db'}"
        return self._create("migrate_proof", template="migrate_store")


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def store_migrated(request: pytest.FixtureRequest, world: World, tmp_path_factory: pytest.TempPathFactory) -> StoreMigrated:
    from langgraph.types import Command

    from migrations_playbook.graphcode.candidate import load_compiled
    from tests.fixtures.gate_projects.store_seed import seed

    folder = tmp_path_factory.mktemp(f"migrate-store-{request.param}")
    store = _Store(request.param, folder, request.getfixturevalue("postgres") if request.param == "postgres" else None)
    with store.saver() as saver:
        threads = seed(saver)
    uri = store.uri

    def run(*extra: str) -> tuple[int, dict[str, Any]]:
        argv = [
            "migrate",
            "--checkpointer",
            uri,
            "--candidate",
            str(world.candidate),
            "--plan",
            str(PLAN),
            "--live-contract",
            str(world.locks),
            "--format",
            "json",
            *extra,
        ]
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
        assert code in (0, 1) and "Traceback" not in err.getvalue(), err.getvalue()
        return code, json.loads(out.getvalue())

    before = store.dump()
    dry = run()
    dry_wrote_nothing = store.dump() == before
    applied = run("--apply")
    after_apply = store.dump()
    again = run("--apply")
    again_wrote_nothing = store.dump() == after_apply
    # The proof: the candidate itself resumes a copy of the migrated database.
    resumed: dict[str, list[Any]] = {}
    with store.saver(store.copy()) as saver:
        graph = load_compiled(world.candidate, ["helpdesk"])["helpdesk"].copy(update={"checkpointer": saver})
        for thread_id in threads["helpdesk_at_triage"]:
            config = {"configurable": {"thread_id": thread_id}}
            asked = graph.invoke(None, config)
            answered = graph.invoke(Command(resume="approved"), config)
            resumed[thread_id] = [asked, answered]
    rollback = run("--rollback", MIGRATION)
    after_rollback = store.dump()
    rollback_again = run("--rollback", MIGRATION)
    heads = {}
    with store.saver() as saver:
        for outcome in rollback[1]["threads"]:
            head = saver.get_tuple({"configurable": {"thread_id": outcome["thread_id"], "checkpoint_ns": ""}})
            base = saver.get_tuple(
                {
                    "configurable": {
                        "thread_id": outcome["thread_id"],
                        "checkpoint_ns": "",
                        "checkpoint_id": outcome["base_checkpoint"],
                    }
                }
            )
            heads[outcome["thread_id"]] = (head.checkpoint["channel_values"], base.checkpoint["channel_values"])
    return StoreMigrated(
        request.param,
        uri,
        threads,
        dry,
        dry_wrote_nothing,
        applied,
        again,
        again_wrote_nothing,
        resumed,
        rollback,
        rollback_again,
        store.dump() == after_rollback,
        heads,
    )


def _store_blocked(threads: dict[str, list[str]]) -> set[str]:
    """Seeded threads the gate blocks: paused at triage (v1 and the older v0 shape), or holding "normal"."""
    return {*threads["helpdesk_at_triage"], *threads["helpdesk_idle"]}


def test_store_dry_run_reads_the_live_shape_and_writes_nothing(store_migrated: StoreMigrated) -> None:
    code, report = store_migrated.dry_run
    assert store_migrated.dry_run_wrote_nothing
    assert (code, report["source"], report["gate_before"]["verdict"]) == (0, "checkpointer", "block")
    threads = _by_thread(report)
    assert {t for t, o in threads.items() if o["action"] == "would change"} == _store_blocked(store_migrated.threads)
    for thread_id in store_migrated.threads["helpdesk_at_triage"]:
        assert threads[thread_id]["move"]["to"] == "assess"


def test_store_apply_repairs_the_blocked_threads_and_a_second_apply_writes_nothing(store_migrated: StoreMigrated) -> None:
    code, report = store_migrated.apply
    assert (code, report["gate_after"]["verdict"]) == (0, "pass")
    assert {t["thread_id"] for t in report["threads"] if t["action"] == "changed"} == _store_blocked(store_migrated.threads)
    code, again = store_migrated.again
    assert code == 0 and store_migrated.again_wrote_nothing
    assert {t["action"] for t in again["threads"] if t["thread_id"] in _store_blocked(store_migrated.threads)} == {
        "already applied"
    }


def test_the_candidate_resumes_the_migrated_store_threads_asking_again_at_the_new_node(store_migrated: StoreMigrated) -> None:
    for asked, answered in store_migrated.resumed.values():
        (question,) = asked["__interrupt__"]
        assert question.value["kind"] == "plan_approval"
        assert "triage:approved" in answered["notes"]
        assert answered["reply"].startswith("done: ")


def test_store_rollback_restores_the_pre_migration_heads_once(store_migrated: StoreMigrated) -> None:
    code, report = store_migrated.rollback
    assert code == 0
    assert {t["thread_id"] for t in report["threads"] if t["action"] == "restored"} == _store_blocked(store_migrated.threads)
    for head, base in store_migrated.heads.values():
        assert head == base
    assert report["gate_after"]["verdict"] == "block"  # as before the migration
    code, again = store_migrated.rollback_again
    assert code == 0 and store_migrated.rollback_again_wrote_nothing
    assert {t["action"] for t in again["threads"]} == {"already restored"}
