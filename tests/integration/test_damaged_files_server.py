"""A damaged file after a crash stops the start, naming it, or nothing acknowledged is lost (issue 37, item 4).

The tester's report: after a SIGKILL of `langgraph dev`, ``records.sqlite-wal`` overwritten with
garbage of the same size started the server with every thread a 404 and the store item gone;
``checkpoints.sqlite-wal`` damaged brought the threads back without their messages or their
pending approval. SQLite drops every frame of a ``-wal`` from the first whose checksum fails,
without a word. Now the server checks every file it keeps its data in before anything opens
it (server/persistence/integrity.py, against ``.langgraph_api/acknowledged``: what it
acknowledged of each database) and refuses to start with one line naming the file, every
file as it was; where a damaged file loses nothing (SQLite's ``-shm`` index, a pickle this
server never reads), it starts with everything and says what it worked around.

One folder is made once on a real server: a ticket paused at its approval, a chat, store
items, stopped gracefully (so the databases' own files hold data) and written again, then
killed. Each case damages one file of a copy. The check itself runs in this process for
every file and damage (it is what the server runs before its runtime reads anything); a real
server restarts on the cases that show each outcome, and on the intact folder, killed again
and again. Every file of the check without a server: tests/unit/test_integrity.py.
"""

from __future__ import annotations

import hashlib
import os
import random
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk.client import LangGraphClient

from migrations_playbook.staging.server import DevServer, ServerStartError
from server.persistence import StoredDataError
from tests.conftest import REPO_ROOT
from tests.integration.crashing import kill, run_with_client
from tests.integration.refusal import thread_snapshot

CONFIG = REPO_ROOT / "langgraph.json"
ENV = {"MODEL": "offline"}
API = ".langgraph_api"
SERVER_ONLY_SETTINGS = ("REDIS_URI", "DATABASE_URI", "MIGRATIONS_PATH")
"""Settings langgraph_api.config requires at import, which the server's CLI sets: the records name its classes."""
STORE = ("store.pckl", "store.vectors.pckl")
REFUND = {"messages": [{"role": "user", "content": "Please refund the double charge on my invoice"}]}


def _user(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


async def _acknowledged(client: LangGraphClient, made: dict[str, str]) -> dict[str, Any]:
    """Everything a client saw acknowledged: each thread (record, state, history, runs) and the store's items."""
    found = await client.store.search_items(["notes"], limit=50)
    return {
        "threads": {name: await thread_snapshot(client, thread_id) for name, thread_id in made.items()},
        "store": sorted((item["key"], item["value"]) for item in found["items"]),
    }


@pytest.fixture(scope="module")
def killed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str], dict[str, Any]]:
    """A folder of real data, its server killed: the threads' ids and what was acknowledged."""
    folder = tmp_path_factory.mktemp("killed")
    server = DevServer(CONFIG, folder, env=ENV).start()

    async def first(client: LangGraphClient) -> dict[str, str]:
        ticket = (await client.threads.create())["thread_id"]
        await client.runs.wait(ticket, "ticket_triage", input=REFUND)
        chat = (await client.threads.create())["thread_id"]
        await client.runs.wait(chat, "recycling_guide", input=_user("유리병은?"))
        await client.store.put_item(["notes"], "kept", {"text": "a note"})
        return {"ticket": ticket, "chat": chat}

    made = run_with_client(server, first)
    server.stop()
    server.start()

    async def again(client: LangGraphClient) -> dict[str, Any]:
        await client.runs.wait(made["chat"], "recycling_guide", input=_user("페트병은 어떻게 버려?"))
        made["second_ticket"] = (await client.threads.create())["thread_id"]
        await client.runs.wait(made["second_ticket"], "ticket_triage", input=REFUND)
        await client.store.put_item(["notes"], "later", {"text": "written after the restart"})
        return await _acknowledged(client, made)

    seen = run_with_client(server, again)
    kill(server)
    assert seen["threads"]["ticket"]["thread"]["status"] == "interrupted"
    assert len(seen["threads"]["chat"]["state"]["values"]["messages"]) >= 4
    return folder, made, seen


