"""The classes of change that break live threads, established on a real `langgraph dev`.

The live side is the classes fixture project (tests/fixtures/gate_projects/classes)
with threads in the positions that matter for each class (paused after task calls,
pending writes of finished siblings and Sends, paused inside subgraphs, stopped at
static breakpoints, behind a join, idle with messages, run through assistants
with a context). Each variant is v1 plus exact text edits
(tests/fixtures/gate_projects/class_variants.py).

* ``test_truth_*``: the facts. Each variant's candidate is served by its own
  `langgraph dev` over a fresh copy of the live threads (the `.langgraph_api/`
  folder written by the live server's graceful stop); the threads are resumed
  through langgraph-sdk and the breakage (or, for SAFE, the correct resume) is
  asserted concretely. The unchanged v1 is the control.
* ``test_gate_*``: `playbook gate` must block every BREAKING variant with the
  expected codes and exact thread ids, and pass every SAFE one (`make test`: the
  representatives, one variant of every finding code and the assistant findings,
  ``GATE_IN_MAKE_TEST``; `make test-matrix`: the rest).

Speed: one live server per module; the staging servers (one per variant) and the
gate subprocesses of the selected tests run a few at a time in the background,
ahead of the tests that read them.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk import get_client

from migrations_playbook.staging.live_copy import absolute_config
from migrations_playbook.staging.server import DevServer
from tests.fixtures.gate_projects.class_variants import (
    BREAKING,
    CLASSES,
    REPRESENTATIVE,
    SAFE,
    V1_TRUTH,
    Results,
    Truth,
    expected_ids,
    make_variant,
    populate,
    run_truth,
)
from tests.playbook_cli import playbook

WORKERS = 3
"""Staging servers / gate subprocesses at a time (2 cores: startup is CPU-bound, runs mostly wait)."""


@dataclass(frozen=True)
class LiveProject:
    url: str
    project: Path
    persisted: Path
    """The `.langgraph_api/` written by the graceful stop after `populate`: what each staging copy starts from."""
    locks: Path
    threads: dict[str, list[str]]
    """position -> thread ids (assistant ids for ctx_assistants / ctx_silver_assistant)."""
    scratch: Path


_playbook = partial(playbook, timeout=300)


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveProject]:
    root = tmp_path_factory.mktemp("gate-classes")
    project = root / "v1"
    shutil.copytree(CLASSES, project, ignore=shutil.ignore_patterns("__pycache__"))
    locks = root / "v1-locks"
    written = _playbook(
        "contract",
        "--config",
        str(project / "langgraph.json"),
        "--write",
        "--contracts-dir",
        str(locks),
        "--records-dir",
        str(root / "v1-records"),
    )
    assert written.returncode == 0, written.stderr
    with DevServer(project / "langgraph.json", project) as server:
        threads = asyncio.run(populate(server.url))
    # The graceful stop flushed every checkpoint; keep that copy for the staging servers.
    persisted = root / "persisted" / ".langgraph_api"
    shutil.copytree(project / ".langgraph_api", persisted)
    # The restarted server must still hold every thread (what the gate reads).
    with DevServer(project / "langgraph.json", project) as server:
        yield LiveProject(
            url=server.url, project=project, persisted=persisted, locks=locks, threads=threads, scratch=root / "variants"
        )


class Prefetch:
    """Jobs for the selected tests, run a few at a time, ahead of the tests that read them."""

    def __init__(self, jobs: dict[str, Callable[[], Any]]) -> None:
        self.executor = ThreadPoolExecutor(max_workers=WORKERS)
        self.futures: dict[str, Future] = {key: self.executor.submit(job) for key, job in jobs.items()}

    def result(self, key: str) -> Any:
        return self.futures[key].result(timeout=600)

    def close(self) -> None:
        self.executor.shutdown(wait=True, cancel_futures=True)


def _selected(request: pytest.FixtureRequest, *tests: str) -> list[str]:
    """The variant ids of the selected items of these test functions (after -k / deselection)."""
    return [
        item.callspec.params["variant_id"]
        for item in request.session.items
        if getattr(item, "module", None) is request.module and item.originalname in tests
    ]


def _variant(variant_id: str) -> tuple[list, list, Truth]:
    return BREAKING.get(variant_id) or SAFE.get(variant_id) or ([], [], V1_TRUTH)


# -- the facts ------------------------------------------------------------------------


def _stage(live: LiveProject, variant_id: str) -> Results:
    """Serve the variant on a fresh copy of the live threads and run its truth steps."""
    edits, _, truth = _variant(variant_id)
    root = live.scratch / variant_id
    candidate = make_variant(root, "candidate", edits)
    workdir = root / "staging"
    shutil.copytree(live.persisted, workdir / ".langgraph_api")
    (workdir / "langgraph.json").write_text(json.dumps(absolute_config(candidate), indent=2))
    with DevServer(workdir / "langgraph.json", workdir, env={"PYTHONPATH": str(candidate.parent)}) as server:
        return asyncio.run(run_truth(server.url, live.threads, truth.steps))


TRUTH_TESTS = (
    "test_truth_unchanged_v1_resumes_every_position",
    "test_truth_breaking_change_breaks_live_threads",
    "test_truth_safe_change_resumes_live_threads",
)


@pytest.fixture(scope="module")
def staged(request: pytest.FixtureRequest, live: LiveProject) -> Iterator[Prefetch]:
    prefetch = Prefetch({vid: (lambda vid=vid: _stage(live, vid)) for vid in _selected(request, *TRUTH_TESTS)})
    yield prefetch
    prefetch.close()


@pytest.mark.parametrize("variant_id", ["v1"])
def test_truth_unchanged_v1_resumes_every_position(staged: Prefetch, variant_id: str) -> None:
    """The control: served by v1 itself, every copied thread resumes and runs its pending step."""
    V1_TRUTH.check(staged.result(variant_id))


def _sweep(variant_ids: list[str]) -> list[Any]:
    """The truth of every variant in `make test-matrix`; of the representative ones in `make test`."""
    return [pytest.param(v, id=v, marks=() if v in REPRESENTATIVE else pytest.mark.matrix) for v in variant_ids]


@pytest.mark.parametrize("variant_id", _sweep(list(BREAKING)))
def test_truth_breaking_change_breaks_live_threads(staged: Prefetch, variant_id: str) -> None:
    BREAKING[variant_id][2].check(staged.result(variant_id))


@pytest.mark.parametrize("variant_id", _sweep(list(SAFE)))
def test_truth_safe_change_resumes_live_threads(staged: Prefetch, variant_id: str) -> None:
    SAFE[variant_id][2].check(staged.result(variant_id))


# -- what the Agent Server API shows of each position ---------------------------------


async def _states(url: str, threads: dict[str, list[str]]) -> dict[str, dict[str, Any]]:
    client = get_client(url=url)
    try:
        positions = [p for p in threads if not p.startswith("ctx_") or p == "ctx_idle"]
        states = await asyncio.gather(*(client.threads.get_state(threads[p][0], subgraphs=True) for p in positions))
        return dict(zip(positions, states, strict=True))
    finally:
        await client.aclose()


def test_positions_are_visible_through_the_api(live: LiveProject) -> None:
    """Where get_state(subgraphs=True) shows each position (what the gate can read)."""
    states = asyncio.run(_states(live.url, live.threads))

    def tasks(position: str) -> dict[str, dict[str, Any]]:
        return {
            t["name"] if t["path"][0] == "__pregel_pull" else f"{t['name']}#{t['path'][1]}": t for t in states[position]["tasks"]
        }

    # Functional API / tasks in a node: only the paused task and its interrupt;
    # the stored task results are not listed (values is null for an entrypoint).
    assert states["func_at_interrupt"]["next"] == ["review_pair"] and states["func_at_interrupt"]["values"] is None
    assert list(tasks("func_at_interrupt")) == ["review_pair"]
    assert list(tasks("node_tasks_at_gather")) == ["gather"]
    # Finished siblings: tasks[].result holds their state update (not the goto/branch trigger).
    parallel = tasks("parallel_at_ask")
    assert (parallel["side"]["result"], parallel["brancher"]["result"]) == ({"log": ["side"]}, {"log": ["brancher"]})
    assert parallel["ask"]["result"] is None and parallel["ask"]["interrupts"]
    # Sends: one task per payload (path __pregel_push, index); finished ones carry a result,
    # the payload itself is not shown (the interrupted one's interrupt value is).
    mapper = tasks("mapper_at_worker")
    assert [mapper[f"worker#{i}"]["result"] for i in range(3)] == [{"results": ["a"]}, None, {"results": ["c"]}]
    # Subgraphs: tasks[].state holds the nested values and next.
    review = tasks("sub_node_medium")["review"]["state"]
    assert (review["next"], review["values"]) == (["confirm"], {"ticket": "slow page", "level": "medium"})
    consult = tasks("sub_call_at_consult")["consult"]["state"]
    assert (consult["next"], consult["values"]) == (["ask_expert"], {"question": "refunds", "hint": "about refunds"})
    # Static breakpoint: next names the node, its task has no interrupts.
    before = tasks("gated_before_at_review")["review"]
    assert states["gated_before_at_review"]["next"] == ["review"] and before["interrupts"] == []
    assert states["gated_after_at_check"]["next"] == ["check"]
    # Non-deferred single-predecessor join ran beside b2: its result is a pending write.
    assert tasks("single_at_b2")["join"]["result"] == {"log": ["join saw 2"]}
    assert "join" not in tasks("single_deferred_at_b2") and "join" not in tasks("fanin_at_b2")


# -- the gate -----------------------------------------------------------------------------


def _gate(live: LiveProject, variant_id: str) -> tuple[int, dict]:
    edits = _variant(variant_id)[0]
    candidate = make_variant(live.scratch / f"gate-{variant_id}", "candidate", edits)
    result = _playbook(
        "gate",
        "--live",
        live.url,
        "--candidate",
        str(candidate),
        "--format",
        "json",
        "--live-contract",
        str(live.locks),
    )
    assert result.returncode in (0, 1), result.stderr
    return result.returncode, json.loads(result.stdout)


GATE_TESTS = ("test_gate_passes_unchanged_v1", "test_gate_blocks_breaking_change", "test_gate_passes_safe_change")

ASSISTANT_CODES = {"CONTEXT_INVALID"}
"""Findings about stored assistants: a checkpointer has none, so only this file's API gate proves them."""


