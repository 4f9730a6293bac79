"""`playbook shadow` end to end: the CLI, real `langgraph dev` servers, this repo's four graphs.

* identity: this repo's graphs against themselves (every graph with live threads at mixed positions:
  a paused ticket, a finished one, multi-turn campus, fan_room through a run context and through an
  assistant, recycling_guide after several turns) give no finding at all, and the live folder is
  byte-identical afterwards;
* a real breaking change to this repo (ticket_triage's typed approval renamed) is blocked with the
  paused tickets named, from ``--live-ref`` (a git worktree of the deployed commit);
* bad input: exit 2 with one line, nothing changed.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk import get_client

from migrations_playbook.staging.server import DevServer
from tests.conftest import REPO_ROOT
from tests.integration.background import Background
from tests.integration.background import ahead as run_ahead

pytestmark = pytest.mark.integration

ENV = {"MODEL": "offline", "OFFLINE_TOKEN_DELAY_MS": "0"}


@dataclass(frozen=True)
class Live:
    url: str
    workdir: Path
    threads: dict[str, str]


def _user(text: str) -> dict:
    return {"messages": [{"role": "user", "content": text}]}


async def _populate(url: str) -> dict[str, str]:
    client = get_client(url=url)
    ids: dict[str, str] = {}

    async def thread(name: str) -> str:
        ids[name] = (await client.threads.create())["thread_id"]
        return ids[name]

    try:
        paused = await thread("ticket_paused")
        await client.runs.wait(paused, "ticket_triage", input=_user("Please refund the double charge on my invoice"))
        done = await thread("ticket_done")
        await client.runs.wait(done, "ticket_triage", input=_user("Please refund the double charge on my invoice"))
        await client.runs.wait(done, "ticket_triage", command={"resume": {"kind": "plan_approval", "answer": "approve"}})
        campus = await thread("campus")
        for text in ("3층 좌석 남았어?", "오늘 학식 메뉴 뭐야?"):
            await client.runs.wait(campus, "campus_supervisor", input=_user(text))
        fan = await thread("fan_context")
        await client.runs.wait(fan, "fan_room", input=_user("LG 트윈스 역사 알려줘"), context={"team_name": "LG"})
        assistant = await client.assistants.create("fan_room", context={"team_name": "한화 이글스"}, name="hanwha-fan")
        fan2 = await thread("fan_assistant")
        await client.runs.wait(fan2, assistant["assistant_id"], input=_user("한화는?"))
        recycling = await thread("recycling")
        for text in ("페트병 어떻게 버려?", "라벨은?"):
            await client.runs.wait(recycling, "recycling_guide", input=_user(text))
    finally:
        await client.aclose()
    return ids


def _digest(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*")) if p.is_file()
    }


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    workdir = tmp_path_factory.mktemp("shadow-live")
    with DevServer(REPO_ROOT / "langgraph.json", workdir, env=ENV) as server:
        threads = asyncio.run(_populate(server.url))
    # Restarted after the graceful stop, which wrote every checkpoint: the live server the shadow reads.
    with DevServer(REPO_ROOT / "langgraph.json", workdir, env=ENV) as server:
        yield Live(server.url, workdir, threads)


Runs = Background[Any]
"""The module's `check` and `shadow` runs, two at a time in the background (tests/integration/background.py)."""


@pytest.fixture(scope="module")
def ahead(request: pytest.FixtureRequest, live: Live, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:
    """Each is mostly waiting on servers; a test reads its own (its assertions, where they run in the job, fail it)."""
    git_ref, urls, relay = (tmp_path_factory.mktemp(name) for name in ("git-ref", "staging-urls", "relay"))
    yield from run_ahead(
        request,
        {
            "test_check_on_this_repos_graphs_against_themselves_gives_no_finding_and_runs_every_thread": lambda: _identity_check(
                live
            ),
            "test_a_breaking_change_to_this_repo_is_blocked_from_a_git_ref": lambda: _shadow_from_git_ref(live, git_ref),
            "test_a_staging_url_pair_is_compared_and_a_breaking_candidate_blocked": lambda: _staging_url_pair(live, urls),
            "test_identity_with_openai_behind_the_relay_gives_no_finding_and_replays_every_model_call": lambda: (
                _identity_behind_the_relay(relay)
            ),
        },
    )


def _playbook(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "migrations_playbook", *args],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=cwd,
        env={**os.environ, **(env or {})},
    )


