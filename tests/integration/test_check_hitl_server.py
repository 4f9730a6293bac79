"""Agents built with LangChain 1.x `create_agent` + `HumanInTheLoopMiddleware` (issue 36): `check` answers
the approvals they wait for with no flag, so their threads are proven, not passed unproven.

tests/fixtures/hitl_project's agent pauses before `send_email` until a person decides
(``{"decisions": [...]}``). A real `langgraph dev` holds two threads waiting for that approval and one that
was approved and finished. The shadow derives a decision each action's review config allows; before, every
waiting thread was SHADOW_UNPROVEN and the verdict a PASS that covered none of them.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from langgraph_sdk import get_client

from migrations_playbook.staging.server import DevServer
from tests.conftest import REPO_ROOT
from tests.integration.background import Background, ahead

pytestmark = pytest.mark.integration

FIXTURE = REPO_ROOT / "tests" / "fixtures" / "hitl_project"


async def _threads(url: str) -> list[str]:
    client = get_client(url=url)
    ids = []
    for text in ("tell Kim the report is late", "ask Lee for the invoice", "thank Park for the review"):
        thread = await client.threads.create()
        await client.runs.wait(thread["thread_id"], "assistant", input={"messages": [{"role": "user", "content": text}]})
        ids.append(thread["thread_id"])
    await client.runs.wait(ids[-1], "assistant", command={"resume": {"decisions": [{"type": "approve"}]}})
    return ids


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path, list[str]]]:
    folder = tmp_path_factory.mktemp("hitl") / "live"
    shutil.copytree(FIXTURE, folder)
    with DevServer(folder / "langgraph.json", folder) as server:
        ids = asyncio.run(_threads(server.url))
    with DevServer(folder / "langgraph.json", folder) as server:
        yield server.url, folder, ids


def _check(live: tuple[str, Path, list[str]], candidate: Path) -> tuple[int, dict]:
    url, folder, _ = live
    args = ["check", "--live", url, "--persistence", str(folder), "--live-code", str(folder), "--candidate", str(candidate)]
    result = subprocess.run(
        [sys.executable, "-m", "migrations_playbook", *args, "--all", "--format", "json"],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ},
        check=False,
    )
    assert result.returncode in (0, 1), result.stdout + result.stderr
    return result.returncode, json.loads(result.stdout)


def _variant(tmp_path: Path, old: str, new: str) -> Path:
    project = tmp_path / "candidate"
    shutil.copytree(FIXTURE, project)
    agent = project / "agent.py"
    text = agent.read_text()
    assert old in text
    agent.write_text(text.replace(old, new))
    return project / "langgraph.json"


NARROWED = ('"allowed_decisions": ["approve", "edit", "reject"]', '"allowed_decisions": ["approve", "edit"]')


@pytest.fixture(scope="module")
def checked(
    request: pytest.FixtureRequest, live: tuple[str, Path, list[str]], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Background[tuple[int, dict]]]:
    """The `make test` tests' `check` runs, two at a time in the background (tests/integration/background.py)."""
    narrowed = tmp_path_factory.mktemp("narrowed")
    yield from ahead(
        request,
        {
            "test_the_same_agent_answers_its_approvals_without_flags_and_passes": lambda: _check(
                live, live[1] / "langgraph.json"
            ),
            "test_narrowing_the_decisions_an_approval_allows_is_blocked_though_approve_still_works": lambda: _check(
                live, _variant(narrowed, *NARROWED)
            ),
        },
    )


def test_the_same_agent_answers_its_approvals_without_flags_and_passes(checked: Background[tuple[int, dict]]) -> None:
    code, report = checked.result("test_the_same_agent_answers_its_approvals_without_flags_and_passes")
    assert (code, report["verdict"], report["unproven"]) == (0, "pass", []), report
    assert [f for f in report["findings"] if f["severity"] == "block"] == []


# A breaking change to the agent: `make test` keeps the narrowed decisions (below: the break only the approval's
# review config shows, found by driving the thread once per allowed decision); a tool renamed while its call
# waits is the class of a renamed step the waiting threads still name (test_check_server.py's renamed paused node
# through `check`, test_shadow_classes_server.py's `tool-renamed` under the shadow, both in `make test`), so this
# one is in `make test-matrix`.
@pytest.mark.matrix
def test_a_tool_renamed_while_its_call_waits_for_approval_is_blocked(live: tuple[str, Path, list[str]], tmp_path: Path) -> None:
    candidate = _variant(tmp_path, "def send_email(to: str, body: str) -> str:", "def send_message(to: str, body: str) -> str:")
    text = (candidate.parent / "agent.py").read_text()
    text = text.replace('tool_name: str = "send_email"', 'tool_name: str = "send_message"')
    text = text.replace("tools=[send_email]", "tools=[send_message]").replace('{"send_email":', '{"send_message":')
    (candidate.parent / "agent.py").write_text(text)
    code, report = _check(live, candidate)
    assert (code, report["verdict"]) == (1, "block")
    waiting = set(live[2][:2])
    blocked = {t for f in report["findings"] if f["severity"] == "block" for t in f["thread_ids"]}
    assert waiting <= blocked, report["findings"]


# A changed candidate that passes through check: `make test` keeps test_check_server.py's disproved block;
# this one is in `make test-matrix`.
@pytest.mark.matrix
def test_a_safe_change_to_the_agent_passes(live: tuple[str, Path, list[str]], tmp_path: Path) -> None:
    candidate = _variant(tmp_path, '    """Send an email."""', '    """Send an email to one person."""')
    code, report = _check(live, candidate)
    assert (code, report["verdict"], report["unproven"]) == (0, "pass", []), report


def test_narrowing_the_decisions_an_approval_allows_is_blocked_though_approve_still_works(
    live: tuple[str, Path, list[str]], checked: Background[tuple[int, dict]]
) -> None:
    """A client may still send `reject` to the approvals waiting now: the candidate refuses it. Only the thread
    driven once per allowed decision shows it (approve and edit go through on both codes)."""
    code, report = checked.result("test_narrowing_the_decisions_an_approval_allows_is_blocked_though_approve_still_works")
    assert (code, report["verdict"]) == (1, "block"), report
    blocks = [f for f in report["findings"] if f["severity"] == "block" and f["code"].startswith("SHADOW_")]
    assert set(live[2][:2]) <= {t for f in blocks for t in f["thread_ids"]}, report["findings"]
    assert any("answered with" in f["message"] and "reject" in f["message"] for f in blocks), blocks
