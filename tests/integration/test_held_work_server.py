"""The work a live server holds, driven by the shadow (issue 38, item 1): held runs, crons, errored threads.

A real `langgraph dev` serves tests/fixtures/held_work_project and is left holding, across a graceful
restart: a run delayed with ``after_seconds`` (one hour), a run queued with ``multitask_strategy="enqueue"``
behind a busy one (the live server is slow: ``ERRAND_BUSY_S``, so the busy run is still running after
the restart and the queued one still waits), a cron on a thread and a stateless cron (yearly: neither is
due), and a thread whose last run failed while the mail service was down (``outage.flag``, gone since).
The held runs carry attachments the threads' own turns never had; the crons carry a digest.

The staging copies run none of it on their own (tests/integration/test_staging_holds_server.py); the shadow
sends it, on every side: the held runs first on their threads, in the queue's order, each cron once, the
errored thread retried and given a next turn. For each kind, a candidate that breaks it is blocked with the
run, cron or thread named, and a safe change of the same area passes; the same code passes through
`playbook check` end to end, with the report saying what was driven.

Speed: the deployed code's two sides (A, A2) run once per module, through the functions `playbook shadow`
runs; each candidate starts only its own side (B). `make test` keeps the deployed code's run of the held work,
the same code, a held run's and a cron's refused input (about 3 minutes of one worker here: the live server
alone takes a minute to leave its work held across a restart); `make test-matrix` adds the safe edit, the
errored thread's renamed step and `check` end to end.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk import get_client

from migrations_playbook.model import GateReport, ThreadSnapshot
from migrations_playbook.proof.resume import ResumeRule
from migrations_playbook.proof.shadow.api import drive_side, read_facts
from migrations_playbook.proof.shadow.classes import Selection, select
from migrations_playbook.proof.shadow.drive import ThreadFacts
from migrations_playbook.proof.shadow.held_runs import HeldPlan, cron_key, fire_crons, plan_held
from migrations_playbook.proof.shadow.run import ShadowOptions, Sides, judge
from migrations_playbook.proof.shadow.traces import SideTrace
from migrations_playbook.sources.api.source import ApiSource
from migrations_playbook.sources.base import SourceRequest
from migrations_playbook.staging.held import hold
from migrations_playbook.staging.live_copy import snapshot, start_staging
from migrations_playbook.staging.server import DevServer
from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.integration

FIXTURE = REPO_ROOT / "tests" / "fixtures" / "held_work_project"
BUSY_ENV = {"ERRAND_BUSY_S": "900"}
"""The live server's slowness: a run given ``slow: true`` stays busy (the staging servers do not have it)."""
NEVER_DUE = "0 0 1 1 *"
"""A cron schedule not due while the test runs: the live server does not fire it; the shadow does, once."""
RULE = ResumeRule(derive=True)

Edit = tuple[str, str]
FILE_LINE = 'names = [str(name) for name in state.get("attachments", [])]'
DIGEST_LINE = "line += f\", {state['digest']} digest\""
CANDIDATES: dict[str, list[Edit]] = {
    "same": [],
    # safe: other wording in what `file` writes (other values, for review), for the held runs' and crons' input too
    "wording": [('attachment(s)"', 'file(s) attached"'), (DIGEST_LINE, "line += f\" (repeats {state['digest']})\"")],
    # the held runs' stored input is no longer accepted: attachments are now records
    "attachments-as-records": [(FILE_LINE, 'names = [item["name"] for item in state.get("attachments", [])]')],
    # the crons' stored input is no longer accepted: a digest is now a number of days
    "digest-as-days": [(DIGEST_LINE, "line += f\", every {int(state['digest'])} day(s)\"")],
    # the step the errored thread's retry runs again is renamed
    "file-renamed": [
        ('builder.add_node("file", file)', 'builder.add_node("deliver", file)'),
        ('builder.add_edge(START, "file")', 'builder.add_edge(START, "deliver")'),
        ('builder.add_edge("file", "log")', 'builder.add_edge("deliver", "log")'),
    ],
}


