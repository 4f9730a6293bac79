"""A staging copy runs nothing the proof did not send, and writes nothing next to the live code (issue 36).

The live data of a real `langgraph dev` holds work it has not done yet: a run delayed with
``after_seconds``, a thread busy with a run and another run queued behind it
(``multitask_strategy="enqueue"``), and a cron that is due. The graph sends a mail per run (a line in
outbox.log beside its code). Served from a staging copy, that work used to run there on its own, once
per copy, with the code imported in place from the live folder: the mails landed in the live folder.
Now a copy holds every unfinished run and every cron (reported, not dropped), serves a copy of the
code, and the live folder is unchanged byte for byte.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk import get_client

from migrations_playbook.staging.held import OPS_FILE, RUNTIME_SETTINGS
from migrations_playbook.staging.live_copy import start_staging
from migrations_playbook.staging.server import DevServer
from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.integration

FIXTURE = REPO_ROOT / "tests" / "fixtures" / "held_project"
SETTLE_S = 12.0
"""Long enough for the copy's queue (it polls about every second) and cron scheduler (every 5 s) to act."""


def _files(folder: Path) -> dict[str, str]:
    """Every file under ``folder``, by its sha256."""
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def _make_crons_due(ops: Path) -> None:
    """Arrange: every cron of a stopped server's records is due now (as if its minute had come)."""
    due = (datetime.now(UTC) - timedelta(minutes=5)).isoformat()
    program = (
        "import pickle, sys; from datetime import datetime; p = sys.argv[1]; d = pickle.load(open(p, 'rb'))\n"
        "for c in d['crons']: c['next_run_date'] = datetime.fromisoformat(sys.argv[2])\n"
        "pickle.dump(d, open(p, 'wb'))"
    )
    subprocess.run([sys.executable, "-c", program, str(ops), due], env={**os.environ, **RUNTIME_SETTINGS}, check=True)


async def _live_work(url: str) -> dict[str, Any]:
    """A thread that sent one mail and has one delayed; a busy thread with one queued; a cron on a third."""
    client = get_client(url=url)
    first = await client.threads.create(graph_id="mailer")
    await client.runs.wait(first["thread_id"], "mailer", input={"to": "first"})
    delayed = await client.runs.create(first["thread_id"], "mailer", input={"to": "delayed"}, after_seconds=3600)
    busy_thread = await client.threads.create(graph_id="mailer")
    busy = await client.runs.create(busy_thread["thread_id"], "mailer", input={"to": "busy", "hold_s": 4})
    for _ in range(100):
        if (await client.runs.get(busy_thread["thread_id"], busy["run_id"]))["status"] == "running":
            break
        await asyncio.sleep(0.1)
    queued = await client.runs.create(busy_thread["thread_id"], "mailer", input={"to": "queued"}, multitask_strategy="enqueue")
    cron_thread = await client.threads.create(graph_id="mailer")
    cron = await client.crons.create_for_thread(cron_thread["thread_id"], "mailer", schedule="* * * * *", input={"to": "cron"})
    return {
        "delayed": delayed["run_id"],
        "busy": busy["run_id"],
        "queued": queued["run_id"],
        "busy_thread": busy_thread["thread_id"],
        "cron": cron["cron_id"],
        "first": first["thread_id"],
    }


@pytest.fixture(scope="module")
def live_folder(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """A live project folder whose server was stopped holding work it had not done (its data flushed)."""
    folder = tmp_path_factory.mktemp("held") / "live"
    shutil.copytree(FIXTURE, folder)
    server = DevServer(folder / "langgraph.json", folder)
    with server:
        ids = asyncio.run(_live_work(server.url))
    _make_crons_due(folder / ".langgraph_api" / OPS_FILE)
    return folder, ids


def test_a_staging_copy_holds_every_unfinished_run_and_cron(live_folder: tuple[Path, dict[str, Any]]) -> None:
    folder, ids = live_folder
    before = _files(folder)
    with contextlib.ExitStack() as stack:
        staging = start_staging(folder / "langgraph.json", folder, stack)
        time.sleep(SETTLE_S)
        outbox = staging.workdir / "outbox.log"
        assert outbox.read_text().splitlines() == (folder / "outbox.log").read_text().splitlines()

        async def read() -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]:
            client = get_client(url=staging.url)
            runs = await client.runs.list(ids["busy_thread"]) + await client.runs.list(ids["first"])
            crons = await client.crons.search()
            return runs, crons, await client.threads.get(ids["busy_thread"])

        runs, crons, busy_thread = asyncio.run(read())
        assert [r for r in runs if r["status"] in ("pending", "running")] == []
        assert {r["run_id"] for r in runs}.isdisjoint({ids["delayed"], ids["busy"], ids["queued"]})
        assert [(c["cron_id"], c["enabled"]) for c in crons] == [(ids["cron"], False)]
        assert busy_thread["status"] == "idle"  # at rest at its last checkpoint, as a restart resumes it
        held = staging.held
        assert {r.run_id for r in held.runs} >= {ids["delayed"], ids["queued"]}
        assert [c.cron_id for c in held.crons] == [ids["cron"]]
        assert ids["busy_thread"] in held.threads_at_rest
        note = held.note() or ""
        assert "never run there" in note and ids["cron"] in note
    assert _files(folder) == before  # nothing written into the live folder: the code served was a copy


