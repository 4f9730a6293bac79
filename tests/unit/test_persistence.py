"""The local checkpointer (server/persistence/): what langgraph.json names, and where it refuses to run.

The crash behaviour itself needs a real server: tests/integration/test_crash_server.py.
"""

from __future__ import annotations

import importlib
import json
import os
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
import yaml

from server import persistence
from tests.conftest import REPO_ROOT

CONFIG = json.loads((REPO_ROOT / "langgraph.json").read_text())
COMPOSE = yaml.safe_load((REPO_ROOT / "deploy" / "docker-compose.yml").read_text())


def test_langgraph_json_names_the_dev_checkpointer_in_a_form_the_runtime_loads() -> None:
    entry = CONFIG["checkpointer"]
    assert entry == {"backend": "custom", "path": "server.persistence.dev_checkpointer"}
    # langgraph-api 0.16.7 (_checkpointer/_adapter.py `_load_checkpointer`): a path without "/" or
    # ".py:" is split at its last dot, so "module:attr" would look for "persistence:dev_checkpointer".
    module, attr = entry["path"].rsplit(".", 1)
    assert importlib.import_module(module).__dict__[attr] is persistence.dev_checkpointer


def test_importing_the_module_opens_nothing(tmp_path: Path) -> None:
    code = (
        "import sys, server.persistence; "
        "print(sorted(m for m in ('aiosqlite', 'langgraph_runtime_inmem', 'langgraph_api') if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
    assert list(tmp_path.iterdir()) == [], "no .langgraph_api/, no database"


def test_the_database_lives_in_the_servers_own_folder(tmp_path: Path) -> None:
    assert persistence.database_path(tmp_path) == tmp_path / ".langgraph_api" / "checkpoints.sqlite"


@pytest.mark.parametrize("edition", ["postgres", "community"])
async def test_outside_langgraph_dev_it_refuses_to_start_and_names_the_fix(
    edition: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LANGGRAPH_RUNTIME_EDITION", edition)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(persistence.LocalOnlyError, match="LANGGRAPH_CHECKPOINTER without backend/path"):
        async with persistence.dev_checkpointer():
            pass
    assert list(tmp_path.iterdir()) == [], "nothing written"


async def test_the_servers_wrapper_reads_delta_histories_with_the_savers_own_query() -> None:
    """langgraph-api's wrapper (``_CustomCheckpointerAdapter``: a BaseCheckpointSaver that forwards
    what it defines and ``__getattr__`` the rest) would run BaseCheckpointSaver's generic
    `aget_delta_channel_history`, one checkpoint read per step back to a snapshot, without the forward."""
    import aiosqlite
    from langgraph.checkpoint.base import BaseCheckpointSaver
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    class Wrapper(BaseCheckpointSaver[Any]):  # the shape of the server's wrapper
        def __init__(self, inner: BaseCheckpointSaver[Any]) -> None:
            super().__init__()
            self._inner = inner

        async def aget_tuple(self, config: Any) -> Any:
            return await self._inner.aget_tuple(config)

    calls: list[str] = []

    class Recording(AsyncSqliteSaver):
        async def aget_delta_channel_history(self, **kwargs: Any) -> Any:
            calls.append(kwargs["config"]["configurable"]["thread_id"])
            return await super().aget_delta_channel_history(**kwargs)

    persistence._let_the_adapter_call_sync_methods(Wrapper)
    async with aiosqlite.connect(":memory:") as conn:
        wrapper = Wrapper(Recording(conn))
        config: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
        assert await wrapper.aget_delta_channel_history(config=config, channels=["messages"]) == {"messages": {"writes": []}}
    assert calls == ["t"], "the saver's own query ran"


class _Store(dict[str, Any]):
    """The runtime's record store as `_Records` sees it (its wrapping already done)."""

    _journaled = True
    filename = "unused"


def _run(run_id: str, status: str, updated_at: int) -> dict[str, Any]:
    return {"run_id": UUID(run_id), "thread_id": UUID(int=1), "status": status, "updated_at": updated_at, "kwargs": {}}


def test_a_finished_runs_pickle_is_reused_until_its_status_changes() -> None:
    records = persistence._Records(_Store(threads=[], runs=[]), journal=None)
    first = _run("00000000-0000-0000-0000-00000000000a", "success", 1)
    kept = records._pickled_run(first)
    assert records._pickled_run(dict(first)) is kept, "same status and updated_at: the kept pickle"
    assert records._pickled_run({**first, "status": "interrupted", "updated_at": 2}) is not kept
    running = _run("00000000-0000-0000-0000-00000000000b", "running", 1)
    assert records._pickled_run(running) is not records._pickled_run(running), "an unfinished run is pickled every time"
    assert pickle.loads(kept) == first


async def test_journal_rows_of_either_form_are_laid_over_the_records(tmp_path: Path) -> None:
    import aiosqlite

    old = _run("00000000-0000-0000-0000-00000000000a", "success", 1)
    new = {**_run("00000000-0000-0000-0000-00000000000b", "success", 2), "thread_id": UUID(int=2)}
    threads = [{"thread_id": UUID(int=1), "status": "idle"}, {"thread_id": UUID(int=2), "status": "idle"}]
    async with aiosqlite.connect(tmp_path / "records.sqlite", isolation_level=None) as journal:
        await journal.execute("CREATE TABLE threads (thread_id TEXT PRIMARY KEY, seq INTEGER NOT NULL, record BLOB NOT NULL)")
        rows = [
            (str(UUID(int=1)), 1, pickle.dumps((threads[0], [old]))),  # runs as dicts: rows written before runs were kept
            (str(UUID(int=2)), 2, pickle.dumps((threads[1], [pickle.dumps(new)]))),  # runs as their pickles
        ]
        await journal.executemany("INSERT INTO threads VALUES (?, ?, ?)", rows)
        store = _Store(threads=[], runs=[])
        await persistence._journaled_records(store, journal)
    assert store["threads"] == threads
    assert store["runs"] == [old, new]


def test_a_context_schema_is_built_once_per_class_and_every_caller_gets_a_copy() -> None:
    builds: list[Any] = []

    class Graph:  # the shape of langgraph's Pregel, as far as the patch sees it
        def __init__(self, context_schema: Any) -> None:
            self.context_schema = context_schema

        def get_context_jsonschema(self) -> dict[str, Any] | None:
            builds.append(self.context_schema)
            return {"properties": {"team_name": {"type": "string"}}}

    persistence._keep_context_schemas(Graph)
    persistence._keep_context_schemas(Graph)  # applied once
    first = Graph(int).get_context_jsonschema()
    assert first == {"properties": {"team_name": {"type": "string"}}}
    first["properties"].clear()
    assert Graph(int).get_context_jsonschema() == {"properties": {"team_name": {"type": "string"}}}, "a copy each time"
    Graph(str).get_context_jsonschema()
    assert builds == [int, str]


def test_a_threads_records_are_found_by_id_whatever_object_holds_the_id() -> None:
    mine, other = UUID(int=1), UUID(int=2)
    runs = [
        _run("00000000-0000-0000-0000-00000000000a", "success", 1),
        {**_run("00000000-0000-0000-0000-00000000000b", "success", 1), "thread_id": other},
    ]
    store = _Store(threads=[{"thread_id": other}, {"thread_id": UUID(str(mine))}], runs=runs)
    thread, pickled = persistence._Records(store, journal=None)._records_of(mine)
    assert thread == {"thread_id": mine}
    assert [pickle.loads(p) for p in pickled] == [runs[0]]
    store["threads"].insert(0, {"thread_id": "not-a-uuid"})  # the fallback compares it as it is
    assert persistence._Records(store, journal=None)._records_of(other)[0] == {"thread_id": other}
