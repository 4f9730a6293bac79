"""Store items under generated keys (issue 36): identity never blocks, a lost memory still does.

langchain-ai/memory-agent writes every memory under ``uuid4()``; before, the shadow compared store items by
key, so the candidate's copy writing the same memory under another key was SHADOW_DATA_LOST on every run,
whatever the change. A real `langgraph dev` serves tests/fixtures/memory_project; `check` on the same code
passes, and a candidate that stops writing memories is blocked naming the lost content. The project names
its store's embedding function by a relative path (``"embed": "./fake_embed.py:aembed"``), as memory-agent
does: the staging copies serve the project's own langgraph.json, so it resolves (before, the rewritten
staging config lost it and the staging servers did not start: exit 2).
"""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from langgraph_sdk import get_client

from migrations_playbook.staging.server import DevServer
from tests.conftest import REPO_ROOT
from tests.integration.background import Background, ahead
from tests.playbook_cli import run_check

pytestmark = pytest.mark.integration

FIXTURE = REPO_ROOT / "tests" / "fixtures" / "memory_project"


async def _conversations(url: str) -> None:
    client = get_client(url=url)
    for text in ("I like green tea", "I live in Busan"):
        thread = await client.threads.create()
        await client.runs.wait(thread["thread_id"], "memory", input={"messages": [{"role": "user", "content": text}]})


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    folder = tmp_path_factory.mktemp("memory") / "live"
    shutil.copytree(FIXTURE, folder)
    with DevServer(folder / "langgraph.json", folder) as server:
        asyncio.run(_conversations(server.url))
    with DevServer(folder / "langgraph.json", folder) as server:
        yield server.url, folder


def _check(url: str, folder: Path, candidate: Path) -> tuple[int, dict]:
    code, report, stderr = run_check(url, folder, folder, candidate, "--all")
    assert code in (0, 1) and report, stderr
    return code, report


@pytest.fixture(scope="module")
def checked(
    request: pytest.FixtureRequest, live: tuple[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Background[tuple[int, dict]]]:
    """The `check` run of each test that uses it, two at a time in the background (tests/integration/background.py)."""
    url, folder = live
    root = tmp_path_factory.mktemp("candidates")
    jobs = {
        "test_the_same_code_writing_memories_under_generated_keys_passes": lambda: _check(url, folder, folder / "langgraph.json"),
        "test_a_candidate_that_stops_remembering_is_blocked": lambda: _check(url, folder, _forgetful(root)),
        **{
            f"test_a_store_configuration_that_no_longer_finds_the_memories_is_blocked[{name}]": (
                lambda name=name: _check(url, folder, _store_config(root / name, UNSEARCHABLE[name]))
            )
            for name in UNSEARCHABLE
        },
        "test_a_store_ttl_that_keeps_the_items_passes": lambda: _check(url, folder, _store_config(root / "ttl", TTL)),
    }
    yield from ahead(request, jobs)


def test_the_same_code_writing_memories_under_generated_keys_passes(checked: Background[tuple[int, dict]]) -> None:
    code, report = checked.result("test_the_same_code_writing_memories_under_generated_keys_passes")
    assert (code, report["verdict"]) == (0, "pass"), report["findings"]
    assert [f for f in report["findings"] if f["code"] == "SHADOW_DATA_LOST"] == []
    assert any("matched by namespace and content there: memories/user-1" in n for n in report["notes"]), report["notes"]


def _forgetful(root: Path) -> Path:
    """The memory project with its store write removed."""
    candidate = root / "forgetful"
    shutil.copytree(FIXTURE, candidate)
    code_file = candidate / "memory.py"
    text = code_file.read_text()
    assert '    get_store().put(NAMESPACE, str(uuid.uuid4()), {"content": text})\n' in text
    code_file.write_text(text.replace('    get_store().put(NAMESPACE, str(uuid.uuid4()), {"content": text})\n', ""))
    return candidate / "langgraph.json"


def test_a_candidate_that_stops_remembering_is_blocked(checked: Background[tuple[int, dict]]) -> None:
    code, report = checked.result("test_a_candidate_that_stops_remembering_is_blocked")
    assert (code, report["verdict"]) == (1, "block")
    lost = [f for f in report["findings"] if f["code"] == "SHADOW_DATA_LOST" and f["graph_id"] == "(store)"]
    assert lost and all(f["field"].startswith("memories/user-1/<generated key>") for f in lost), lost


def _store_config(tmp_path: Path, store: dict) -> Path:
    candidate = tmp_path / "reconfigured"
    shutil.copytree(FIXTURE, candidate)
    config = json.loads((candidate / "langgraph.json").read_text())
    config["store"] = store
    (candidate / "langgraph.json").write_text(json.dumps(config))
    return candidate / "langgraph.json"


EMBED = "./fake_embed.py:aembed"
UNSEARCHABLE = {
    "index-dropped": {},  # every search comes back unranked
    "index-fields-moved": {"index": {"embed": EMBED, "dims": 4, "fields": ["summary"]}},  # new memories not embedded
}
TTL = {"index": {"embed": EMBED, "dims": 4}, "ttl": {"refresh_on_read": True, "sweep_interval_minutes": 60}}


@pytest.mark.parametrize(
    "name",
    [pytest.param("index-dropped"), pytest.param("index-fields-moved", marks=pytest.mark.matrix)],
)
def test_a_store_configuration_that_no_longer_finds_the_memories_is_blocked(
    checked: Background[tuple[int, dict]], name: str
) -> None:
    """Issue 38: the store searched after the runs as the runs search it (`proof/shadow/store_reads.py`)."""
    code, report = checked.result(f"test_a_store_configuration_that_no_longer_finds_the_memories_is_blocked[{name}]")
    found = [f for f in report["findings"] if f["code"] == "SHADOW_STORE_UNSEARCHABLE"]
    assert (code, [f["severity"] for f in found]) == (1, ["block"]), report["findings"]
    assert "memories/user-1" in found[0]["message"]


@pytest.mark.matrix
def test_a_store_ttl_that_keeps_the_items_passes(checked: Background[tuple[int, dict]]) -> None:
    code, report = checked.result("test_a_store_ttl_that_keeps_the_items_passes")
    assert (code, report["verdict"]) == (0, "pass"), report["findings"]
