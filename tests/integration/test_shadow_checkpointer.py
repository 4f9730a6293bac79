"""`playbook shadow --checkpointer` on a real PostgreSQL server and a real SQLite file.

The live side is the class fixtures' threads in a self-hosted store (tests/fixtures/gate_projects/
store_seed.py: the graphs compiled with `PostgresSaver` / `SqliteSaver` and invoked with a thread id
and graph id metadata), thread ids named after their positions. The deployed code is the class
fixture project; no ``--live-contract`` is given, so the shadow writes the deployed code's locks itself.
Identity passes with no finding and leaves every row of the store as it was; breaking variants of
several kinds are blocked naming the threads at the positions they break; safe ones pass.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.gate_projects import class_variants
from tests.fixtures.gate_projects.store_seed import seed_classes
from tests.integration.background import Background, ahead
from tests.integration.test_gate_checkpointer import SeededStore, _postgres_store, _sqlite_store

pytestmark = pytest.mark.integration

STORES = ("postgres", "sqlite")


def _sweep(variants: dict[str, str]) -> list[object]:
    """Every variant on both stores; `make test` runs each named one on the store named beside it (every store
    meets a breaking change and identity, every class of change meets a store), `make test-matrix` the rest."""
    return [
        pytest.param(
            kind, variant_id, id=f"{kind}-{variant_id}", marks=() if variants.get(variant_id) == kind else pytest.mark.matrix
        )
        for kind in STORES
        for variant_id in variants
    ]


BREAKING = {
    "goto-target-removed": "postgres",
    "func-calls-swapped": "sqlite",
    "tool-renamed": "",
    "send-payload-key-read": "",
}
SAFE = {"goto-target-renamed-with-goto": "postgres", "func-interrupt-appended-after": ""}
"""Variant -> the store `make test` runs it on ("": `make test-matrix` only, on both)."""


_SEEDED: dict[str, SeededStore] = {}
"""One seeded store per kind for the module: the tests parametrize ``store`` themselves (indirect), which makes
pytest build the module-scoped fixture once per test function; the shadow only reads the store, so one serves all."""


def _seeded(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, kind: str) -> SeededStore:
    if kind not in _SEEDED:
        if kind == "postgres":
            _SEEDED[kind] = _postgres_store(request.getfixturevalue("postgres"), "shadow_classes", seed_classes)
        else:
            _SEEDED[kind] = _sqlite_store(tmp_path_factory.mktemp("shadow-sqlite"), seed_classes)
    return _SEEDED[kind]


@pytest.fixture(scope="module", params=STORES)
def store(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> SeededStore:
    return _seeded(request, tmp_path_factory, str(request.param))


IDENTITY = "test_identity_gives_no_finding_and_leaves_the_store_as_it_was"
BLOCKED = "test_a_breaking_change_is_blocked_naming_its_threads"
PASSES = "test_a_safe_change_passes"


@pytest.fixture(scope="module")
def shadowed(
    request: pytest.FixtureRequest, deployed: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Background[Any]]:
    """Each selected test's shadow, two at a time in the background from the module's start (each is mostly waiting
    on its staging servers: tests/integration/background.py); the stores are seeded first, for the selected kinds."""
    selected = " ".join(item.name for item in request.session.items if getattr(item, "module", None) is request.module)
    stores = {kind: _seeded(request, tmp_path_factory, kind) for kind in STORES if f"[{kind}" in selected}
    root = tmp_path_factory.mktemp("candidates")
    jobs: dict[str, Any] = {}
    for kind, seeded in stores.items():
        jobs[f"{IDENTITY}[{kind}]"] = partial(_identity, seeded, deployed)
        for test, variants in ((BLOCKED, class_variants.BREAKING), (PASSES, class_variants.SAFE)):
            for variant_id in BREAKING if test == BLOCKED else SAFE:
                edits = variants[variant_id][0]
                jobs[f"{test}[{kind}-{variant_id}]"] = partial(_variant, seeded, deployed, root / f"{kind}-{variant_id}", edits)
    yield from ahead(request, jobs)


def _identity(store: SeededStore, deployed: Path) -> tuple[int, dict, Any, Any]:
    before = store.dump()
    code, report = _shadow(store, deployed, deployed / "langgraph.json")
    return code, report, before, store.dump()


def _variant(store: SeededStore, deployed: Path, root: Path, edits: Any) -> tuple[int, dict]:
    return _shadow(store, deployed, class_variants.make_variant(root, "candidate", edits))


@pytest.fixture(scope="module")
def deployed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("deployed") / "v1"
    shutil.copytree(class_variants.CLASSES, folder, ignore=shutil.ignore_patterns("__pycache__"))
    return folder


def _shadow(store: SeededStore, deployed: Path, candidate: Path) -> tuple[int, dict]:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "migrations_playbook",
            "shadow",
            "--checkpointer",
            store.uri,
            "--live-code",
            str(deployed),
            "--candidate",
            str(candidate),
            "--all",
            "--resume",
            '"yes"',
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode in (0, 1), done.stderr
    assert "s3cret" not in done.stdout + done.stderr  # the store's password is never printed
    return done.returncode, json.loads(done.stdout)


def test_identity_gives_no_finding_and_leaves_the_store_as_it_was(store: SeededStore, shadowed: Background[Any]) -> None:
    code, report, before, after = shadowed.result(f"{IDENTITY}[{store.kind}]")
    assert before[store.holds_threads]
    assert (code, report["verdict"], report["findings"]) == (0, "pass", []), report["findings"]
    assert report["notes"][1].startswith("25 of 25 thread(s) run on both codes"), report["notes"]
    assert after == before


@pytest.mark.parametrize(("store", "variant_id"), _sweep(BREAKING), indirect=["store"])
def test_a_breaking_change_is_blocked_naming_its_threads(store: SeededStore, shadowed: Background[Any], variant_id: str) -> None:
    _, expected, _ = class_variants.BREAKING[variant_id]
    code, report = shadowed.result(f"{BLOCKED}[{store.kind}-{variant_id}]")
    blocks = [f for f in report["findings"] if f["severity"] == "block"]
    assert code == 1, report["findings"]
    named = {t for f in blocks for t in f["thread_ids"]}
    for *_, position in expected:
        assert named & set(class_variants.expected_ids(store.threads, position)), (position, blocks)


@pytest.mark.parametrize(("store", "variant_id"), _sweep(SAFE), indirect=["store"])
def test_a_safe_change_passes(store: SeededStore, shadowed: Background[Any], variant_id: str) -> None:
    code, report = shadowed.result(f"{PASSES}[{store.kind}-{variant_id}]")
    assert (code, [f for f in report["findings"] if f["severity"] == "block"]) == (0, [])
