"""What the server does with its stored files across a restart (issue 26, items 5-6).

* **Never start empty.** langgraph-runtime-inmem 0.36.7 deleted ``.langgraph_ops.pckl``
  when it could not unpickle it (a class the data names is gone after a code change or
  a library upgrade, a damaged file) and started with no threads; a truncated pickle
  was taken for an empty one. Now the server refuses to start with one error naming the
  file and the cause, and leaves every file byte-identical; the same for the record
  journal (``records.sqlite``) and the checkpoint database (``checkpoints.sqlite``)
  (server/persistence/stored_data.py, ``check_stored_data``). Put the file back and the
  server starts with everything.
* **Store writes are durable before the server answers.** The runtime pickled the
  store every 10 s, so items written just before a SIGKILL were gone after the
  restart; now each write is journaled before it returns.

One folder of real data is made once (a paused ticket, a chat, a store item, stopped
gracefully); each damaged variant is a copy of it.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import shutil
import sqlite3
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk.client import LangGraphClient

from migrations_playbook.staging.server import DevServer, ServerStartError
from tests.conftest import REPO_ROOT
from tests.integration.crashing import kill as _kill
from tests.integration.crashing import run_with_client as _run

CONFIG = REPO_ROOT / "langgraph.json"
ENV = {"MODEL": "offline"}
SERVER_ONLY_SETTINGS = ("REDIS_URI", "DATABASE_URI", "MIGRATIONS_PATH")
"""Settings langgraph_api.config requires at import, which the server's CLI sets (empty for `langgraph dev`)."""
REFUND = {"messages": [{"role": "user", "content": "Please refund the double charge on my invoice"}]}