def test_the_copy_is_the_project_as_it_is_served(live_folder: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    """The copy keeps the project's own langgraph.json (relative paths, module names), and leaves out what a
    checkout does not carry."""
    folder, _ = live_folder
    project = tmp_path / "project"
    shutil.copytree(FIXTURE, project)
    (project / ".venv" / "lib").mkdir(parents=True)
    (project / "__pycache__").mkdir()
    with contextlib.ExitStack() as stack:
        staging = start_staging(project / "langgraph.json", folder, stack)
        assert (staging.workdir / "langgraph.json").read_text() == (FIXTURE / "langgraph.json").read_text()
        assert not (staging.workdir / ".venv").exists() and not (staging.workdir / "__pycache__").exists()
        assert (staging.workdir / "mailer.py").read_text() == (FIXTURE / "mailer.py").read_text()


def test_a_path_outside_the_project_is_served_from_where_it_is(tmp_path: Path) -> None:
    from migrations_playbook.staging.live_copy import served_copy

    (tmp_path / "lib").mkdir()
    project = tmp_path / "app"
    shutil.copytree(FIXTURE, project)
    config = json.loads((project / "langgraph.json").read_text())
    config["dependencies"] = [".", "../lib"]
    config["store"] = {"index": {"embed": "../lib/embed.py:aembed", "dims": 4}}
    config["http"] = {"app": "./mailer.py:graph"}
    (project / "langgraph.json").write_text(json.dumps(config))
    copied = json.loads(served_copy(project / "langgraph.json", tmp_path / "copy").read_text())
    lib = (tmp_path / "lib").resolve()
    assert copied["dependencies"] == [".", str(lib)]
    assert copied["store"]["index"] == {"embed": f"{lib / 'embed.py'}:aembed", "dims": 4}
    assert copied["graphs"] == {"mailer": "./mailer.py:graph"} and copied["http"] == {"app": "./mailer.py:graph"}


JOURNALING = {"backend": "custom", "path": "server.persistence.dev_checkpointer"}
"""This deployment's persistence: each changed thread's record and runs journaled in records.sqlite between two
pickles of the runtime's records."""


def test_a_copy_of_a_running_journaling_server_holds_the_runs_only_its_journal_has(tmp_path: Path) -> None:
    """`check` copies a deployment that is serving. With this repo's persistence, the newest runs are in its
    journal (records.sqlite), not yet in the pickle the hold rewrote; the copy's server laid the journal back at
    start-up and sent the delayed and the queued mail itself. Now the hold lays the journal first, as the server
    does, so the copy holds those runs and sends nothing."""
    folder = tmp_path / "live"
    shutil.copytree(FIXTURE, folder)
    config = json.loads((folder / "langgraph.json").read_text())
    config["dependencies"] = [".", str(REPO_ROOT)]
    config["checkpointer"] = JOURNALING
    (folder / "langgraph.json").write_text(json.dumps(config))
    with DevServer(folder / "langgraph.json", folder) as live, contextlib.ExitStack() as stack:
        ids = asyncio.run(_live_work(live.url))  # its cron rewrote the whole pickle: the runs before it are there

        async def after_the_last_pickle() -> dict[str, str]:
            client = get_client(url=live.url)
            late = await client.runs.create(ids["first"], "mailer", input={"to": "late"}, after_seconds=3600)
            thread = await client.threads.create(graph_id="mailer")
            busy = await client.runs.create(thread["thread_id"], "mailer", input={"to": "late-busy", "hold_s": 8})
            queued = await client.runs.create(
                thread["thread_id"], "mailer", input={"to": "late-queued"}, multitask_strategy="enqueue"
            )
            return {"late": late["run_id"], "late-busy": busy["run_id"], "late-queued": queued["run_id"]}

        late = asyncio.run(after_the_last_pickle())
        staging = start_staging(folder / "langgraph.json", folder, stack)
        time.sleep(SETTLE_S)
        sent = (staging.workdir / "outbox.log").read_text().splitlines()
        assert not {"delayed", "late", "late-busy", "late-queued"} & set(sent), sent  # none is due on the live server yet
        assert {r.run_id for r in staging.held.runs} >= {ids["delayed"], ids["queued"], *late.values()}

        async def unfinished() -> list[dict[str, Any]]:
            client = get_client(url=staging.url)
            runs = await client.runs.list(ids["busy_thread"]) + await client.runs.list(ids["first"])
            return [r for r in runs if r["status"] in ("pending", "running")]

        assert asyncio.run(unfinished()) == []
        assert [c.cron_id for c in staging.held.crons] == [ids["cron"]]
