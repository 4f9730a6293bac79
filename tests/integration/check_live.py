"""The live v1 fixture deployment `playbook check` is run against, shared by the check test files.

test_check_server.py and test_check_outputs_server.py each serve it once per module (`--dist loadfile` puts
each file on one worker, so the two files share the lane's two workers instead of one file pinning one).
Each `check` is mostly waiting (three staging servers booting, runs queued on them: about 60% of one core), so
a file's `make test` checks run two at a time in the background (`ahead_of`), ahead of the tests that read them.

A real `langgraph dev` serves the v1 fixture project with threads at mixed positions (two tickets paused at
`triage`, one finished, a case paused inside a subgraph, a chat), restarted after the graceful stop that
wrote every checkpoint: the live server `check` reads, its folder the persistence it copies.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from migrations_playbook.staging.server import DevServer
from tests.fixtures.gate_projects import variants
from tests.integration.background import Background, ahead
from tests.playbook_cli import playbook


@dataclass(frozen=True)
class Live:
    url: str
    folder: Path
    locks: Path
    threads: dict[str, list[str]]
    root: Path


@pytest.fixture(scope="module", name="live")
def live_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    """The module's live v1 deployment (import this fixture into a test module to use it as ``live``)."""
    root = tmp_path_factory.mktemp("check")
    folder = root / "live"
    shutil.copytree(variants.V1, folder)
    with DevServer(folder / "langgraph.json", folder) as server:
        threads = asyncio.run(variants.populate(server.url))
    locks = root / "locks"
    written = playbook("contract", "--config", str(folder / "langgraph.json"), "--write", "--contracts-dir", str(locks))
    assert written.returncode == 0, written.stderr
    # Restarted after the graceful stop, which wrote every checkpoint: the live server `check` reads.
    with DevServer(folder / "langgraph.json", folder) as server:
        yield Live(server.url, folder, locks, threads, root)


def check_args(live: Live, candidate: Path) -> tuple[str, ...]:
    """`playbook check` on the live fixture with its deployed code and locks, against ``candidate``."""
    folder = str(live.folder)
    source = ("--live", live.url, "--persistence", folder, "--live-code", folder, "--live-contract", str(live.locks))
    return ("check", *source, "--candidate", str(candidate))


def check(live: Live, candidate: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    result = playbook(*check_args(live, candidate), "--format", "json", *extra)
    assert result.returncode in (0, 1), result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["command"] == "check" and report["gate_result_version"] == "1"
    assert all(f["settled"] in ("proven", "disproved", "unverified") for f in report["findings"]), report["findings"]
    return result.returncode, report


def gate_finding(report: dict[str, Any], code: str) -> dict[str, Any]:
    (found,) = [f for f in report["findings"] if f["code"] == code]
    return found


Run = tuple[Callable[[Live], Path], tuple[str, ...]]
"""A `check` a test reads: its candidate (made from the live deployment) and its extra arguments."""

Checks = Background[tuple[int, dict[str, Any]]]
"""The `check` runs of a module's tests, in the background: ``result(test id)`` is ``check``'s answer."""


def ahead_of(request: pytest.FixtureRequest, live: Live, runs: dict[str, Run]) -> Iterator[Checks]:
    """For a module-scoped fixture: the `check` of each selected test in ``runs`` (test id -> its run), started in
    the background (tests/integration/background.py), ahead of the tests that read them."""
    yield from ahead(request, {name: partial(_run, live, made, extra) for name, (made, extra) in runs.items()})


def _run(live: Live, made: Callable[[Live], Path], extra: tuple[str, ...]) -> tuple[int, dict[str, Any]]:
    return check(live, made(live), *extra)