# `make test` runs identity on these threads through `check` (next test: the same shadow, every thread run,
# the live folder unchanged, and the gate's rules besides); `shadow` alone on them is in `make test-matrix`.
@pytest.mark.matrix
def test_identity_on_this_repos_graphs_gives_no_finding_and_leaves_the_live_folder_as_it_was(live: Live) -> None:
    before = _digest(live.workdir / ".langgraph_api")
    result = _playbook(
        "shadow",
        "--live",
        live.url,
        "--persistence",
        str(live.workdir),
        "--live-code",
        str(REPO_ROOT),
        "--candidate",
        str(REPO_ROOT / "langgraph.json"),
        "--all",
        "--format",
        "json",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert (report["command"], report["verdict"], report["findings"]) == ("shadow", "pass", [])
    assert report["notes"][0].startswith(f"{len(live.threads)} of {len(live.threads)} thread(s) run on both codes")
    assert not any(n.startswith("thread ") and "not run" in n for n in report["notes"]), report["notes"]
    assert _digest(live.workdir / ".langgraph_api") == before


def _identity_check(live: Live) -> tuple[subprocess.CompletedProcess[str], dict[str, str], dict[str, str]]:
    """`check` of this repo's graphs against themselves, with the live folder's digest before and after."""
    before = _digest(live.workdir / ".langgraph_api")
    result = _playbook(
        "check",
        "--live",
        live.url,
        "--persistence",
        str(live.workdir),
        "--live-code",
        str(REPO_ROOT),
        "--candidate",
        str(REPO_ROOT / "langgraph.json"),
        "--all",
        "--format",
        "json",
    )
    return result, before, _digest(live.workdir / ".langgraph_api")


def test_check_on_this_repos_graphs_against_themselves_gives_no_finding_and_runs_every_thread(ahead: Runs) -> None:
    """Identity through `playbook check` (issue 36): the gate's rules and the shadow, no flag to answer the
    questions, every thread run (none unproven), nothing to report."""
    result, before, after = ahead.result(
        "test_check_on_this_repos_graphs_against_themselves_gives_no_finding_and_runs_every_thread"
    )
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert (report["command"], report["verdict"], report["findings"], report["unproven"]) == ("check", "pass", [], [])
    assert after == before


def _repo_with_a_breaking_change(root: Path) -> Path:
    """A git repository holding this repo's graphs at HEAD, and a working tree where ticket_triage's
    plan approval is renamed (the paused tickets' answer no longer fits)."""
    repo = root / "repo"
    shutil.copytree(
        REPO_ROOT,
        repo,
        ignore=shutil.ignore_patterns(
            ".venv", ".git", "__pycache__", ".langgraph_api", "*.egg-info", ".mypy_cache", ".ruff_cache"
        ),
    )
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    subprocess.run([*git, "add", "-A"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "deployed"], cwd=repo, check=True)
    replies = repo / "graphs" / "ticket_triage"
    changed = 0
    for path in replies.rglob("*.py"):
        text = path.read_text()
        if '"plan_approval"' in text:
            path.write_text(text.replace('"plan_approval"', '"plan_signoff"'))
            changed += 1
    assert changed, "ticket_triage no longer names plan_approval: update this test"
    return repo / "langgraph.json"


def _shadow_from_git_ref(live: Live, root: Path) -> tuple[Path, subprocess.CompletedProcess[str]]:
    candidate = _repo_with_a_breaking_change(root)
    return candidate, _playbook(
        "shadow",
        "--live",
        live.url,
        "--persistence",
        str(live.workdir),
        "--live-ref",
        "HEAD",
        "--candidate",
        str(candidate),
        "--graph",
        "ticket_triage",
        "--all",
        "--format",
        "json",
    )


def test_a_breaking_change_to_this_repo_is_blocked_from_a_git_ref(live: Live, ahead: Runs) -> None:
    candidate, result = ahead.result("test_a_breaking_change_to_this_repo_is_blocked_from_a_git_ref")
    assert result.returncode == 1, result.stdout + result.stderr
    report = json.loads(result.stdout)
    blocks = [f for f in report["findings"] if f["severity"] == "block"]
    assert {t for f in blocks for t in f["thread_ids"]} >= {live.threads["ticket_paused"]}, blocks
    worktrees = subprocess.run(["git", "worktree", "list"], cwd=candidate.parent, capture_output=True, text=True, check=True)
    assert len(worktrees.stdout.splitlines()) == 1, worktrees.stdout  # the throwaway worktree is gone


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--candidate", "{repo}/langgraph.json", "--live-code", "{repo}"], "--persistence DIR"),
        (["--candidate", "{repo}/langgraph.json", "--persistence", "{work}"], "--live-code DIR or --live-ref"),
        (["--candidate", "{repo}/langgraph.json", "--staging-url", "{url}"], "two or three servers"),
        (["--candidate", "{repo}/nope.json", "--persistence", "{work}", "--live-code", "{repo}"], "no such file"),
        (["--candidate", "{repo}/langgraph.json", "--persistence", "{work}", "--live-code", "/nonexistent"], "no such file"),
        (
            ["--candidate", "{repo}/langgraph.json", "--persistence", "{empty}", "--live-code", "{repo}"],
            "no langgraph dev persistence",
        ),
        (
            ["--candidate", "{repo}/langgraph.json", "--persistence", "{work}", "--live-code", "{repo}", "--turn-input", "x"],
            "GRAPH=JSON",
        ),
    ],
)
def test_bad_input_is_exit_2_with_one_line_and_changes_nothing(live: Live, tmp_path: Path, args: list[str], says: str) -> None:
    before = _digest(live.workdir / ".langgraph_api")
    (tmp_path / "empty").mkdir()
    values = {"repo": str(REPO_ROOT), "work": str(live.workdir), "url": live.url, "empty": str(tmp_path / "empty")}
    result = _playbook("shadow", "--live", live.url, *(a.format(**values) for a in args))
    assert result.returncode == 2, result.stdout + result.stderr
    assert says in result.stderr and "Traceback" not in result.stderr, result.stderr
    assert _digest(live.workdir / ".langgraph_api") == before