def _gate_in_make_test() -> frozenset[str]:
    """The variants `make test` gates through the API: the representatives, the first variant of every finding
    code none of them has, and every variant with an assistant finding. `make test` also gates every variant
    from a store (test_gate_checkpointer.py: the same rules on the same threads); `make test-matrix` the rest here."""
    kept = set(REPRESENTATIVE)
    codes = {e[0] for v in REPRESENTATIVE if v in BREAKING for e in BREAKING[v][1]}
    for variant_id, (_, expected, _) in BREAKING.items():
        found = {e[0] for e in expected}
        if found - codes or found & ASSISTANT_CODES:
            kept.add(variant_id)
            codes |= found
    return frozenset(kept)


GATE_IN_MAKE_TEST = _gate_in_make_test()


def _gate_sweep(variant_ids: list[str]) -> list[Any]:
    return [pytest.param(v, id=v, marks=() if v in GATE_IN_MAKE_TEST else pytest.mark.matrix) for v in variant_ids]


@pytest.fixture(scope="module")
def gated(request: pytest.FixtureRequest, live: LiveProject) -> Iterator[Prefetch]:
    prefetch = Prefetch({vid: (lambda vid=vid: _gate(live, vid)) for vid in _selected(request, *GATE_TESTS)})
    yield prefetch
    prefetch.close()


