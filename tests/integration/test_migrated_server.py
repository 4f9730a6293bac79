"""Migrated against born-on-the-candidate (issue 38, item 2), on real `langgraph dev` servers.

The live side is the digest project (tests/fixtures/migrated_project) with two threads (`TURNS`). Each variant
(tests/fixtures/migrated_variants.py) changes what the runs end with, and nothing fails: the A-against-B
comparison reports every one as "same structure, other values".

* **Truth tests**: the candidate serves a copy of the live threads; the live thread takes the next turn there
  (migrated), and a thread born on the candidate takes the same turns (fresh). A breaking variant leaves the
  migrated thread silently wrong (a stale summary beside the new one, its stamped tone unseen, its old topics
  uncounted); a safe one leaves it as a new thread would be, or as it was on purpose (a tone stamped at its
  start).
* **Through `check`**: a breaking variant is blocked with SHADOW_MIGRATED_DIFFERS naming the thread, the run,
  the step and the value path; a safe one passes.

`make test` runs the truth test and `check` of one breaking and one safe variant; `make test-matrix` the rest.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk import get_client

from migrations_playbook.staging.server import DevServer
from tests.fixtures import migrated_variants as fixture
from tests.integration.background import Background, ahead
from tests.playbook_cli import run_check

pytestmark = pytest.mark.integration

IN_MAKE_TEST = {"summary-rekeyed", "reply-wording"}
VARIANTS = {**fixture.BREAKING, **fixture.SAFE}


def _params(names: list[str]) -> list[Any]:
    return [pytest.param(n, id=n, marks=() if n in IN_MAKE_TEST else pytest.mark.matrix) for n in names]


@dataclass(frozen=True)
class Live:
    url: str
    folder: Path
    snapshot: Path
    """The live folder as the graceful stop left it (every checkpoint written): what a copy starts from."""
    threads: dict[str, str]
    root: Path


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    root = tmp_path_factory.mktemp("migrated")
    folder = root / "live"
    shutil.copytree(fixture.PROJECT, folder)
    with DevServer(folder / "langgraph.json", folder) as server:
        threads = asyncio.run(fixture.populate(server.url))
    snapshot = root / "snapshot"
    shutil.copytree(folder, snapshot)
    with DevServer(folder / "langgraph.json", folder) as server:
        yield Live(server.url, folder, snapshot, threads, root)


# -- truth: what a migrated thread and a thread born on the candidate do ---------------------------


@dataclass(frozen=True)
class Seen:
    """What a client sees of a digest thread after its last turn."""

    summaries: list[str]
    reply: str
    tone: str | None


async def _next_turn_and_fresh(url: str, thread_id: str, turns: list[str]) -> tuple[Seen, Seen]:
    client = get_client(url=url)
    try:
        await client.runs.wait(thread_id, fixture.GRAPH, input=fixture.user(fixture.NEXT_TURN))
        fresh = await fixture.start(url, [*turns, fixture.NEXT_TURN])
        seen = []
        for thread in (thread_id, fresh):
            values = (await client.threads.get_state(thread))["values"]
            messages = values["messages"]
            seen.append(
                Seen(
                    summaries=[m["content"] for m in messages if m["type"] == "system"],
                    reply=next(m["content"] for m in reversed(messages) if m["type"] == "ai"),
                    tone=values.get("tone") or values.get("style"),
                )
            )
        return seen[0], seen[1]
    finally:
        await client.aclose()


V1_REPLY = "Dear user, noted: scanner broken (3 topic(s) so far)"
"""What the deployed code answers the formal thread's next turn."""

TRUTH: dict[str, Callable[[Seen, Seen], bool]] = {
    "summary-rekeyed": lambda old, new: len(old.summaries) == 2 and len(new.summaries) == 1,
    "reply-input-drops-tone": lambda old, new: old.reply.startswith("hey,") and new.reply.startswith("Dear user,"),
    "topics-item-shape": lambda old, new: "(1 topic(s) so far)" in old.reply and "(3 topic(s) so far)" in new.reply,
    "reply-wording": lambda old, new: old == new and "saved:" in old.reply,
    "summary-format": lambda old, new: old == new and old.summaries[0].startswith("digest: printer jammed | "),
    "tone-for-new-threads": lambda old, new: old.reply == V1_REPLY and (old.tone, new.tone) == ("formal", "friendly"),
}


