"""Identity never blocks (issue 36): every fixture project through `playbook check` against itself.

Each project under tests/fixtures with a langgraph.json is copied, served by a real `langgraph dev`, left
with threads at mixed positions (idle after turns, paused at ``interrupt()`` in a graph or a subgraph, at a
static breakpoint, after a ``Command.PARENT`` handoff between two subgraph agents, through an assistant's
context), stopped gracefully and served again; `check` on the same code must give no block finding and no
unproven thread, with no flag to answer the questions. One live server per project (module-scoped), one
`check` each.

Projects whose identity runs through `check` in another test file are listed in `ELSEWHERE` (this repo's
own langgraph.json too), and `test_every_fixture_project_is_judged_by_check_against_itself` fails when a
project is in neither list, so a new fixture project cannot be left out. The public templates
(react-agent, memory-agent, ...) are judged by tests/public_templates.py (`make test-public`).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from migrations_playbook.staging.server import DevServer
from tests.conftest import REPO_ROOT
from tests.fixtures.gate_projects import class_variants
from tests.fixtures.template_projects import variants as template_variants
from tests.integration.background import Background, ahead

pytestmark = pytest.mark.integration

FIXTURES = REPO_ROOT / "tests" / "fixtures"
AUTH_HEADER = "Authorization: Bearer playbook-reader"
"""The token tests/fixtures/auth_project accepts."""

ELSEWHERE = {
    "(this repo)": "test_shadow_server.py::test_check_on_this_repos_graphs_against_themselves_gives_no_finding_and_runs_"
    "every_thread",
    "gate_projects/v1": "test_check_server.py::test_the_same_code_with_its_questions_answered_passes_with_no_finding",
    "memory_project": "test_check_store_server.py::test_the_same_code_writing_memories_under_generated_keys_passes",
    "hitl_project": "test_check_hitl_server.py::test_the_same_agent_answers_its_approvals_without_flags_and_passes",
    "held_work_project": "test_held_work_server.py::test_check_on_the_same_code_drives_the_held_work_and_passes",
    "config_project": "test_shadow_config_server.py::test_the_same_code_and_configuration_pass_reading_every_thread_as_its_owner",
    "migrated_project": "test_migrated_server.py::test_the_same_code_passes_with_no_finding_every_thread_rebuilt",
}
"""Where identity through `check` is tested (test files in tests/integration) for the projects below tests/fixtures
this file does not serve, and for this repo's langgraph.json (no flag there either,
except v1's answer to its typed approvals, which its payload does not carry)."""


async def _start(client: LangGraphClient, assistant: str, resumes: tuple[Any, ...] = (), **run: Any) -> str:
    thread = (await client.threads.create())["thread_id"]
    await client.runs.wait(thread, assistant, **run)
    for value in resumes:
        await client.runs.wait(thread, assistant, command={"resume": value})
    return thread


async def _inbox(client: LangGraphClient) -> None:
    await _start(client, "handoff", input={"request": "my kettle is broken"})  # paused in support after a handoff
    await _start(client, "handoff", input={"request": "my kettle is broken"}, resumes=("refund",))
    await _start(client, "handoff", input={"request": "a new kettle"})  # no handoff
    await _start(client, "handoff", input={"request": "my lamp is broken"}, interrupt_before=["support"])
    await _start(client, "mail", input={"email": "Where are the docs?"})  # idle: it takes no second email
    await _start(client, "mail", input={"email": "Lunch on Friday?"}, interrupt_before=["reply"])


async def _auth(client: LangGraphClient) -> None:
    await _start(client, "intake", input={"request": "a laptop"})
    await _start(client, "intake", input={"request": "a chair"}, resumes=("yes",))


async def _guard(client: LangGraphClient) -> None:
    await _start(client, "desk", input={"request": "refund"})
    await _start(client, "desk", input={"request": "reset"}, resumes=("yes",))
    await _start(client, "orders", input={"order": "O-1"})
    await _start(client, "gated", input={"doc": "draft"})
    await _start(client, "claims", input={"claim": "C-1", "amount": 5})


async def _held(client: LangGraphClient) -> None:
    await _start(client, "mailer", input={"to": "ana@example.com"})
    await _start(client, "mailer", input={"to": "ben@example.com"}, interrupt_before=["send"])


async def _slow(client: LangGraphClient) -> None:
    await _start(client, "slow_chat", input={"messages": [{"role": "user", "content": "hello"}]})
    await _start(client, "slow_approval", input={"request": "a plan"})


def _one(
    graph: str, payload: dict[str, Any], context: dict[str, Any] | None = None
) -> Callable[[LangGraphClient], Awaitable[None]]:
    """A thread idle after a run, one paused at a breakpoint before its first node, and (given a context) one
    more idle thread run through an assistant holding that context."""

    async def populate(client: LangGraphClient) -> None:
        await _start(client, graph, input=payload, context=context)
        await _start(client, graph, input=payload, context=context, interrupt_before=["*"])
        if context is not None:
            made = await client.assistants.create(graph, context=context)
            await _start(client, made["assistant_id"], input=payload)

    return populate


def _by_url(populate: Callable[[str], Awaitable[Any]]) -> Callable[[LangGraphClient], Awaitable[None]]:
    """A fixture's own ``populate(url)`` (tests/fixtures/*/variants.py)."""

    async def run(client: LangGraphClient) -> None:
        await populate(str(client.http.client.base_url).rstrip("/"))

    return run


@dataclass(frozen=True)
class Project:
    folder: str
    """Below tests/fixtures."""
    populate: Callable[[LangGraphClient], Awaitable[None]]
    src: bool = False
    """Its packages are under ``src/`` (served and judged with ``PYTHONPATH=<copy>/src``)."""
    header: str | None = None
    locks: bool = False
    """Its auth reads the locks in ``contracts/`` (the runtime guard): written into the copy before serving."""
    answers: tuple[str, ...] = ()
    """How its questions are answered where their payloads do not say (`check`'s flags)."""
    in_make_test: bool = False
    """Served in `make test`; the others in `make test-matrix` (about 40 s each here)."""


