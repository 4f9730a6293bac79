"""`playbook gate` on a project shaped like the public templates, on a real `langgraph dev`.

The live side is `casebook` (tests/fixtures/template_projects/casebook): a
``src/<package>/`` project with ``"dependencies": ["."]`` and five graphs whose
state lives outside the entry file: a pydantic state (memory-agent), a
``MessagesState``-derived total TypedDict whose keys appear during the run
(open_deep_research), a dataclass (new-langgraph-project), dataclasses with
managed values and a human-in-the-loop tool (react-agent), and a graph routed
only by ``Command(goto=...)``. Threads are left paused before the keys that appear
later, inside a ToolNode, at nodes chosen by a goto, and idle.

As a team with the template installed editable would run it, the package is
importable from the *original* folder first (``PYTHONPATH=<live project>/src``, as
``pip install -e .`` does) for every `playbook` call, while each candidate is a
copy changed in a module other than the entry file
(tests/fixtures/template_projects/variants.py).

* ``test_truth_*``: each candidate is served by its own `langgraph dev` over a copy
  of the live threads' `.langgraph_api/`; the threads are resumed or continued and
  the breakage is asserted (the unchanged project is the control).
* ``test_gate_*``: the unchanged copy passes with no block, with and without the live
  lock; every breaking change blocks with the right code and exact thread ids; no
  finding names a managed value; the help fits the state kind.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from migrations_playbook.staging.live_copy import absolute_config
from migrations_playbook.staging.server import DevServer
from tests.fixtures.gate_projects.class_variants import Results
from tests.fixtures.template_projects.variants import (
    BREAKING,
    CASEBOOK,
    MANAGED,
    PACKAGE,
    SRC,
    STATE_KIND,
    V1_TRUTH,
    expected_ids,
    make_variant,
    populate,
    run_truth,
)

WORKERS = 3
"""Staging servers / gate subprocesses at a time."""
GRAPHS = list(STATE_KIND)


@dataclass(frozen=True)
class LiveProject:
    url: str
    project: Path
    """The original: served live, and first on PYTHONPATH for every playbook call."""
    persisted: Path
    """The `.langgraph_api/` written by the graceful stop after `populate`."""
    locks: Path
    threads: dict[str, list[str]]
    scratch: Path

    @property
    def env(self) -> dict[str, str]:
        """The original package importable first, as an editable install of it would make it."""
        return {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(self.project / SRC), os.environ.get("PYTHONPATH")])),
        }


def _playbook(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "migrations_playbook", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveProject]:
    root = tmp_path_factory.mktemp("gate-templates")
    project = root / "original"
    shutil.copytree(CASEBOOK, project, ignore=shutil.ignore_patterns("__pycache__"))
    src = {"PYTHONPATH": str(project / SRC)}
    locks = root / "live-locks"
    contract = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "migrations_playbook",
            "contract",
            "--config",
            str(project / "langgraph.json"),
            "--write",
            "--contracts-dir",
            str(locks),
            "--records-dir",
            str(root / "live-records"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **src},
    )
    with DevServer(project / "langgraph.json", project, env=src) as server:
        threads = asyncio.run(populate(server.url))
    _, errors = contract.communicate(timeout=300)
    assert contract.returncode == 0, errors
    persisted = root / "persisted" / ".langgraph_api"
    shutil.copytree(project / ".langgraph_api", persisted)
    with DevServer(project / "langgraph.json", project, env=src) as server:
        yield LiveProject(
            url=server.url, project=project, persisted=persisted, locks=locks, threads=threads, scratch=root / "variants"
        )


class Prefetch:
    """Jobs for the selected tests, run a few at a time, ahead of the tests that read them."""

    def __init__(self, jobs: dict[tuple[str, str], Callable[[], Any]]) -> None:
        self.executor = ThreadPoolExecutor(max_workers=WORKERS)
        self.futures: dict[tuple[str, str], Future] = {key: self.executor.submit(job) for key, job in jobs.items()}

    def result(self, key: tuple[str, str]) -> Any:
        return self.futures[key].result(timeout=600)

    def close(self) -> None:
        self.executor.shutdown(wait=True, cancel_futures=True)


def _selected(request: pytest.FixtureRequest, *tests: str) -> list[str]:
    """The variant ids of the selected items of these test functions (after -k / deselection)."""
    return sorted(
        {
            item.callspec.params["variant_id"]
            for item in request.session.items
            if getattr(item, "module", None) is request.module and item.originalname in tests
        }
    )


def test_the_original_package_is_importable_first(live: LiveProject, tmp_path: Path) -> None:
    """The precondition of every gate test here: from a changed copy's folder, a plain
    ``import casebook.state`` resolves to the original, so only the gate's own loading
    can make the copy win."""
    candidate = make_variant(tmp_path, "candidate", BREAKING["tasks-dataclass-field-without-default"][0])
    found = subprocess.run(
        [sys.executable, "-c", f"import {PACKAGE}.tasks.state as m; print(m.__file__)"],
        capture_output=True,
        text=True,
        timeout=60,
        env=live.env,
        cwd=candidate.parent,
    )
    assert found.returncode == 0, found.stderr
    assert Path(found.stdout.strip()) == (live.project / SRC / PACKAGE / "tasks" / "state.py").resolve()


# -- the facts ------------------------------------------------------------------------


def _stage(live: LiveProject, variant_id: str) -> Results:
    """Serve the variant on a fresh copy of the live threads and run its truth steps."""
    edits, _, truth = BREAKING[variant_id] if variant_id != "unchanged" else ([], [], V1_TRUTH)
    root = live.scratch / f"stage-{variant_id}"
    candidate = make_variant(root, "candidate", edits)
    workdir = root / "staging"
    shutil.copytree(live.persisted, workdir / ".langgraph_api")
    (workdir / "langgraph.json").write_text(json.dumps(absolute_config(candidate), indent=2))
    with DevServer(workdir / "langgraph.json", workdir, env={"PYTHONPATH": str(candidate.parent / SRC)}) as server:
        return asyncio.run(run_truth(server.url, live.threads, truth.steps))


TRUTH_TESTS = ("test_truth_unchanged_project_resumes_every_position", "test_truth_breaking_change_breaks_live_threads")


@pytest.mark.parametrize("variant_id", ["unchanged"])
def test_truth_unchanged_project_resumes_every_position(staged: Callable[[str], Results], variant_id: str) -> None:
    V1_TRUTH.check(staged(variant_id))


@pytest.mark.parametrize("variant_id", list(BREAKING), ids=list(BREAKING))
def test_truth_breaking_change_breaks_live_threads(staged: Callable[[str], Results], variant_id: str) -> None:
    BREAKING[variant_id][2].check(staged(variant_id))


# -- the gate -----------------------------------------------------------------------------

IDENTITY = {"unchanged-with-lock": True, "unchanged-without-lock": False}


def _gate(live: LiveProject, variant_id: str) -> tuple[int, dict, str]:
    with_lock = IDENTITY.get(variant_id, True)
    edits = BREAKING[variant_id][0] if variant_id in BREAKING else []
    candidate = make_variant(live.scratch / f"gate-{variant_id}", "candidate", edits)
    result = _playbook(
        live.env,
        "gate",
        "--live",
        live.url,
        "--candidate",
        str(candidate),
        "--format",
        "json",
        *(["--live-contract", str(live.locks)] if with_lock else []),
    )
    assert result.returncode in (0, 1), result.stderr
    return result.returncode, json.loads(result.stdout), result.stderr


GATE_TESTS = (
    "test_gate_passes_unchanged_project_with_no_block",
    "test_gate_passes_unchanged_project_with_no_finding_when_locked",
    "test_gate_blocks_breaking_change_in_a_non_entry_module",
    "test_no_finding_names_a_managed_value",
    "test_help_fits_the_state_kind",
)
ALL_REPORTS = [*IDENTITY, *BREAKING]


@pytest.fixture(scope="module")
def jobs(request: pytest.FixtureRequest, live: LiveProject) -> Iterator[Prefetch]:
    """The gate runs and the staging servers of the selected tests, in one pool (the gate runs
    first: they are short, and the staging servers' startup overlaps them)."""
    prefetch = Prefetch(
        {
            **{("gate", vid): (lambda vid=vid: _gate(live, vid)) for vid in _selected(request, *GATE_TESTS)},
            **{("stage", vid): (lambda vid=vid: _stage(live, vid)) for vid in _selected(request, *TRUTH_TESTS)},
        }
    )
    yield prefetch
    prefetch.close()


@pytest.fixture
def staged(jobs: Prefetch) -> Callable[[str], Results]:
    return lambda variant_id: jobs.result(("stage", variant_id))


@pytest.fixture
def gated(jobs: Prefetch) -> Callable[[str], tuple[int, dict, str]]:
    return lambda variant_id: jobs.result(("gate", variant_id))


@pytest.mark.parametrize("variant_id", list(IDENTITY), ids=list(IDENTITY))
@pytest.mark.parametrize("graph_id", GRAPHS)
def test_gate_passes_unchanged_project_with_no_block(
    live: LiveProject, gated: Callable[[str], tuple[int, dict, str]], variant_id: str, graph_id: str
) -> None:
    """No false block on unchanged code, for each state kind; without a lock only warnings
    about what the API cannot show (reducers, call order) are allowed."""
    code, report, stderr = gated(variant_id)
    assert "Traceback" not in stderr
    assert (code, report["verdict"]) == (0, "pass"), report["findings"]
    mine = [f for f in report["findings"] if f["graph_id"] == graph_id]
    assert [f for f in mine if f["severity"] == "block"] == []
    assert {f["code"] for f in mine} <= {"REDUCER_UNVERIFIED", "CALL_ORDER_UNVERIFIED"}, mine
    positions = [p for p in live.threads if p.startswith(graph_id + "_")]
    assert report["graphs"][graph_id]["threads_scanned"] == len(positions)


@pytest.mark.parametrize("variant_id", ["unchanged-with-lock"])
def test_gate_passes_unchanged_project_with_no_finding_when_locked(
    gated: Callable[[str], tuple[int, dict, str]], variant_id: str
) -> None:
    code, report, _ = gated(variant_id)
    assert (code, report["verdict"], report["findings"]) == (0, "pass", [])


@pytest.mark.parametrize("variant_id", list(BREAKING), ids=list(BREAKING))
def test_gate_blocks_breaking_change_in_a_non_entry_module(
    live: LiveProject, gated: Callable[[str], tuple[int, dict, str]], variant_id: str
) -> None:
    code, report, stderr = gated(variant_id)
    assert "Traceback" not in stderr
    assert (code, report["verdict"]) == (1, "block"), report["findings"]
    got = {(f["code"], f["severity"], f["graph_id"], f["node"], f["field"]): f for f in report["findings"]}
    expected = BREAKING[variant_id][1]
    for finding_code, severity, graph, node, field, position in expected:
        key = (finding_code, severity, graph, node, field)
        assert key in got, f"missing {key}; got {sorted(got, key=str)}"
        ids = expected_ids(live.threads, position)
        assert set(got[key]["thread_ids"]) == ids, got[key]
        assert got[key]["thread_count"] == len(ids), got[key]
    unexpected_blocks = {k for k in got if k[1] == "block"} - {e[:5] for e in expected}
    assert not unexpected_blocks, [got[k] for k in unexpected_blocks]


@pytest.mark.parametrize("variant_id", ALL_REPORTS, ids=ALL_REPORTS)
def test_no_finding_names_a_managed_value(gated: Callable[[str], tuple[int, dict, str]], variant_id: str) -> None:
    """is_last_step / remaining_steps are computed per step, never stored: no finding (FIELD_DROPPED,
    REDUCER_*, FIELD_REQUIRED_MISSING...) may name them."""
    _, report, _ = gated(variant_id)
    named = [
        (f["code"], f["graph_id"], f["field"]) for f in report["findings"] if f["field"] in MANAGED.get(f["graph_id"], set())
    ]
    assert named == []


def test_live_lock_keeps_managed_values_apart_from_fields(live: LiveProject) -> None:
    lock = json.loads((live.locks / "agent.json").read_text())
    assert (lock["state_kind"], sorted(lock["managed"]), sorted(lock["fields"])) == (
        "dataclass",
        sorted(MANAGED["agent"]),
        ["messages"],
    )


@pytest.mark.parametrize("variant_id", ALL_REPORTS, ids=ALL_REPORTS)
def test_help_fits_the_state_kind(gated: Callable[[str], tuple[int, dict, str]], variant_id: str) -> None:
    """A dataclass or pydantic field is fixed with a default, never with NotRequired; a dataclass
    has no pydantic validators to write; a TypedDict key is made NotRequired and read with .get()."""
    _, report, _ = gated(variant_id)
    unfit = []
    for finding in report["findings"]:
        kind, text = STATE_KIND[finding["graph_id"]], finding["help"]
        if kind in ("pydantic", "dataclass") and "NotRequired" in text:
            unfit.append(finding)
        if kind == "dataclass" and "validator" in text:
            unfit.append(finding)
        if finding["code"] == "FIELD_REQUIRED_MISSING" and kind != "typeddict" and "default" not in text:
            unfit.append(finding)
        if finding["code"] == "FIELD_REQUIRED_MISSING" and kind == "typeddict" and "NotRequired" not in text:
            unfit.append(finding)
    assert unfit == [], [(f["code"], f["graph_id"], f["help"]) for f in unfit]