def _digests(folder: Path) -> dict[str, str]:
    api = folder / ".langgraph_api"
    return {str(p.relative_to(api)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(api.rglob("*")) if p.is_file()}


# -- item 6: store writes survive a SIGKILL -------------------------------------------------------


def test_store_items_written_just_before_a_kill_are_there_after_the_restart(
    server_factory: type[DevServer], tmp_path: Path
) -> None:
    server = server_factory(CONFIG, tmp_path, env=ENV).start()

    async def write(client: LangGraphClient) -> None:
        await client.store.put_item(["notes"], "gone", {"text": "deleted before the kill"})
        for n in range(5):
            await client.store.put_item(["notes"], f"note-{n}", {"n": n})
        await client.store.put_item(["notes"], "note-0", {"n": 0, "edited": True})
        await client.store.delete_item(["notes"], "gone")

    _run(server, write)
    _kill(server)  # within a second of the last answer: the runtime's 10 s flush has not run
    server.start()

    async def read(client: LangGraphClient) -> None:
        found = await client.store.search_items(["notes"], limit=50)
        assert {i["key"]: i["value"] for i in found["items"]} == {
            "note-0": {"n": 0, "edited": True},
            **{f"note-{n}": {"n": n} for n in range(1, 5)},
        }
        assert await client.store.get_item(["notes"], "gone") is None

    _run(server, read)
    _kill(server)  # again, right after the restart laid the journal over the pickle
    server.start()
    _run(server, read)


# -- item 5: never start empty --------------------------------------------------------------------


@pytest.fixture(scope="module")
def stored_folder(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """A server folder with real data, stopped gracefully: a paused ticket, a chat turn, a store item."""
    folder = tmp_path_factory.mktemp("stored")
    with DevServer(CONFIG, folder, env=ENV) as server:

        async def fill(client: LangGraphClient) -> dict[str, Any]:
            ticket = (await client.threads.create())["thread_id"]
            await client.runs.wait(ticket, "ticket_triage", input=REFUND)
            chat = (await client.threads.create())["thread_id"]
            await client.runs.wait(chat, "recycling_guide", input={"messages": [{"role": "user", "content": "유리병은?"}]})
            await client.store.put_item(["notes"], "kept", {"text": "a note"})
            return {"ticket": ticket, "chat": chat}

        made = _run(server, fill)
    return folder, made


def _gone_class_instance() -> tuple[Any, Callable[[], None]]:
    """An object of a class whose module is gone once ``forget()`` runs (a renamed or removed module)."""
    name = "graphs.retired_turn_state"
    module = types.ModuleType(name)

    class RetiredTurn:
        pass

    RetiredTurn.__module__ = name
    RetiredTurn.__qualname__ = "RetiredTurn"
    module.RetiredTurn = RetiredTurn  # type: ignore[attr-defined]  # a module made up for the test
    sys.modules[name] = module
    return RetiredTurn(), lambda: sys.modules.pop(name, None)


def _ops_with_a_gone_class(api: Path) -> str:
    path = api / ".langgraph_ops.pckl"
    data = pickle.loads(path.read_bytes())
    retired, forget = _gone_class_instance()
    data["threads"][0]["metadata"]["turn_state"] = retired
    path.write_bytes(pickle.dumps(data, 2))
    forget()
    return "No module named 'graphs.retired_turn_state'"


def _ops_truncated(api: Path) -> str:
    path = api / ".langgraph_ops.pckl"
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    return "truncated"


def _record_row_with_a_gone_class(api: Path) -> str:
    retired, forget = _gone_class_instance()
    record = pickle.dumps(({"thread_id": "x", "metadata": {"turn_state": retired}}, []))
    forget()
    with sqlite3.connect(api / "records.sqlite") as conn:
        conn.execute(
            "INSERT INTO threads (thread_id, seq, record) VALUES (?, ?, ?)",
            ("00000000-0000-4000-8000-000000000001", 1, record),
        )
    conn.close()
    return "No module named 'graphs.retired_turn_state'"


def _checkpoints_truncated(api: Path) -> str:
    path = api / "checkpoints.sqlite"
    with path.open("r+b") as file:
        file.truncate(path.stat().st_size // 2)
    return "database disk image is malformed"


DAMAGE = [
    pytest.param(".langgraph_ops.pckl", _ops_with_a_gone_class, id="records-pickle-names-a-gone-class"),
    pytest.param(".langgraph_ops.pckl", _ops_truncated, id="records-pickle-truncated"),
    pytest.param("records.sqlite", _record_row_with_a_gone_class, id="journal-row-names-a-gone-class"),
    pytest.param("checkpoints.sqlite", _checkpoints_truncated, id="checkpoint-database-truncated"),
]


@pytest.mark.parametrize(("damaged", "damage"), DAMAGE)
def test_a_stored_file_the_server_cannot_read_stops_it_and_changes_nothing(
    stored_folder: tuple[Path, dict[str, Any]],
    tmp_path: Path,
    damaged: str,
    damage: Callable[[Path], str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in SERVER_ONLY_SETTINGS:  # the records name langgraph_api's classes, whose config wants these
        monkeypatch.setenv(name, os.environ.get(name, ""))
    folder = tmp_path / "server"
    shutil.copytree(stored_folder[0] / ".langgraph_api", folder / ".langgraph_api")
    cause = damage(folder / ".langgraph_api")
    before = _digests(folder)
    server = DevServer(CONFIG, folder, env=ENV, startup_timeout=90)

    with pytest.raises(ServerStartError):
        server.start()
    server.stop()

    assert _digests(folder) == before, "every stored file is as it was"
    log = server.log_tail(200)
    line = next((line for line in log.splitlines() if "cannot start:" in line), None)
    assert line is not None, log
    assert str(folder / ".langgraph_api" / damaged) in line and cause in line, line


def test_the_same_folder_starts_with_everything_once_the_file_is_back(
    stored_folder: tuple[Path, dict[str, Any]], server_factory: type[DevServer], tmp_path: Path
) -> None:
    folder = tmp_path / "server"
    shutil.copytree(stored_folder[0] / ".langgraph_api", folder / ".langgraph_api")
    good = (folder / ".langgraph_api" / ".langgraph_ops.pckl").read_bytes()
    _ops_truncated(folder / ".langgraph_api")
    with pytest.raises(ServerStartError):
        DevServer(CONFIG, folder, env=ENV, startup_timeout=90).start()
    (folder / ".langgraph_api" / ".langgraph_ops.pckl").write_bytes(good)
    server = server_factory(CONFIG, folder, env=ENV).start()

    async def check(client: LangGraphClient) -> None:
        made = stored_folder[1]
        assert (await client.threads.get(made["ticket"]))["status"] == "interrupted"
        assert (await client.threads.get(made["chat"]))["status"] == "idle"
        assert (await client.store.get_item(["notes"], "kept"))["value"] == {"text": "a note"}

    _run(server, check)
