"""`playbook check` end to end (issue 36), continued from test_check_server.py (a file of its own so the lane's two
workers share the check tests): what a client reads of a run, and a live server that moves on during `check`.

* the candidate keeps every state key but a client reads less: the output schema no longer returns `response`,
  or the approval question no longer carries `request`: SHADOW_OUTPUT_KEY_DROPPED blocks, naming the threads
  (`make test` runs both drops in one candidate, one `check` with each finding on its own field; `make
  test-matrix` each alone);
* a question payload that grows a key blocks nothing;
* the live head of a thread moves past the copy: `shadow` refuses, `check` judges that thread at the copy.
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
from tests.fixtures.gate_projects import variants
from tests.integration.check_live import Checks, Live, Run, ahead_of, check, live_fixture
from tests.playbook_cli import playbook

pytestmark = pytest.mark.integration
__all__ = ["live_fixture"]  # the module-scoped `live` fixture, served once for this file

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


AHEAD: dict[str, Run] = {
    "test_keys_clients_read_that_the_candidate_drops_are_blocked": (
        lambda live: variants.make_variant(
            live.root, "output-and-payload-drop", [*OUTPUT_WITHOUT_RESPONSE, *PAYLOAD_WITHOUT_REQUEST]
        ),
        (),
    ),
    "test_a_question_payload_that_grows_is_not_blocked_and_accepted_unproven_threads_are_named": (
        lambda live: variants.make_variant(live.root, "payload-grows", PAYLOAD_GROWN),
        ("--accept-unproven",),
    ),
}
"""The `check` each `make test` test reads, run ahead (`check_live.ahead_of`)."""


@pytest.fixture(scope="module")
def ahead(request: pytest.FixtureRequest, live: Live) -> Iterator[Checks]:
    yield from ahead_of(request, live, AHEAD)


def _dropped(report: dict, field: str) -> dict:
    (dropped,) = [f for f in report["findings"] if f["code"] == "SHADOW_OUTPUT_KEY_DROPPED" and f["field"] == field]
    return dropped


def test_keys_clients_read_that_the_candidate_drops_are_blocked(live: Live, ahead: Checks) -> None:
    """The state keeps every key (nothing is lost in the checkpoint), but what a client reads of the runs changed:
    the output schema no longer returns `response` (the threads paused at triage finish without it) and the
    approval question no longer carries `request` (the idle thread's rerun asks it). One candidate with both
    drops: each is its own finding, on its own field and threads. Each alone: the `make test-matrix` test below."""
    code, report = ahead.result("test_keys_clients_read_that_the_candidate_drops_are_blocked")
    assert (code, report["verdict"]) == (1, "block"), report
    for field, position in (("output.response", "helpdesk_at_triage"), ("question at triage.request", "helpdesk_idle")):
        dropped = _dropped(report, field)
        assert dropped["severity"] == "block"
        assert set(live.threads[position]) <= set(dropped["thread_ids"]), dropped
    # the gate saw the output drop in the schemas, as evidence; running the threads proves it
    (gate,) = [f for f in report["findings"] if f["code"] == "OUTPUT_KEY_DROPPED" and f["field"] == "response"]
    assert gate["settled"] == "proven", gate


@pytest.mark.matrix
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
    code, report = check(live, candidate)
    assert (code, report["verdict"]) == (1, "block"), report
    dropped = _dropped(report, field)
    assert dropped["severity"] == "block"
    assert set(live.threads[position]) <= set(dropped["thread_ids"])
    if name == "output-drops-response":  # the gate saw it in the schemas, as evidence; running the threads proves it
        (gate,) = [f for f in report["findings"] if f["code"] == "OUTPUT_KEY_DROPPED" and f["field"] == "response"]
        assert gate["settled"] == "proven", gate


def test_a_question_payload_that_grows_is_not_blocked_and_accepted_unproven_threads_are_named(live: Live, ahead: Checks) -> None:
    """No answer flag: the tickets get the answer their question got on the live deployment; the case paused in
    the escalation subgraph, whose question nobody answered, could not be run: with ``--accept-unproven`` it is
    named and does not block (without it, it blocks: test_check_server.py)."""
    code, report = ahead.result("test_a_question_payload_that_grows_is_not_blocked_and_accepted_unproven_threads_are_named")
    assert [f for f in report["findings"] if f["severity"] == "block"] == [], report["findings"]
    assert (code, report["verdict"], report["accept_unproven"]) == (0, "pass", True)
    assert {u["thread_id"] for u in report["unproven"]} == set(live.threads["escalation_in_subgraph"])


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
        shadow = playbook("shadow", *common)
        assert shadow.returncode == 2 and "older than the live data" in shadow.stderr
        result = playbook("check", *common)
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["verdict"] == "pass"
    (moved,) = [n for n in report["notes"] if "moved on the live server after the copy was made" in n]
    assert chat in moved