@pytest.fixture
def copy(killed: tuple[Path, dict[str, str], dict[str, Any]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in SERVER_ONLY_SETTINGS:
        monkeypatch.setenv(name, os.environ.get(name, ""))
    shutil.copytree(killed[0] / API, tmp_path / API)
    return tmp_path


def _digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted((folder / API).iterdir())}


def _contents(folder: Path, scratch: Path) -> dict[str, Any]:
    """What the server reads from a folder: every row SQLite gives (from a copy of database and -wal), each pickle
    it loads (as bytes: the records hold objects that compare by identity)."""
    found: dict[str, Any] = {name: (folder / API / name).read_bytes() for name in (".langgraph_ops.pckl", *STORE)}
    for name in ("records.sqlite", "checkpoints.sqlite"):
        shutil.rmtree(scratch, ignore_errors=True)
        scratch.mkdir()
        for suffix in ("", "-wal"):
            shutil.copyfile(folder / API / f"{name}{suffix}", scratch / f"{name}{suffix}")
        conn = sqlite3.connect(scratch / name)
        tables = [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        found[name] = {table: sorted(conn.execute(f"SELECT * FROM {table}").fetchall(), key=repr) for table in tables}
        conn.close()
    return found


def _truncate(path: Path) -> None:
    with path.open("r+b") as file:
        file.truncate(path.stat().st_size // 2)


def _garbage(path: Path) -> None:
    path.write_bytes(random.Random(path.name).randbytes(path.stat().st_size))


def _torn_page(fill: Callable[[int], bytes]) -> Callable[[Path], None]:
    """A 4096-byte page in the middle of the file overwritten (all of a file smaller than a page)."""

    def tear(path: Path) -> None:
        size = path.stat().st_size
        offset = size // 2 // 4096 * 4096
        with path.open("r+b") as file:
            file.seek(offset)
            file.write(fill(min(4096, size - offset)))

    return tear


DAMAGES = {
    "truncated": _truncate,
    "garbage": _garbage,
    "torn-page-zeros": _torn_page(bytes),
    "torn-page-garbage": _torn_page(random.Random(7).randbytes),
}
FILES = {
    "records.sqlite-wal": "refuses",
    "checkpoints.sqlite-wal": "refuses",
    "records.sqlite": "refuses or starts exactly",
    "checkpoints.sqlite": "refuses or starts exactly",
    "records.sqlite-shm": "starts exactly",
    "checkpoints.sqlite-shm": "starts exactly",
    ".langgraph_ops.pckl": "refuses",
    "store.pckl": "refuses",
    "store.vectors.pckl": "refuses",
    "acknowledged": "refuses or starts exactly",
    ".langgraph_checkpoint.1.pckl": "starts exactly",
    ".langgraph_retry_counter.pckl": "starts exactly",
}
"""Every file a killed `langgraph dev` leaves in ``.langgraph_api/`` (the checkpoint pickles are alike: one of them)."""


def test_the_killed_folder_holds_every_file_the_cases_damage(killed: tuple[Path, dict[str, str], dict[str, Any]]) -> None:
    assert set(FILES) <= {p.name for p in (killed[0] / API).iterdir()}


@pytest.mark.parametrize("damage", DAMAGES)
@pytest.mark.parametrize("name", FILES)
def test_each_damaged_file_stops_the_start_naming_it_or_nothing_is_lost(copy: Path, name: str, damage: str) -> None:
    from server.persistence import read_stored_data  # the check the server runs at start-up, in this process

    intact = _contents(copy, copy / "scratch")
    DAMAGES[damage](copy / API / name)
    before = _digests(copy)
    try:
        started = read_stored_data(copy)
    except StoredDataError as refused:
        assert FILES[name] != "starts exactly", str(refused)
        assert str(refused).startswith(f"cannot start: {copy / API / name} ("), str(refused)
        assert "\n" not in str(refused) and "Nothing was changed" in str(refused)
    else:
        assert FILES[name] != "refuses", f"{name} {damage}: started with {started.notes}"
        assert _contents(copy, copy / "scratch") == intact, "every row and record as written"
    assert _digests(copy) == before, "the check changed nothing"


REFUSED_BY_A_SERVER = [
    pytest.param("records.sqlite-wal", "garbage", "it does not start as a WAL file", id="records-wal-garbage"),
    pytest.param("checkpoints.sqlite-wal", "torn-page-zeros", "a frame fails its checksum", id="checkpoints-wal-torn"),
]


@pytest.mark.parametrize(("name", "damage", "cause"), REFUSED_BY_A_SERVER)
def test_a_server_on_a_damaged_wal_refuses_to_start_and_changes_nothing(copy: Path, name: str, damage: str, cause: str) -> None:
    DAMAGES[damage](copy / API / name)
    before = _digests(copy)
    server = DevServer(CONFIG, copy, env=ENV, startup_timeout=90)
    try:
        with pytest.raises(ServerStartError):
            server.start()
    finally:
        server.stop()  # also when it started after all
    assert _digests(copy) == before, "every stored file is as it was"
    lines = [line for line in server.log_tail(300).splitlines() if "cannot start:" in line]
    assert len(lines) == 1, server.log_tail(60)
    assert str(copy / API / name) in lines[0] and cause in lines[0], lines[0]


STARTED_BY_A_SERVER = [
    pytest.param("checkpoints.sqlite-shm", "garbage", "checkpoints.sqlite-shm (SQLite's index", id="checkpoints-shm-garbage"),
    pytest.param(".langgraph_retry_counter.pckl", "garbage", "never reads data from it", id="retry-counter-garbage"),
]


@pytest.mark.parametrize(("name", "damage", "said"), STARTED_BY_A_SERVER)
def test_a_server_starts_on_damage_that_loses_nothing_says_so_and_keeps_everything(
    killed: tuple[Path, dict[str, str], dict[str, Any]],
    copy: Path,
    server_factory: type[DevServer],
    name: str,
    damage: str,
    said: str,
) -> None:
    DAMAGES[damage](copy / API / name)
    server = server_factory(CONFIG, copy, env=ENV).start()
    notes = [line for line in server.log_tail(300).splitlines() if "starting despite a damaged file" in line]
    assert len(notes) == 1 and said in notes[0], server.log_tail(60)
    assert run_with_client(server, lambda client: _acknowledged(client, killed[1])) == killed[2]


def test_a_plain_sigkill_and_restart_keeps_everything_again_and_again(
    killed: tuple[Path, dict[str, str], dict[str, Any]], copy: Path, server_factory: type[DevServer]
) -> None:
    _, made, seen = killed
    server = server_factory(CONFIG, copy, env=ENV).start()
    assert run_with_client(server, lambda client: _acknowledged(client, made)) == seen, "the killed folder, whole"
    for turn in ("라벨은 떼야 해?", "뚜껑은?", "지금까지 뭐 물어봤지?"):

        async def write(client: LangGraphClient, text: str = turn) -> dict[str, Any]:
            await client.runs.wait(made["chat"], "recycling_guide", input=_user(text))
            await client.store.put_item(["notes"], f"turn-{len(text)}", {"text": text})
            return await _acknowledged(client, made)

        seen = run_with_client(server, write)
        kill(server)
        server.start()  # refused, it would raise ServerStartError
        assert "starting despite a damaged file" not in server.log_tail(300)
        assert run_with_client(server, lambda client: _acknowledged(client, made)) == seen

    async def approve(client: LangGraphClient) -> str:
        resumed = await client.runs.wait(
            made["ticket"], "ticket_triage", command={"resume": {"kind": "plan_approval", "answer": "approve"}}
        )
        return str(resumed["approval"]["answer"])

    assert run_with_client(server, approve) == "approve", "the approval paused before the first kill resumes once"