@pytest.mark.parametrize("variant_id", ["v1"])
def test_gate_passes_unchanged_v1(gated: Prefetch, variant_id: str) -> None:
    code, report = gated.result(variant_id)
    assert (code, report["verdict"], report["findings"]) == (0, "pass", [])


@pytest.mark.parametrize("variant_id", _gate_sweep(list(BREAKING)))
def test_gate_blocks_breaking_change(live: LiveProject, gated: Prefetch, variant_id: str) -> None:
    code, report = gated.result(variant_id)
    assert (code, report["verdict"]) == (1, "block"), report["findings"]
    got = {(f["code"], f["severity"], f["graph_id"], f["node"], f["field"]): f for f in report["findings"]}
    expected = BREAKING[variant_id][1]
    for finding_code, severity, graph, node, field, position in expected:
        key = (finding_code, severity, graph, node, field)
        assert key in got, f"missing {key}; got {sorted(got, key=str)}"
        ids = expected_ids(live.threads, position)
        if position.startswith("ctx_") and "assistant" in position:
            # An assistant-level finding: it names the assistants whose stored context fails.
            assert set(got[key].get("assistant_ids") or ()) == ids, got[key]
        else:
            assert set(got[key]["thread_ids"]) == ids, got[key]
            assert got[key]["thread_count"] == len(ids), got[key]
    unexpected_blocks = {k for k in got if k[1] == "block"} - {e[:5] for e in expected}
    assert not unexpected_blocks, [got[k] for k in unexpected_blocks]


@pytest.mark.parametrize("variant_id", _gate_sweep(list(SAFE)))
def test_gate_passes_safe_change(gated: Prefetch, variant_id: str) -> None:
    code, report = gated.result(variant_id)
    blocks = [f for f in report["findings"] if f["severity"] == "block"]
    assert (code, report["verdict"], blocks) == (0, "pass", [])