def make_candidate(root: Path, name: str) -> Path:
    project = root / name
    shutil.copytree(FIXTURE, project, ignore=shutil.ignore_patterns("__pycache__", ".langgraph_api", "outage.flag"))
    for old, new in CANDIDATES[name]:
        text = (project / "errand.py").read_text()
        assert old in text, f"fixture drift: {old!r}"
        (project / "errand.py").write_text(text.replace(old, new))
    return project / "langgraph.json"


async def _hold_work(url: str, folder: Path) -> dict[str, str]:
    """Leave the live server holding work, and one thread failed during an outage."""
    client = get_client(url=url)
    ids: dict[str, str] = {}
    (folder / "outage.flag").write_text("down")
    errored = (await client.threads.create(graph_id="errand"))["thread_id"]
    await client.runs.wait(errored, "errand", input={"to": "dee"}, raise_error=False)
    ids["errored"] = errored
    (folder / "outage.flag").unlink()

    async def turn(to: str) -> str:
        thread = (await client.threads.create(graph_id="errand"))["thread_id"]
        await client.runs.wait(thread, "errand", input={"to": to})
        return str(thread)

    plain, delayed_thread, cron_thread, busy_thread = await asyncio.gather(turn("ann"), turn("bea"), turn("eve"), turn("cy"))
    ids["plain"] = plain
    later = {"to": "bea", "attachments": ["a.pdf"]}
    delayed = await client.runs.create(delayed_thread, "errand", input=later, after_seconds=3600)
    ids["delayed_thread"], ids["delayed"] = delayed_thread, delayed["run_id"]
    on_thread = await client.crons.create_for_thread(
        cron_thread, "errand", schedule=NEVER_DUE, input={"to": "eve", "digest": "weekly"}
    )
    stateless = await client.crons.create("errand", schedule=NEVER_DUE, input={"to": "team", "digest": "daily"})
    ids["cron_thread"], ids["cron"], ids["stateless_cron"] = cron_thread, on_thread["cron_id"], stateless["cron_id"]
    # Last: the busy run holds the live server's one worker (as it does after the restart).
    busy = await client.runs.create(busy_thread, "errand", input={"to": "cy", "slow": True})
    for _ in range(100):
        if (await client.runs.get(busy_thread, busy["run_id"]))["status"] == "running":
            break
        await asyncio.sleep(0.1)
    queued = await client.runs.create(
        busy_thread, "errand", input={"to": "cy", "attachments": ["b.pdf", "c.pdf"]}, multitask_strategy="enqueue"
    )
    ids["busy_thread"], ids["busy"], ids["queued"] = busy_thread, busy["run_id"], queued["run_id"]
    await client.aclose()
    return ids


@dataclass
class Baseline:
    url: str
    folder: Path
    persisted: Path
    ids: dict[str, str]
    snapshots: list[ThreadSnapshot]
    selection: Selection
    plan: HeldPlan
    facts: list[ThreadFacts]
    a: SideTrace
    a2: SideTrace
    scratch: Path


async def _read(url: str, persisted: Path) -> tuple[list[ThreadSnapshot], Selection, HeldPlan, list[ThreadFacts]]:
    source = ApiSource(SourceRequest(live=url))
    async with source:
        snapshots = [t async for t in source.threads(await source.graph_ids([]))]
        with snapshot(persisted) as frozen:  # held as `shadow` holds it: once, on the copy every side starts from
            work = hold(frozen)
        plan = plan_held(work, snapshots, {"errand"}, sample=5, every=False)
        selection = select(snapshots, sample=5, every=False, include=plan.include)
        by_id = {t.thread_id: t for t in snapshots}
        facts = [await read_facts(source.client, t, by_id[t].graph_id, by_id[t].status) for t in selection.chosen]
    return snapshots, selection, plan, plan.attach(facts)


