"""`playbook check` end to end (issue 36): one verdict, each gate finding settled by execution.

A real `langgraph dev` serves the v1 fixture project with threads at mixed positions (two tickets paused
at `triage`, one finished, a case paused inside a subgraph, a chat). For each change, `check` runs the
gate's rules and then the shadow over the same threads:

* a paused node renamed: the gate's NODE_MISSING is **proven** (the shadow saw the threads lose the step);
* the paused node turned into a subgraph asking the same question: the gate's CALL_ORDER_CHANGED block is
  **disproved** (the threads ran through `triage` on both codes and did nothing worse), so the verdict passes;
* a graph removed: GRAPH_REMOVED stays a block, **unverified** (the shadow cannot run a graph the candidate
  does not serve);
* the same code with no answer flag: the tickets get the answer their question got on the live deployment;
  the case whose question nobody answered could not be run: it is listed under ``unproven`` and blocks,
  unless ``--accept-unproven`` (it is still named);
* the same code with an answer: pass, no finding at all.
"""

from __future__ import annotations

import asyncio
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
from tests.fixtures.gate_projects import variants

pytestmark = pytest.mark.integration


@dataclass(frozen=True)
class Live:
    url: str
    folder: Path
    locks: Path
    threads: dict[str, list[str]]
    root: Path


def _playbook(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "migrations_playbook", *args],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ},
        check=False,
    )


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    root = tmp_path_factory.mktemp("check")
    folder = root / "live"
    shutil.copytree(variants.V1, folder)
    with DevServer(folder / "langgraph.json", folder) as server:
        threads = asyncio.run(variants.populate(server.url))
    locks = root / "locks"
    written = _playbook("contract", "--config", str(folder / "langgraph.json"), "--write", "--contracts-dir", str(locks))
    assert written.returncode == 0, written.stderr
    # Restarted after the graceful stop, which wrote every checkpoint: the live server `check` reads.
    with DevServer(folder / "langgraph.json", folder) as server:
        yield Live(server.url, folder, locks, threads, root)


def _check_args(live: Live, candidate: Path) -> tuple[str, ...]:
    """`playbook check` on the live fixture with its deployed code and locks, against ``candidate``."""
    folder = str(live.folder)
    source = ("--live", live.url, "--persistence", folder, "--live-code", folder, "--live-contract", str(live.locks))
    return ("check", *source, "--candidate", str(candidate))