def test_identity_with_openai_behind_the_relay_gives_no_finding_and_replays_every_model_call(ahead: Runs) -> None:
    ahead.result("test_identity_with_openai_behind_the_relay_gives_no_finding_and_replays_every_model_call")


def _identity_behind_the_relay(tmp_path: Path) -> None:
    """Every graph on ChatOpenAI (langchain-openai's real client) against the OpenAI stand-in: the shadow
    records A's model calls through its relay and answers A2's and the candidate's from the recording.
    The config's own .env names the stand-in (as a project's .env names its API): the relay must still
    sit in between, so the stand-in sees A's calls only."""
    from tests.integration.test_openai_path_server import GPT
    from tests.openai_standin import OpenAIStandIn

    with OpenAIStandIn() as standin:
        code = tmp_path / "code"
        code.mkdir()
        config = json.loads((REPO_ROOT / "langgraph.json").read_text())
        config["dependencies"] = [str((REPO_ROOT / d).resolve()) for d in config["dependencies"]]
        config["env"] = str(code / ".env")
        (code / ".env").write_text(f"OPENAI_BASE_URL={standin.base_url}\nOPENAI_API_KEY=sk-standin-dummy\n")
        (code / "langgraph.json").write_text(json.dumps(config, indent=2))
        workdir = tmp_path / "live"
        env = {"NO_PROXY": "127.0.0.1,localhost", "MODEL": GPT}  # the deployment's environment (tests pin MODEL=offline)
        with DevServer(code / "langgraph.json", workdir, env=env) as server:
            threads = asyncio.run(_populate(server.url))
        before = len(standin.requests)
        assert before > len(threads)  # the live threads were made through the stand-in
        with DevServer(code / "langgraph.json", workdir, env=env) as server:
            result = _playbook(
                "shadow",
                "--live",
                server.url,
                "--persistence",
                str(workdir),
                "--live-code",
                str(code),
                "--candidate",
                str(code / "langgraph.json"),
                "--all",
                "--format",
                "json",
                env=env,
            )
        assert result.returncode == 0, result.stdout + result.stderr
        report = json.loads(result.stdout)
        assert (report["verdict"], report["findings"]) == ("pass", []), report["findings"]
        recorded = [n for n in report["notes"] if n.startswith("model calls:")]
        assert recorded and "recorded on the deployed code" in recorded[0], report["notes"]
        assert not [n for n in report["notes"] if n.startswith("model call only")], report["notes"]
        calls = int(recorded[0].split()[2])
        assert len(standin.requests) - before == calls  # A2 and the candidate never reached the model


def test_a_staging_url_pair_is_compared_and_a_breaking_candidate_blocked(ahead: Runs) -> None:
    ahead.result("test_a_staging_url_pair_is_compared_and_a_breaking_candidate_blocked")


def _staging_url_pair(live: Live, tmp_path: Path) -> None:
    """Servers the user restored from a snapshot (here: copies of the live folder, started beforehand):
    A serves the deployed code, B the candidate, A2 the deployed code again."""
    import contextlib

    from migrations_playbook.staging.live_copy import start_staging

    candidate = _repo_with_a_breaking_change(tmp_path)
    with contextlib.ExitStack() as stack:
        url_a = start_staging(REPO_ROOT / "langgraph.json", live.workdir, stack, env=ENV).url
        url_b = start_staging(candidate, live.workdir, stack, env=ENV).url
        url_a2 = start_staging(REPO_ROOT / "langgraph.json", live.workdir, stack, env=ENV).url
        common = ["--live", live.url, "--graph", "ticket_triage", "--all", "--format", "json", "--candidate", str(candidate)]
        result = _playbook("shadow", *common, "--staging-url", url_a, "--staging-url", url_b, "--staging-url", url_a2)
    assert result.returncode == 1, result.stdout + result.stderr
    report = json.loads(result.stdout)
    blocks = [f for f in report["findings"] if f["severity"] == "block"]
    assert live.threads["ticket_paused"] in {t for f in blocks for t in f["thread_ids"]}, blocks
    assert any("staging servers were given" in n for n in report["notes"]), report["notes"]