async def _side(label: str, url: str, baseline_facts: list[ThreadFacts], plan: HeldPlan, leader: SideTrace | None) -> SideTrace:
    side = await drive_side(label, url, baseline_facts, rule=RULE, turn_inputs={}, leader=leader)
    await fire_crons(side, url, {}, plan.crons, deadline=None)
    return side


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Baseline]:
    root = tmp_path_factory.mktemp("held-work")
    folder = root / "live"
    shutil.copytree(FIXTURE, folder, ignore=shutil.ignore_patterns("__pycache__", ".langgraph_api"))
    with DevServer(folder / "langgraph.json", folder, env=BUSY_ENV) as server:
        ids = asyncio.run(_hold_work(server.url, folder))
    persisted = root / "persisted"
    shutil.copytree(folder / ".langgraph_api", persisted / ".langgraph_api")
    # Restarted: the busy run starts again (and stays busy), the queued and delayed runs still wait.
    with DevServer(folder / "langgraph.json", folder, env=BUSY_ENV) as server, contextlib.ExitStack() as stack:
        snapshots, selection, plan, facts = asyncio.run(_read(server.url, persisted))
        with ThreadPoolExecutor(max_workers=2) as pool:
            started = [pool.submit(start_staging, folder / "langgraph.json", persisted, stack) for _ in range(2)]
            url_a, url_a2 = (future.result().url for future in started)

        async def sides() -> tuple[SideTrace, SideTrace]:
            a = await _side("A", url_a, facts, plan, None)
            return a, await _side("A2", url_a2, facts, plan, a)

        a, a2 = asyncio.run(sides())
        yield Baseline(server.url, folder, persisted, ids, snapshots, selection, plan, facts, a, a2, root / "candidates")


def _shadow(baseline: Baseline, name: str) -> GateReport:
    candidate = make_candidate(baseline.scratch, name)
    with contextlib.ExitStack() as stack:
        url_b = start_staging(candidate, baseline.persisted, stack).url
        b = asyncio.run(_side("B", url_b, baseline.facts, baseline.plan, baseline.a))
    report = judge(
        Sides(a=baseline.a, a2=baseline.a2, b=b),
        baseline.selection,
        baseline.snapshots,
        ["errand"],
        ShadowOptions(rule=RULE),
        live=baseline.url,
        candidate=str(candidate),
    )
    report.notes += baseline.plan.notes(baseline.selection.chosen)
    return report


TESTED = {
    "test_the_same_code_passes_with_the_held_work_driven": "same",
    "test_a_safe_edit_of_what_held_runs_and_crons_do_passes": "wording",
    "test_a_held_runs_stored_input_the_candidate_refuses_blocks_naming_the_run": "attachments-as-records",
    "test_a_crons_stored_input_the_candidate_refuses_blocks_naming_the_cron": "digest-as-days",
    "test_a_renamed_step_the_errored_threads_retry_needs_blocks_naming_the_thread": "file-renamed",
}
"""Test -> the candidate it judges: only the candidates of the tests selected are served."""


@pytest.fixture(scope="module")
def shadowed(request: pytest.FixtureRequest, baseline: Baseline) -> Iterator[dict[str, Future[GateReport]]]:
    wanted = {
        TESTED[item.originalname]
        for item in request.session.items
        if getattr(item, "module", None) is request.module and item.originalname in TESTED
    }
    with ThreadPoolExecutor(max_workers=2) as pool:
        yield {name: pool.submit(_shadow, baseline, name) for name in CANDIDATES if name in wanted}


def _blocks(report: GateReport) -> list[Any]:
    return [f for f in report.findings if f.severity == "block"]


def test_the_deployed_code_runs_the_held_work_it_was_handed(baseline: Baseline) -> None:
    """Arrange-check: on A, each held run ran on its thread first, in the queue's order, with its stored input;
    each cron fired once; the errored thread was retried, then took a next turn; all of it succeeded."""
    ids = baseline.ids
    busy = baseline.a.threads[ids["busy_thread"]]
    held = [r for r in busy.runs if r.request.kind == "held"]
    assert [r.request.why.split()[2] for r in held] == [ids["busy"], ids["queued"]]
    assert busy.runs[: len(held)] == held and all(r.failed is None for r in busy.runs)
    assert held[1].request.input == {"to": "cy", "attachments": ["b.pdf", "c.pdf"]}
    delayed = baseline.a.threads[ids["delayed_thread"]]
    assert delayed.runs[0].request.kind == "held" and ids["delayed"] in delayed.runs[0].request.why
    assert [r.request.kind for r in delayed.runs] == ["held", "rerun", "turn"]
    errored = baseline.a.threads[ids["errored"]]
    assert [r.request.kind for r in errored.runs] == ["retry", "turn"] and all(r.failed is None for r in errored.runs)
    assert [t.path for t in errored.runs[0].tasks] == ["file", "log"]
    for cron in (ids["cron"], ids["stateless_cron"]):
        (run,) = baseline.a.threads[cron_key(cron)].runs
        assert run.request.kind == "cron" and run.failed is None and run.output["filed"][-1].endswith("digest")