@pytest.mark.usefixtures("checked")  # the `check` runs below start in the background while the truth runs
@pytest.mark.parametrize("name", _params(list(VARIANTS)))
def test_truth_the_migrated_thread_on_the_candidate_against_one_born_there(live: Live, name: str, tmp_path: Path) -> None:
    candidate = fixture.make_variant(tmp_path, name, VARIANTS[name].edits)
    # The candidate's project folder, holding a copy of the live threads (`langgraph dev` reads them from its cwd).
    shutil.copytree(live.snapshot / ".langgraph_api", candidate.parent / ".langgraph_api")
    with DevServer(candidate, candidate.parent) as server:
        old, new = asyncio.run(_next_turn_and_fresh(server.url, live.threads["formal"], fixture.TURNS["formal"]))
    assert TRUTH[name](old, new), (VARIANTS[name].why, old, new)
    if name in fixture.BREAKING:
        assert old != new


# -- through check ---------------------------------------------------------------------------


def _check(live: Live, candidate: Path) -> tuple[int, dict[str, Any]]:
    code, report, stderr = run_check(live.url, live.folder, live.folder, candidate)
    assert code in (0, 1) and report, stderr
    return code, report


@pytest.mark.matrix
def test_the_same_code_passes_with_no_finding_every_thread_rebuilt(live: Live) -> None:
    code, report = _check(live, live.folder / "langgraph.json")
    assert (code, report["verdict"], report["unproven"]) == (0, "pass", [])
    assert [f for f in report["findings"] if f["code"].startswith("SHADOW_")] == []
    assert any("2 of 2 thread(s) rebuilt" in n for n in report["notes"]), report["notes"]


BLOCKED, PASSES = "test_a_value_only_break_of_migrated_threads_is_blocked", "test_an_intended_value_change_passes"


@pytest.fixture(scope="module")
def checked(
    request: pytest.FixtureRequest, live: Live, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Background[tuple[int, dict[str, Any]]]]:
    """Each selected variant's `check`, two at a time in the background (tests/integration/background.py)."""
    root = tmp_path_factory.mktemp("candidates")
    jobs = {
        f"{test}[{name}]": partial(_check_variant, live, root, name, variant.edits)
        for test, variants in ((BLOCKED, fixture.BREAKING), (PASSES, fixture.SAFE))
        for name, variant in variants.items()
    }
    yield from ahead(request, jobs)


def _check_variant(live: Live, root: Path, name: str, edits: Any) -> tuple[int, dict[str, Any]]:
    return _check(live, fixture.make_variant(root, name, edits))


@pytest.mark.parametrize("name", _params(list(fixture.BREAKING)))
def test_a_value_only_break_of_migrated_threads_is_blocked(
    live: Live, name: str, checked: Background[tuple[int, dict[str, Any]]]
) -> None:
    code, report = checked.result(f"{BLOCKED}[{name}]")
    assert (code, report["verdict"]) == (1, "block"), report["findings"]
    found = [f for f in report["findings"] if f["code"] == "SHADOW_MIGRATED_DIFFERS"]
    assert found and all(f["severity"] == "block" and f["field"] for f in found), report["findings"]
    assert live.threads["formal"] in {t for f in found for t in f["thread_ids"]}
    # Named with the run and the step (every path here is written by a step of the continuation).
    assert all(" (turn): " in f["message"] or " (rerun): " in f["message"] for f in found), found
    assert all(f["node"] for f in found), found
    # The A-against-B comparison alone sees only other values: a warning.
    others = [f for f in report["findings"] if f["code"] not in ("SHADOW_MIGRATED_DIFFERS",) and f["severity"] == "block"]
    assert others == [], others


@pytest.mark.parametrize("name", _params(list(fixture.SAFE)))
def test_an_intended_value_change_passes(name: str, checked: Background[tuple[int, dict[str, Any]]]) -> None:
    code, report = checked.result(f"{PASSES}[{name}]")
    assert (code, report["verdict"], report["unproven"]) == (0, "pass", []), report["findings"]
    assert not [f for f in report["findings"] if f["code"] == "SHADOW_MIGRATED_DIFFERS"]
    assert any("2 of 2 thread(s) rebuilt" in n for n in report["notes"]), report["notes"]