YES = ("--resume", '"yes"')
"""For questions whose payloads name no options (``{"kind": "approval", ...}``): the answer their own tests give."""

PROJECTS = [
    Project("inbox_project", _inbox, in_make_test=True),
    Project("gate_projects/classes", _by_url(class_variants.populate), answers=YES),
    Project("template_projects/casebook", _by_url(template_variants.populate), src=True, answers=YES, in_make_test=True),
    Project("auth_project", _auth, header=AUTH_HEADER, answers=YES),
    Project("guard_project", _guard, locks=True, answers=YES),
    Project("held_project", _held),
    Project("slow_project", _slow),
    Project("migrate_plans/ctx_v1", _one("ctx_flow", {"request": "hello"}, {"tenant": "acme", "tier": "gold"})),
    Project("layout_projects/loose", _one("greeter", {"name": "Ana"})),
    Project("layout_projects/src_layout", _one("planner", {"destination": "Porto"}, {"home_city": "Faro"}), src=True),
    Project("layout_projects/src_namespace", _one("tour", {"city": "Braga"}), src=True),
    Project("layout_projects/dependency_path", _one("cook", {"dish": "soup"})),
]


NOT_SERVED = {
    "layout_projects/flat_package": "`langgraph dev` cannot load ./shelf_agent/graph.py (a relative import in a file "
    "it loads by path); the layout is the candidate loader's (tests/unit/test_candidate_layouts.py)",
}
"""Fixture projects no `langgraph dev` serves, so no live thread can rest on them."""


def test_every_fixture_project_is_judged_by_check_against_itself() -> None:
    projects = {str(p.parent.relative_to(FIXTURES)) for p in FIXTURES.rglob("langgraph.json")} | {"(this repo)"}
    here = {p.folder for p in PROJECTS}
    assert projects - here - set(ELSEWHERE) - set(NOT_SERVED) == set()
    assert (here | set(ELSEWHERE) | set(NOT_SERVED)) - projects == set(), "a listed project has no langgraph.json"


def _env(project: Project, copy: Path) -> dict[str, str]:
    if not project.src:
        return {}
    return {"PYTHONPATH": os.pathsep.join(filter(None, [str(copy / "src"), os.environ.get("PYTHONPATH", "")]))}


async def _populate(project: Project, url: str) -> None:
    headers = dict([project.header.split(": ", 1)]) if project.header else None
    client = get_client(url=url, headers=headers)
    try:
        await project.populate(client)
    finally:
        await client.aclose()


IDENTITY = "test_identity_through_check_gives_no_block_and_no_unproven_thread"


@pytest.fixture(scope="module")
def judged(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Background[Judged]]:
    """Each selected project served and judged by `check`, two projects at a time in the background (each is mostly
    waiting on its servers: tests/integration/background.py)."""
    root = tmp_path_factory.mktemp("identity")
    yield from ahead(request, {f"{IDENTITY}[{p.folder}]": partial(_serve_and_check, p, root) for p in PROJECTS})


Judged = tuple[subprocess.CompletedProcess[str], dict[str, Any]]
"""`check`'s run on the project's live server, and its JSON report."""


def _serve_and_check(project: Project, root: Path) -> Judged:
    """The project copied, served, left with threads, stopped gracefully and served again; `check` on it."""
    copy = root / project.folder.replace("/", "_") / Path(project.folder).name
    shutil.copytree(FIXTURES / project.folder, copy, ignore=shutil.ignore_patterns(".langgraph_api", "__pycache__", "outbox.log"))
    env = _env(project, copy)
    if project.locks:
        records = copy.parent / "records"
        args = ["contract", "--config", str(copy / "langgraph.json"), "--write", "--contracts-dir", str(copy / "contracts")]
        done = _playbook(*args, "--records-dir", str(records), env=env)
        assert done.returncode == 0, done.stdout + done.stderr
    with DevServer(copy / "langgraph.json", copy, env=env) as server:
        asyncio.run(_populate(project, server.url))
    # Restarted after the graceful stop, which wrote every checkpoint: the live server `check` reads.
    with DevServer(copy / "langgraph.json", copy, env=env) as server:
        args = ["check", "--live", server.url, "--persistence", str(copy), "--live-code", str(copy)]
        args += ["--candidate", str(copy / "langgraph.json")]
        if project.header:
            args += ["--header", project.header]
        args += project.answers
        result = _playbook(*args, "--format", "json", "--no-progress", env=env)
    assert result.returncode in (0, 1), result.stdout + result.stderr
    return result, json.loads(result.stdout)


def _playbook(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "migrations_playbook", *args],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **env},
        check=False,
    )


@pytest.mark.parametrize(
    "project", [pytest.param(p, id=p.folder, marks=() if p.in_make_test else pytest.mark.matrix) for p in PROJECTS]
)
def test_identity_through_check_gives_no_block_and_no_unproven_thread(judged: Background[Judged], project: Project) -> None:
    result, report = judged.result(f"{IDENTITY}[{project.folder}]")
    blocks = [
        f"{f['code']} {f['graph_id']} {f['thread_id']}: {f['message']}" for f in report["findings"] if f["severity"] == "block"
    ]
    assert (blocks, report["unproven"]) == ([], []), json.dumps(report, indent=1)[:6000]
    assert (result.returncode, report["verdict"]) == (0, "pass")
    ran = next(n for n in report["notes"] if "thread(s) run on both codes" in n)
    assert ran.split(" ")[0] != "0", ran