def test_the_same_code_passes_with_the_held_work_driven(shadowed: dict[str, Future[GateReport]], baseline: Baseline) -> None:
    report = shadowed["same"].result(timeout=600)
    assert report.verdict == "pass" and report.findings == [], report.findings
    notes = "\n".join(report.notes)
    assert "held runs driven on every side" in notes and "2 of 2 (" in notes.split("crons fired")[1]
    assert baseline.ids["queued"] in notes and baseline.ids["delayed"] in notes


@pytest.mark.matrix
def test_a_safe_edit_of_what_held_runs_and_crons_do_passes(shadowed: dict[str, Future[GateReport]]) -> None:
    report = shadowed["wording"].result(timeout=600)
    assert report.verdict == "pass" and _blocks(report) == [], _blocks(report)
    assert any(f.code == "SHADOW_OUTPUT_DIFFERS" for f in report.findings)


def test_a_held_runs_stored_input_the_candidate_refuses_blocks_naming_the_run(
    shadowed: dict[str, Future[GateReport]], baseline: Baseline
) -> None:
    ids = baseline.ids
    blocks = _blocks(shadowed["attachments-as-records"].result(timeout=600))
    assert blocks, "the held runs' input is no longer accepted"
    named = {t for f in blocks for t in f.thread_ids}
    assert {ids["busy_thread"], ids["delayed_thread"]} <= named
    assert named.isdisjoint({ids["plain"], ids["errored"], cron_key(ids["cron"])}), named
    assert all("held run" in f.message for f in blocks), [f.message for f in blocks]
    assert any(ids["queued"] in f.message or ids["delayed"] in f.message for f in blocks)


def test_a_crons_stored_input_the_candidate_refuses_blocks_naming_the_cron(
    shadowed: dict[str, Future[GateReport]], baseline: Baseline
) -> None:
    ids = baseline.ids
    blocks = _blocks(shadowed["digest-as-days"].result(timeout=600))
    named = {t for f in blocks for t in f.thread_ids}
    assert named == {cron_key(ids["cron"]), cron_key(ids["stateless_cron"])}, blocks
    assert all("cron " in f.message and "stored payload" in f.message for f in blocks)


@pytest.mark.matrix
def test_a_renamed_step_the_errored_threads_retry_needs_blocks_naming_the_thread(
    shadowed: dict[str, Future[GateReport]], baseline: Baseline
) -> None:
    blocks = _blocks(shadowed["file-renamed"].result(timeout=600))
    assert baseline.ids["errored"] in {t for f in blocks for t in f.thread_ids}, blocks
    assert any("retry" in f.message for f in blocks if baseline.ids["errored"] in f.thread_ids)


@pytest.mark.matrix
def test_check_on_the_same_code_drives_the_held_work_and_passes(baseline: Baseline) -> None:
    """End to end: `playbook check` reads the held work from the live folder (the live server still holds it and
    is busy), drives it on its copies, and passes; its report says what was driven."""
    folder = str(baseline.folder)
    source = ("--live", baseline.url, "--persistence", folder, "--live-code", folder)
    args = ("check", *source, "--candidate", f"{folder}/langgraph.json", "--format", "json")
    done = subprocess.run(
        [sys.executable, "-m", "migrations_playbook", *args],
        capture_output=True,
        text=True,
        timeout=600,
        env={k: v for k, v in os.environ.items() if k not in BUSY_ENV},
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert [f for f in report["findings"] if f["severity"] == "block"] == [] and report["unproven"] == []
    notes = "\n".join(report["notes"])
    assert baseline.ids["queued"] in notes and "crons fired once on every side" in notes
