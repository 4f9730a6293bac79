"""`playbook gate` against a real `langgraph dev` serving a project that is not this repo.

The live side is the v1 fixture project (tests/fixtures/gate_projects/v1) with
threads in each interesting position. Each candidate is v1 with one change,
made by text edits (tests/fixtures/gate_projects/variants.py), so every variant differs from v1 by exactly
the change its id names.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import shutil
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import pytest
from langgraph_sdk import get_client

from migrations_playbook.cli import main
from migrations_playbook.staging.server import DevServer
from tests.fixtures.gate_projects.variants import (
    BREAKING,
    HELPDESK_TRIAGE_RENAMED,
    SAFE,
    V1,
    WARN_ONLY,
    expected_ids,
    make_variant,
    populate,
)
from tests.playbook_cli import playbook


@dataclass(frozen=True)
class LiveProject:
    url: str
    project: Path
    """The live server's working folder (its .langgraph_api/ is what replay copies)."""
    locks: Path
    threads: dict[str, list[str]]
    """position -> thread ids."""


_playbook = partial(playbook, timeout=300)


@pytest.fixture(scope="module")
def live_v1(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("gate-live")
    project = root / "v1"
    shutil.copytree(V1, project)
    locks = root / "v1-locks"
    written = _playbook("contract", "--config", str(project / "langgraph.json"), "--write", "--contracts-dir", str(locks))
    assert written.returncode == 0, written.stderr
    with DevServer(project / "langgraph.json", project) as server:
        threads = asyncio.run(populate(server.url))
    # A graceful stop writes every checkpoint to .langgraph_api/ (what replay copies);
    # the restarted server must still hold every thread (durability across restarts).
    with DevServer(project / "langgraph.json", project) as server:
        yield LiveProject(url=server.url, project=project, locks=locks, threads=threads)


def _gate(live: LiveProject, candidate: Path, *extra: str, live_contract: bool = True) -> tuple[int, dict]:
    """``playbook gate --format json`` in-process through the CLI's `main` (a subprocess costs
    seconds of imports per variant; the candidate loader drops the previous variant's modules).
    Without ``live_contract`` the gate has no lock of the live code (the fixture server serves none)."""
    argv = [
        "gate",
        "--live",
        live.url,
        "--candidate",
        str(candidate),
        "--format",
        "json",
        *(["--live-contract", str(live.locks)] if live_contract else []),
        *extra,
    ]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    assert code in (0, 1), err.getvalue()
    assert "Traceback" not in err.getvalue()
    return code, json.loads(out.getvalue())


@pytest.mark.parametrize(
    ("edits", "extra", "exit_code", "expected"), [*BREAKING.values(), *WARN_ONLY.values()], ids=[*BREAKING, *WARN_ONLY]
)
def test_change_is_reported_with_code_and_thread_ids(
    live_v1: LiveProject, tmp_path: Path, edits, extra, exit_code, expected
) -> None:
    code, report = _gate(live_v1, make_variant(tmp_path, "candidate", edits), *extra)
    assert code == exit_code, report
    assert report["gate_result_version"] == "1"
    assert report["verdict"] == ("block" if exit_code else "pass")
    got = {(f["code"], f["severity"], f["graph_id"], f["node"], f["field"]): f for f in report["findings"]}
    for finding_code, severity, graph, node, field, position in expected:
        key = (finding_code, severity, graph, node, field)
        assert key in got, f"missing {key}; got {sorted(got)}"
        assert set(got[key]["thread_ids"]) == expected_ids(live_v1.threads, position)
        assert got[key]["thread_count"] == len(expected_ids(live_v1.threads, position))
        assert got[key]["thread_id"] in got[key]["thread_ids"]
    unexpected_blocks = {k for k in got if k[1] == "block"} - {e[:5] for e in expected}
    assert not unexpected_blocks


@pytest.mark.parametrize("edits", list(SAFE.values()), ids=list(SAFE))
def test_safe_change_passes_with_no_finding(live_v1: LiveProject, tmp_path: Path, edits) -> None:
    code, report = _gate(live_v1, make_variant(tmp_path, "candidate", edits))
    assert (code, report["verdict"]) == (0, "pass")
    assert report["findings"] == []
    assert report["graphs"]["helpdesk"]["threads_scanned"] == 3
    assert report["graphs"]["helpdesk"]["by_status"] == {"idle": 1, "interrupted": 2}


def test_unchanged_code_passes_in_every_format(live_v1: LiveProject) -> None:
    candidate = V1 / "langgraph.json"
    code, report = _gate(live_v1, candidate)
    assert code == 0 and report["findings"] == []
    for fmt, marker in (("table", "PASS"), ("markdown", "**Gate verdict: pass**")):
        result = _playbook(
            "gate", "--live", live_v1.url, "--candidate", str(candidate), "--format", fmt, "--live-contract", str(live_v1.locks)
        )
        assert result.returncode == 0 and marker in result.stdout, result.stderr


def test_without_live_contract_unverifiable_checks_are_warnings(live_v1: LiveProject) -> None:
    """No lock of the live code: reducers and the call order of the paused interrupt() nodes
    cannot be seen through the API; the gate says so (warn) instead of passing silently."""
    result = _playbook("gate", "--live", live_v1.url, "--candidate", str(V1 / "langgraph.json"), "--format", "json")
    report = json.loads(result.stdout)
    assert result.returncode == 0
    assert {(f["code"], f["severity"], f["node"]) for f in report["findings"]} == {
        ("REDUCER_UNVERIFIED", "warn", None),
        ("CALL_ORDER_UNVERIFIED", "warn", "triage"),
        ("CALL_ORDER_UNVERIFIED", "warn", "review:confirm"),
    }


def test_without_live_contract_a_read_of_a_key_the_live_schema_never_had_blocks(live_v1: LiveProject, tmp_path: Path) -> None:
    """No lock, but the server serves the live graph's schemas (`assistants.get_schemas`): v1's
    helpdesk state never had `summary`, so no live thread holds it and `respond` (ahead of the
    threads paused at triage) fails with a KeyError on resume: a block, not a warning."""
    edits = BREAKING["required-key-read-ahead"][0]
    code, report = _gate(live_v1, make_variant(tmp_path, "candidate", edits), live_contract=False)
    assert code == 1, report
    assert report["verdict"] == "block"
    found = [f for f in report["findings"] if f["code"] == "FIELD_REQUIRED_MISSING"]
    assert [(f["severity"], f["graph_id"], f["node"], f["field"]) for f in found] == [("block", "helpdesk", None, "summary")]
    assert set(found[0]["thread_ids"]) == expected_ids(live_v1.threads, "helpdesk_at_triage")
    assert "schema never had 'summary'" in found[0]["message"], found[0]["message"]
    assert {f["code"] for f in report["findings"] if f["severity"] == "block"} == {"FIELD_REQUIRED_MISSING"}


def test_gate_does_not_write_to_the_live_server(live_v1: LiveProject, tmp_path: Path) -> None:
    async def snapshot() -> list:
        client = get_client(url=live_v1.url)
        threads = await client.threads.search(limit=100)
        states = [await client.threads.get_history(t["thread_id"], limit=50) for t in threads]
        await client.aclose()
        return sorted((t["thread_id"], t["updated_at"], t["status"]) for t in threads), states

    before = asyncio.run(snapshot())
    _gate(live_v1, make_variant(tmp_path, "candidate", HELPDESK_TRIAGE_RENAMED))
    assert asyncio.run(snapshot()) == before


def test_graph_filter_limits_the_scan(live_v1: LiveProject) -> None:
    code, report = _gate(live_v1, V1 / "langgraph.json", "--graph", "escalation")
    assert code == 0
    assert list(report["graphs"]) == ["escalation"]


@pytest.mark.parametrize(
    ("args", "exit_code", "message"),
    [
        pytest.param(["--candidate", "/nonexistent/langgraph.json"], 2, "candidate config not found", id="missing-config"),
        pytest.param(["--graph", "nope"], 2, "not on the live server", id="unknown-graph"),
        pytest.param(["--format", "yaml"], 2, "invalid choice", id="bad-format"),
    ],
)
def test_usage_errors_exit_2_with_a_message(live_v1: LiveProject, args, exit_code, message) -> None:
    base = {"--live": live_v1.url, "--candidate": str(V1 / "langgraph.json")}
    flags = [*[x for k, v in base.items() if k not in args for x in (k, v)], *args]
    result = _playbook("gate", *flags)
    assert result.returncode == exit_code
    assert message in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("command", ["inflight", "snapshot"])
def test_inflight_and_snapshot_refuse_an_unknown_graph_like_the_gate(live_v1: LiveProject, command: str) -> None:
    result = _playbook(command, "--live", live_v1.url, "--graph", "nope")
    assert result.returncode == 2
    assert "not on the live server" in result.stderr and "Traceback" not in result.stderr
    assert result.stdout == ""


def test_candidate_import_error_exits_2_naming_the_error(live_v1: LiveProject, tmp_path: Path) -> None:
    broken = make_variant(
        tmp_path, "broken", [("helpdesk.py", "def intake(state: State) -> dict:", "def intake(state: State) -> dict\n")]
    )
    result = _playbook("gate", "--live", live_v1.url, "--candidate", str(broken))
    assert result.returncode == 2
    assert "helpdesk" in result.stderr and "SyntaxError" in result.stderr
    assert "Traceback" not in result.stderr


def test_unreachable_live_server_exits_3_with_the_url() -> None:
    from migrations_playbook.staging.server import free_port

    url = f"http://127.0.0.1:{free_port()}"
    result = _playbook("gate", "--live", url, "--candidate", str(V1 / "langgraph.json"))
    assert result.returncode == 3
    assert url in result.stderr
    assert "Traceback" not in result.stderr


def test_inflight_counts_threads_by_status_version_and_next_node(live_v1: LiveProject) -> None:
    result = _playbook("inflight", "--live", live_v1.url, "--format", "json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)["graphs"]
    assert data["helpdesk"] == [
        {"status": "idle", "flow_version": "1", "next": "-", "threads": 1},
        {"status": "interrupted", "flow_version": "1", "next": "triage", "threads": 2},
    ]
    assert data["escalation"] == [
        {"status": "interrupted", "flow_version": "none", "next": "review,review:confirm", "threads": 1}
    ]


def _replay(live: LiveProject, candidate: Path, *extra: str) -> tuple[int, dict]:
    result = _playbook(
        "replay",
        "--live",
        live.url,
        "--candidate",
        str(candidate),
        "--persistence",
        str(live.project),
        "--format",
        "json",
        *extra,
    )
    assert result.returncode in (0, 1), result.stderr
    return result.returncode, json.loads(result.stdout)


def test_replay_of_unchanged_code_matches_live_resumes_and_leaves_the_live_threads_alone(live_v1: LiveProject) -> None:
    """One replay, two sides of it: on staging the paused threads resume and match live; on the live server
    the same threads are still paused afterwards."""

    async def paused() -> list[str]:
        client = get_client(url=live_v1.url)
        found = await client.threads.search(status="interrupted", limit=100)
        await client.aclose()
        return sorted(t["thread_id"] for t in found)

    before = asyncio.run(paused())
    code, report = _replay(live_v1, V1 / "langgraph.json", "--resume", '"approved"')
    assert (code, report["command"], report["findings"]) == (0, "replay", [])
    assert report["graphs"]["helpdesk"]["by_status"] == {"interrupted": 2}
    assert report["graphs"]["escalation"]["by_status"] == {"interrupted": 1}
    assert asyncio.run(paused()) == before


def test_replay_shows_a_renamed_node_strands_paused_threads(live_v1: LiveProject, tmp_path: Path) -> None:
    """The failure the gate exists for: on the candidate, next == [] and a resume 'succeeds' doing nothing."""
    code, report = _replay(live_v1, make_variant(tmp_path, "renamed", HELPDESK_TRIAGE_RENAMED), "--resume", '"approved"')
    assert code == 1
    by_code = {f["code"]: f for f in report["findings"]}
    assert set(by_code) == {"STAGING_STATE_DIVERGED", "STAGING_RESUME_FAILED"}
    for finding in by_code.values():
        assert finding["node"] == "triage"
        assert set(finding["thread_ids"]) == set(live_v1.threads["helpdesk_at_triage"])
    assert "never ran" in by_code["STAGING_RESUME_FAILED"]["message"]
    assert '"next": []' in by_code["STAGING_STATE_DIVERGED"]["message"]


def test_replay_refuses_a_copy_older_than_the_live_state(live_v1: LiveProject, tmp_path: Path) -> None:
    stale = tmp_path / "stale"
    shutil.copytree(live_v1.project / ".langgraph_api", stale / ".langgraph_api")
    for pickle in (stale / ".langgraph_api").glob(".langgraph_checkpoint*.pckl"):
        pickle.unlink()
    (stale / ".langgraph_api" / ".langgraph_checkpoint.1.pckl").write_bytes(b"\x80\x02}q\x00.")  # empty dict
    result = _playbook("replay", "--live", live_v1.url, "--candidate", str(V1 / "langgraph.json"), "--persistence", str(stale))
    assert result.returncode == 2
    assert "latest checkpoint" in result.stderr and "graceful stop" in result.stderr


async def test_this_deployment_serves_its_contract_locks_for_the_gate(client) -> None:
    """The gate reads live reducers from GET /playbook/contract when no --live-contract is given."""
    from migrations_playbook.sources.api.reads import served_locks

    locks = await served_locks(client)
    assert locks is not None
    assert locks["ticket_triage"]["fields"]["messages"]["reducer"].startswith("BinaryOperatorAggregate(")
    assert set(locks) >= {"ticket_triage"}


async def test_unchanged_repo_passes_the_gate_against_threads_of_every_graph(client, dev_server, repo_root) -> None:
    """No false block on this repo's own graphs (DeltaChannel history, typed approvals, subgraphs)."""
    starts = [
        ("ticket_triage", "Please refund my invoice", None),
        ("campus_supervisor", "3층 좌석 남았어?", None),
        ("campus_supervisor", "오늘 학식 메뉴 뭐야?", None),
        ("fan_room", "LG 트윈스 역사 알려줘", {"team_name": "LG"}),
        ("recycling_guide", "페트병 어떻게 버려?", None),
    ]
    for graph, text, context in starts:
        thread = await client.threads.create()
        extra = {"context": context} if context else {}
        await client.runs.wait(thread["thread_id"], graph, input={"messages": [{"role": "user", "content": text}]}, **extra)
    result = await asyncio.to_thread(
        _playbook, "gate", "--live", dev_server.url, "--candidate", str(repo_root / "langgraph.json"), "--format", "json"
    )
    report = json.loads(result.stdout)
    assert (result.returncode, report["verdict"], report["findings"]) == (0, "pass", [])
    assert {g for g, s in report["graphs"].items() if s["threads_scanned"]} >= {s[0] for s in starts}
    [note] = report["notes"]  # and it says whose locks they are: each graph's contract hash
    assert note.startswith("live reducers from the contract the server serves at /playbook/contract: the deployed code's locks")
    for graph in ("ticket_triage", "campus_supervisor", "fan_room", "recycling_guide"):
        assert f"{graph} sha256:" in note, note


# -- replay: resume values that fit each thread's own approval (this repo's ticket_triage) --

TRIAGE_STARTS = {
    "plan_approval": "Please refund my invoice",
    "report_choice": "Please send me a statement of my payments history",
    "clarification": "Hello, something about my account",
}
"""Approval kind -> a ticket the offline model pauses at that kind."""


@dataclass(frozen=True)
class LiveTriage:
    url: str
    workdir: Path
    """The live server's working folder (its .langgraph_api/ is what replay copies)."""
    threads: dict[str, str]
    """Approval kind -> the thread paused at it."""


@pytest.fixture(scope="module")
def live_triage(tmp_path_factory: pytest.TempPathFactory, repo_root: Path):
    """ticket_triage threads paused at three approval kinds, served by a restarted `langgraph dev`."""
    workdir = tmp_path_factory.mktemp("triage-live")
    config = repo_root / "langgraph.json"

    async def pause_one_per_kind(url: str) -> dict[str, str]:
        client = get_client(url=url)
        threads = {}
        for kind, text in TRIAGE_STARTS.items():
            thread = await client.threads.create()
            result = await client.runs.wait(
                thread["thread_id"], "ticket_triage", input={"messages": [{"role": "user", "content": text}]}
            )
            assert result["__interrupt__"][0]["value"]["kind"] == kind, "fixture drift: the offline model chose another kind"
            threads[kind] = thread["thread_id"]
        await client.aclose()
        return threads

    with DevServer(config, workdir, env={"MODEL": "offline"}) as server:
        threads = asyncio.run(pause_one_per_kind(server.url))
    # Stopped gracefully: every checkpoint is on disk for the copy.
    with DevServer(config, workdir, env={"MODEL": "offline"}) as server:
        yield LiveTriage(url=server.url, workdir=workdir, threads=threads)


def _replay_triage(live: LiveTriage, repo_root: Path, *extra: str) -> tuple[int, dict]:
    result = _playbook(
        "replay",
        "--live",
        live.url,
        "--candidate",
        str(repo_root / "langgraph.json"),
        "--persistence",
        str(live.workdir),
        "--format",
        "json",
        *extra,
    )
    assert result.returncode in (0, 1), result.stderr
    return result.returncode, json.loads(result.stdout)


def test_replay_auto_resume_answers_each_approval_kind_so_the_unchanged_repo_passes(
    live_triage: LiveTriage, repo_root: Path
) -> None:
    code, report = _replay_triage(live_triage, repo_root, "--auto-resume")
    assert (code, report["verdict"], report["findings"]) == (0, "pass", [])
    assert report["graphs"]["ticket_triage"]["by_status"] == {"interrupted": 3}
    for kind in TRIAGE_STARTS:
        (line,) = [n for n in report["notes"] if n.startswith(f"ticket_triage {kind}: ")]
        assert '1 interrupt(s) resumed with {"answer": ' in line and f'"kind": "{kind}"}}' in line
        assert line.endswith("(the payload's resume_format)")
    assert "ticket_triage: 3 of 3 interrupted thread(s) resumed on staging; the paused step ran on 3" in report["notes"]

    async def live_kinds() -> dict[str, str]:
        client = get_client(url=live_triage.url)
        states = {kind: await client.threads.get_state(tid) for kind, tid in live_triage.threads.items()}
        await client.aclose()
        return {kind: state["tasks"][0]["interrupts"][0]["value"]["kind"] for kind, state in states.items()}

    assert asyncio.run(live_kinds()) == {kind: kind for kind in TRIAGE_STARTS}  # resumed on staging only


@pytest.mark.parametrize(
    "fixed",
    [
        pytest.param('"approve"', id="bare-word-staging-refuses"),
        pytest.param('{"kind": "plan_approval", "answer": "approve"}', id="typed-value-never-sent-to-other-kinds"),
    ],
)
def test_replay_with_a_fixed_resume_fitting_one_kind_reports_the_other_kinds_without_blocking(
    live_triage: LiveTriage, repo_root: Path, fixed: str
) -> None:
    code, report = _replay_triage(live_triage, repo_root, "--resume", fixed)
    assert (code, report["verdict"]) == (0, "pass")
    by_thread = {tid: f for f in report["findings"] for tid in f["thread_ids"]}
    others = {kind: tid for kind, tid in live_triage.threads.items() if kind != "plan_approval"}
    assert set(by_thread) == set(others.values())
    for kind, thread_id in others.items():
        finding = by_thread[thread_id]
        assert (finding["code"], finding["severity"], finding["node"]) == ("STAGING_RESUME_UNANSWERED", "warn", "triage")
        assert kind in finding["message"]
    assert any(n.endswith("the paused step ran on 1") for n in report["notes"])