def _check(live: Live, candidate: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    result = _playbook(*_check_args(live, candidate), "--format", "json", *extra)
    assert result.returncode in (0, 1), result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["command"] == "check" and report["gate_result_version"] == "1"
    assert all(f["settled"] in ("proven", "disproved", "unverified") for f in report["findings"]), report["findings"]
    return result.returncode, report


def _gate_finding(report: dict[str, Any], code: str) -> dict[str, Any]:
    (found,) = [f for f in report["findings"] if f["code"] == code]
    return found


def test_a_renamed_paused_node_is_proven_to_break_its_threads(live: Live) -> None:
    candidate = variants.make_variant(live.root, "renamed", variants.HELPDESK_TRIAGE_RENAMED)
    code, report = _check(live, candidate, "--resume", '"approved"')
    assert (code, report["verdict"]) == (1, "block")
    missing = _gate_finding(report, "NODE_MISSING")
    assert (missing["severity"], missing["settled"]) == ("block", "proven")
    assert set(missing["thread_ids"]) == set(live.threads["helpdesk_at_triage"])
    assert any(f["code"].startswith("SHADOW_") and f["severity"] == "block" for f in report["findings"])


def test_a_gate_block_the_threads_disprove_does_not_block(live: Live) -> None:
    candidate = variants.make_variant(live.root, "triage-as-subgraph", variants.TRIAGE_AS_SUBGRAPH)
    gate = _playbook(
        "gate", "--live", live.url, "--candidate", str(candidate), "--live-contract", str(live.locks), "--format", "json"
    )
    assert gate.returncode == 1 and _gate_finding(json.loads(gate.stdout), "CALL_ORDER_CHANGED")["severity"] == "block"
    code, report = _check(live, candidate, "--resume", '"approved"')
    assert (code, report["verdict"], report["unproven"]) == (0, "pass", []), report
    order = _gate_finding(report, "CALL_ORDER_CHANGED")
    assert (order["severity"], order["settled"]) == ("warn", "disproved")
    assert "ran through triage on both codes" in order["evidence"]
    assert [f for f in report["findings"] if f["severity"] == "block"] == []


def test_a_finding_on_threads_the_shadow_cannot_run_stays_a_block(live: Live) -> None:
    edits, _, _, _ = variants.BREAKING["graph-removed"]
    candidate = variants.make_variant(live.root, "graph-removed", edits)
    code, report = _check(live, candidate, "--resume", '"approved"')
    assert (code, report["verdict"]) == (1, "block")
    removed = _gate_finding(report, "GRAPH_REMOVED")
    assert (removed["severity"], removed["settled"]) == ("block", "unverified")


def test_threads_nobody_could_run_block_unless_accepted_and_are_named_either_way(live: Live) -> None:
    """The tickets' free-text question was answered on the live deployment ("approved", on the finished ticket),
    so the waiting tickets get that answer with no flag; nobody ever answered the case's question in the
    escalation subgraph, so that thread could not be run."""
    paused = set(live.threads["escalation_in_subgraph"])
    code, report = _check(live, live.folder / "langgraph.json")
    assert (code, report["verdict"], report["accept_unproven"]) == (1, "block", False)
    assert {u["thread_id"] for u in report["unproven"]} == paused
    assert any(
        n.startswith("shadow: helpdesk: 2 question(s) answered with the answer the same question") for n in report["notes"]
    )
    assert all(u["reason"] and "--resume-map" in u["how"] for u in report["unproven"])
    assert [f for f in report["findings"] if f["severity"] == "block"] == []

    code, report = _check(live, live.folder / "langgraph.json", "--accept-unproven")
    assert (code, report["verdict"], report["accept_unproven"]) == (0, "pass", True)
    assert {u["thread_id"] for u in report["unproven"]} == paused


# Identity through check: `make test` runs it on this repo's graphs (test_shadow_server.py), on the HITL agent
# and on the memory project; this fixture's run is in `make test-matrix`.
@pytest.mark.matrix
def test_the_same_code_with_its_questions_answered_passes_with_no_finding(live: Live) -> None:
    code, report = _check(live, live.folder / "langgraph.json", "--resume", '"approved"')
    assert (code, report["verdict"], report["findings"], report["unproven"]) == (0, "pass", [], [])


def test_the_table_names_the_settlement_and_the_unproven_threads(live: Live) -> None:
    result = _playbook(*_check_args(live, live.folder / "langgraph.json"), "--no-progress")
    assert result.returncode == 1, result.stderr
    assert result.stdout.startswith("playbook check: BLOCK")
    assert "UNPROVEN  1 thread(s) could not be run (BLOCK unless --accept-unproven)" in result.stdout


def test_check_without_copies_of_the_live_data_is_a_usage_error(live: Live) -> None:
    result = _playbook("check", "--live", live.url, "--live-code", str(live.folder), "--candidate", str(live.folder))
    assert result.returncode == 2 and "check --live needs copies of the live data" in result.stderr
    assert "Traceback" not in result.stderr


# A block that stays unverified: `make test` keeps GRAPH_REMOVED (above); the settlement on other values is
# tests/unit/test_check_settle.py's, and this end-to-end run is in `make test-matrix`.
@pytest.mark.matrix
def test_a_narrowed_type_whose_threads_end_with_other_values_stays_a_block(live: Live) -> None:
    edits, _, _, _ = variants.BREAKING["type-narrowed"]
    code, report = _check(live, variants.make_variant(live.root, "type-narrowed", edits), "--resume", '"approved"')
    assert (code, report["verdict"]) == (1, "block")
    narrowed = _gate_finding(report, "FIELD_TYPE_MISMATCH")
    assert (narrowed["severity"], narrowed["settled"]) == ("block", "unverified")
    assert "other values" in narrowed["evidence"]


@pytest.mark.matrix
@pytest.mark.parametrize("variant", list(variants.BREAKING), ids=list(variants.BREAKING))
def test_every_breaking_variant_blocks_through_check(live: Live, variant: str) -> None:
    edits, flags, _, expected = variants.BREAKING[variant]
    code, report = _check(live, variants.make_variant(live.root, f"breaking-{variant}", edits), "--resume", '"approved"', *flags)
    assert (code, report["verdict"]) == (1, "block"), report["findings"]
    for finding_code, *_ in expected:
        assert _gate_finding(report, finding_code)["severity"] == "block"


# Removing `enrich` (no thread is at it) is meant to change what a new turn does: the shadow reruns the idle
# thread's last turn on both codes and sees `priority` no longer computed (SHADOW_DATA_LOST, and the output key
# with it). A thread born on the candidate shows the same, so it is the intended change (issue 38): a warning.
@pytest.mark.matrix
@pytest.mark.parametrize("variant", list(variants.SAFE), ids=list(variants.SAFE))
def test_every_safe_variant_passes_through_check(live: Live, variant: str) -> None:
    candidate = variants.make_variant(live.root, f"safe-{variant}", variants.SAFE[variant])
    code, report = _check(live, candidate, "--resume", '"approved"')
    assert (code, report["verdict"], report["unproven"]) == (0, "pass", []), report["findings"]
    if variant == "remove-node-no-thread-is-at":
        intended = {f["code"] for f in report["findings"] if f["code"] == "SHADOW_INTENDED_CHANGE"}
        assert intended and set(live.threads["helpdesk_idle"]) <= {
            t for f in report["findings"] if f["code"] == "SHADOW_INTENDED_CHANGE" for t in f["thread_ids"]
        }


def test_a_live_deployment_that_moves_on_is_judged_not_refused(tmp_path: Path) -> None:
    """The live head of a thread moves past the copy (the in-memory runtime writes checkpoints to its folder
    only on a graceful stop): `shadow` refuses the whole run (exit 2), `check` judges that thread at the
    copy, says so, and judges the rest."""
    folder = tmp_path / "live"
    shutil.copytree(variants.V1, folder)
    with DevServer(folder / "langgraph.json", folder) as server:
        threads = asyncio.run(variants.populate(server.url))
    with DevServer(folder / "langgraph.json", folder) as server:
        (chat,) = threads["notes_idle"]

        async def move_on() -> None:
            client = get_client(url=server.url)
            await client.runs.wait(chat, "notes", input={"messages": [{"role": "user", "content": "one more"}]})

        asyncio.run(move_on())
        common = ("--live", server.url, "--persistence", str(folder), "--live-code", str(folder))
        common += ("--candidate", str(folder / "langgraph.json"), "--resume", '"approved"', "--format", "json")
        shadow = _playbook("shadow", *common)
        assert shadow.returncode == 2 and "older than the live data" in shadow.stderr
        result = _playbook("check", *common)
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["verdict"] == "pass"
    (moved,) = [n for n in report["notes"] if "moved on the live server after the copy was made" in n]
    assert chat in moved


OUTPUT_WITHOUT_RESPONSE = variants.OUTPUT_WITHOUT_RESPONSE
PAYLOAD_WITHOUT_REQUEST = [
    ("helpdesk.py", 'interrupt({"kind": "plan_approval", "request": state["request"]})', 'interrupt({"kind": "plan_approval"})')
]
PAYLOAD_GROWN = [
    (
        "helpdesk.py",
        'interrupt({"kind": "plan_approval", "request": state["request"]})',
        'interrupt({"kind": "plan_approval", "request": state["request"], "priority": state.get("priority")})',
    )
]


@pytest.mark.parametrize(
    ("name", "edits", "field", "position"),
    [
        pytest.param("output-drops-response", OUTPUT_WITHOUT_RESPONSE, "output.response", "helpdesk_at_triage", id="output"),
        pytest.param(
            "payload-drops-request", PAYLOAD_WITHOUT_REQUEST, "question at triage.request", "helpdesk_idle", id="payload"
        ),
    ],
)
def test_a_key_clients_read_that_the_candidate_drops_is_blocked(
    live: Live, name: str, edits: list[tuple[str, str, str]], field: str, position: str
) -> None:
    """The state keeps every key (nothing is lost in the checkpoint), but what a client reads of the run changed:
    the output schema no longer returns `response`, or the approval question no longer carries `request`."""
    candidate = variants.make_variant(live.root, name, edits)
    code, report = _check(live, candidate)
    assert (code, report["verdict"]) == (1, "block"), report
    (dropped,) = [f for f in report["findings"] if f["code"] == "SHADOW_OUTPUT_KEY_DROPPED" and f["field"] == field]
    assert dropped["severity"] == "block"
    assert set(live.threads[position]) <= set(dropped["thread_ids"])
    if name == "output-drops-response":  # the gate saw it in the schemas, as evidence; running the threads proves it
        (gate,) = [f for f in report["findings"] if f["code"] == "OUTPUT_KEY_DROPPED" and f["field"] == "response"]
        assert gate["settled"] == "proven", gate


def test_a_question_payload_that_grows_is_not_blocked(live: Live) -> None:
    candidate = variants.make_variant(live.root, "payload-grows", PAYLOAD_GROWN)
    code, report = _check(live, candidate, "--accept-unproven")
    assert [f for f in report["findings"] if f["severity"] == "block"] == [], report["findings"]
    assert (code, report["verdict"]) == (0, "pass")
