"""The playbook on every supported LangGraph version set, installed as a team installs it.

For each set of tests/playbook_versions.py (`make test` runs the oldest; `make test-versions` every set,
`make test-matrix` every set but the oldest), the wheel built from migrations_playbook/ goes into a fresh virtual
environment holding exactly that set (langgraph, langgraph-prebuilt, langgraph-checkpoint,
langgraph-sdk, langchain-core, the SQLite and PostgreSQL savers) and nothing of this repo; `pip
check` proves the wheel's declared ranges admit the set. That environment then runs the
distribution test's checks:

- against a live Agent Server (the fixture project's `langgraph dev`, from the main environment:
  the gate talks to it over HTTP through the set's own langgraph-sdk): `gate` blocks a rename
  (NODE_MISSING naming the paused threads) and passes the same code, `inflight` counts the paused
  threads, `contract --write`, `--check` passes and fails on the changed code;
- against self-hosted checkpointers written by the set's own savers (SQLite, PostgreSQL; the
  threads made by tests/fixtures/gate_projects/version_seed.py run in that environment): `gate
  --checkpointer` blocks the rename and passes the same code, `inflight` counts the threads.

The environments are made once per set per session (module-scoped fixture), two at a time in the
background, in a temporary folder. One set: `pytest tests/integration/test_playbook_versions.py -k lg-1.1.0`.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import sys
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from packaging.version import Version

from migrations_playbook.staging.server import DevServer
from tests.conftest import REPO_ROOT
from tests.fixtures.gate_projects.variants import HELPDESK_TRIAGE_RENAMED, V1, make_variant, populate
from tests.playbook_versions import OLDEST, VERSION_SETS, TeamEnvironment, VersionSet, build_wheel, run, team_environment
from tests.postgres_server import PostgresServer

pytestmark = pytest.mark.integration

SEED = Path(__file__).resolve().parent.parent / "fixtures" / "gate_projects" / "version_seed.py"
FORBIDDEN = {"langgraph-api", "langgraph-cli", "langgraph-runtime-inmem", "langchain-openai", "versioned-graphs"}
STORE_PAUSED = {"helpdesk-triage-0", "helpdesk-triage-1"}
"""The helpdesk threads version_seed.py leaves paused at triage."""


def _set(version_set: VersionSet) -> Any:
    """The oldest runs in `make test`; the others are `matrix`. The newest is this repo's pinned set, which
    `make test` installs from the wheel anyway (test_playbook_distribution.py: install, nothing of the deployment,
    `gate`, `inflight`, `contract --check` on a live server) and whose savers every store test uses."""
    marks = [] if version_set is OLDEST else [pytest.mark.matrix]
    return pytest.param(version_set, id=version_set.name, marks=marks)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_wheel(tmp_path_factory.mktemp("versions-wheel"))


@pytest.fixture(scope="module")
def builds(
    request: pytest.FixtureRequest, wheel: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Future[TeamEnvironment]]]:
    """Every selected set's environment, made two at a time in the background from the first test on (pip
    mostly waits on the network and the disk), so a set's checks run while the next one installs."""
    selected: dict[str, VersionSet] = {}
    for item in request.session.items:
        callspec = getattr(item, "callspec", None)
        if item.module is request.module and callspec is not None and "team" in callspec.params:
            selected.setdefault(callspec.params["team"].name, callspec.params["team"])
    root = tmp_path_factory.mktemp("versions-env")
    pool = ThreadPoolExecutor(max_workers=2)
    try:
        yield {name: pool.submit(team_environment, root, wheel, version_set) for name, version_set in selected.items()}
    finally:
        pool.shutdown(cancel_futures=True)


@pytest.fixture(scope="module", params=[_set(s) for s in VERSION_SETS])
def team(request: pytest.FixtureRequest, builds: dict[str, Future[TeamEnvironment]], wheel: Path) -> TeamEnvironment:
    version_set: VersionSet = request.param
    if version_set.name not in builds:  # not seen among the selected tests (a plugin reordered them): made now
        builds[version_set.name] = Future()
        builds[version_set.name].set_result(
            team_environment(request.getfixturevalue("tmp_path_factory").mktemp("versions-env"), wheel, version_set)
        )
    return builds[version_set.name].result()


@dataclass(frozen=True)
class Live:
    url: str
    project: Path
    threads: dict[str, list[str]]


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    """The fixture project's own server, from the main environment (the team's deployment)."""
    project = tmp_path_factory.mktemp("versions-live") / "v1"
    shutil.copytree(V1, project)
    with DevServer(project / "langgraph.json", project) as server:
        yield Live(server.url, project, asyncio.run(populate(server.url)))


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A working folder outside this repo, with the candidate (v1 with helpdesk's triage renamed)."""
    make_variant(tmp_path, "candidate", HELPDESK_TRIAGE_RENAMED)
    return tmp_path


def _playbook(team: TeamEnvironment, cwd: Path, *argv: str) -> tuple[int, str, str]:
    done = run([team.playbook, *argv], cwd=cwd)
    return done.returncode, done.stdout, done.stderr


def _json(code: int, out: str, err: str) -> dict[str, Any]:
    try:
        loaded: dict[str, Any] = json.loads(out)
    except json.JSONDecodeError:
        pytest.fail(f"exit {code}, not JSON:\n{out}\n{err}")
    return loaded


def test_the_set_installs_beside_the_wheel_with_its_declared_ranges(team: TeamEnvironment, tmp_path: Path) -> None:
    for name, version in team.version_set.versions().items():
        assert team.packages.get(name) == version, (name, version, team.packages.get(name))
    assert team.check == "", f"the wheel's declared ranges do not admit {team.version_set.name}:\n{team.check}"
    assert not FORBIDDEN & set(team.packages), sorted(FORBIDDEN & set(team.packages))
    code, out, err = _playbook(team, tmp_path, "--version")
    assert (code, out.strip()) == (0, f"playbook {team.packages['langgraph-playbook']} (langgraph-playbook)"), err
    # Every module of the playbook imports on this set (contract_route needs Starlette, which every Agent Server
    # has), and the adapter (sources/compat.py) took each name from where this set has it, or its stand-in.
    probe = run(
        [
            team.python,
            "-c",
            "import importlib, importlib.util, json, pkgutil, migrations_playbook as m\n"
            "for i in pkgutil.walk_packages(m.__path__, 'migrations_playbook.'):\n"
            "    if i.name not in ('migrations_playbook.__main__', 'migrations_playbook.contract_route'):\n"
            "        importlib.import_module(i.name)\n"
            "from migrations_playbook.sources import compat\n"
            "sources = {n: getattr(compat, n).__module__ for n in compat.__all__}\n"
            "print(json.dumps({**sources, 'graphs': str(importlib.util.find_spec('graphs'))}))",
        ],
        cwd=tmp_path,
    )
    assert probe.returncode == 0, probe.stderr
    # ... and nothing of this repo's deployment is importable there (no `graphs` package).
    assert json.loads(probe.stdout) == {**_expected_sources(team.version_set), "graphs": "None"}, probe.stdout


def _expected_sources(version_set: VersionSet) -> dict[str, str]:
    """Where sources/compat.py must find each name on ``version_set`` (the module it comes from)."""
    pinned = {name: Version(v) for name, v in version_set.versions().items()}
    compat = "migrations_playbook.sources.compat"
    return {
        "HttpClient": "langgraph_sdk._async.http" if pinned["langgraph-sdk"] >= Version("0.3.6") else "langgraph_sdk.client",
        "DeltaChannel": "langgraph.channels.delta" if pinned["langgraph"] >= Version("1.2") else compat,
        "writes_sort_key": "langgraph.checkpoint.base" if pinned["langgraph-checkpoint"] >= Version("4.3") else compat,
    }


def test_gate_blocks_a_rename_and_passes_the_same_code_on_a_live_server(team: TeamEnvironment, live: Live, outside: Path) -> None:
    code, out, err = _playbook(
        team,
        outside,
        "gate",
        "--live",
        live.url,
        "--candidate",
        str(outside / "candidate" / "langgraph.json"),
        "--graph",
        "helpdesk",
        "--format",
        "json",
        "--no-progress",
    )
    assert code == 1, out + err
    (missing,) = [f for f in _json(code, out, err)["findings"] if f["code"] == "NODE_MISSING"]
    assert (missing["node"], set(missing["thread_ids"])) == ("triage", set(live.threads["helpdesk_at_triage"]))
    code, out, err = _playbook(
        team, outside, "gate", "--live", live.url, "--candidate", str(live.project / "langgraph.json"), "--format", "json"
    )
    assert code == 0, out + err
    assert _json(code, out, err)["verdict"] == "pass"


def test_inflight_counts_the_paused_threads_of_a_live_server(team: TeamEnvironment, live: Live, outside: Path) -> None:
    code, out, err = _playbook(team, outside, "inflight", "--live", live.url, "--format", "json")
    assert code == 0, err
    rows = _json(code, out, err)["graphs"]
    assert any(r["status"] == "interrupted" and r["next"] == "triage" and r["threads"] == 2 for r in rows["helpdesk"]), rows


@dataclass(frozen=True)
class Written:
    locks: Path
    """The v1 project's contract locks, written by the set's `playbook contract --write`."""
    records: Path
    hashes: str
    """The front matter's `contracts:` lines for them."""


@pytest.fixture(scope="module")
def written(team: TeamEnvironment, tmp_path_factory: pytest.TempPathFactory) -> Written:
    """`contract --write` on the v1 project, in the set's environment: the locks the store checks read too."""
    root = tmp_path_factory.mktemp("versions-locks")
    locks, records = root / "contracts", root / "records"
    code, out, err = _playbook(
        team,
        root,
        "contract",
        "--config",
        str(V1 / "langgraph.json"),
        "--write",
        "--contracts-dir",
        str(locks),
        "--records-dir",
        str(records),
    )
    assert code == 0, err
    hashes = "\n".join(f"  - {m[1]} {m[2]}" for m in re.finditer(r"^(\S+) (sha256:[0-9a-f]+)", out, re.M))
    return Written(locks, records, hashes)


def test_contract_write_then_check_passes_and_fails_on_the_changed_code(
    team: TeamEnvironment, written: Written, outside: Path
) -> None:
    assert written.hashes.count("sha256:") == 3, written.hashes
    written.records.mkdir(exist_ok=True)
    (written.records / "0001-baseline.md").write_text(f"---\nid: 0001-baseline\ncontracts:\n{written.hashes}\n---\n")
    dirs = ["--contracts-dir", str(written.locks), "--records-dir", str(written.records)]
    code, out, err = _playbook(team, outside, "contract", "--config", str(V1 / "langgraph.json"), "--check", *dirs)
    assert code == 0, out + err
    code, out, err = _playbook(
        team, outside, "contract", "--config", str(outside / "candidate" / "langgraph.json"), "--check", *dirs
    )
    assert code == 1, out + err


def _locks(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*.json"))}


def _pinned_locks(config: Path, folder: Path) -> dict[str, bytes]:
    """``config``'s locks as this repo's pinned environment (the newest set) writes them."""
    done = run(
        [
            sys.executable,
            "-m",
            "migrations_playbook",
            "contract",
            "--config",
            str(config),
            "--write",
            "--contracts-dir",
            str(folder),
        ],
        cwd=folder.parent,
    )
    assert done.returncode == 0, done.stderr
    return _locks(folder)


def test_the_locks_are_the_pinned_sets_byte_for_byte(team: TeamEnvironment, written: Written, tmp_path: Path) -> None:
    """A team that moves between supported versions sees no contract drift: the v1 project's locks are the same."""
    assert _locks(written.locks) == _pinned_locks(V1 / "langgraph.json", tmp_path / "pinned")


LAYOUTS = sorted(p for p in (REPO_ROOT / "tests" / "fixtures" / "layout_projects").iterdir() if (p / "langgraph.json").is_file())


@pytest.mark.matrix
@pytest.mark.parametrize("layout", LAYOUTS, ids=[p.name for p in LAYOUTS])
def test_every_project_layout_loads_and_locks_as_on_the_pinned_set(team: TeamEnvironment, layout: Path, tmp_path: Path) -> None:
    """tests/fixtures/layout_projects: loose modules, a package, src/ layouts, a local dependency (`make test-versions`)."""
    project = tmp_path / layout.name
    shutil.copytree(layout, project)
    code, _, err = _playbook(
        team,
        tmp_path,
        "contract",
        "--config",
        str(project / "langgraph.json"),
        "--write",
        "--contracts-dir",
        str(tmp_path / "locks"),
    )
    assert code == 0, err
    assert _locks(tmp_path / "locks") == _pinned_locks(project / "langgraph.json", tmp_path / "pinned")


@pytest.fixture(scope="module")
def stores(team: TeamEnvironment, request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A SQLite file and a PostgreSQL database (where a server can be started: conftest's `postgres`)
    holding the v1 threads, written by the set's own savers in one run of version_seed.py in the set's
    environment: kind -> the --checkpointer URI."""
    uris = {"sqlite": f"sqlite:///{tmp_path_factory.mktemp('versions-sqlite') / 'checkpoints.db'}"}
    postgres: PostgresServer | None
    try:
        postgres = request.getfixturevalue("postgres")
    except pytest.skip.Exception:
        postgres = None
    if postgres is not None:
        import psycopg

        name = f"versions_{team.version_set.name.replace('-', '_').replace('.', '_')}"
        with psycopg.connect(postgres.url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
            conn.execute(f'CREATE DATABASE "{name}"')
        uris["postgres"] = postgres.url_for(name)
    seeded = run([team.python, str(SEED), str(V1 / "langgraph.json"), *uris.values()], cwd=tmp_path_factory.getbasetemp())
    assert seeded.returncode == 0, seeded.stderr
    for positions in json.loads(seeded.stdout):
        assert set(positions["helpdesk_at_triage"]) == STORE_PAUSED, positions
    return uris


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_gate_and_inflight_read_a_store_the_sets_saver_wrote(
    team: TeamEnvironment, written: Written, stores: dict[str, str], outside: Path, kind: str
) -> None:
    if kind not in stores:
        pytest.skip("no PostgreSQL server on this machine (tests/postgres_server.py)")
    store = ["--checkpointer", stores[kind], "--live-contract", str(written.locks), "--format", "json"]
    code, out, err = _playbook(team, outside, "gate", *store, "--candidate", str(outside / "candidate" / "langgraph.json"))
    assert code == 1, out + err
    (missing,) = [f for f in _json(code, out, err)["findings"] if f["code"] == "NODE_MISSING"]
    assert (missing["node"], set(missing["thread_ids"])) == ("triage", STORE_PAUSED)
    code, out, err = _playbook(team, outside, "gate", *store, "--candidate", str(V1 / "langgraph.json"))
    assert code == 0, out + err
    code, out, err = _playbook(team, outside, "inflight", *store)
    assert code == 0, err
    rows = _json(code, out, err)["graphs"]
    assert any(r["status"] == "interrupted" and r["next"] == "triage" and r["threads"] == 2 for r in rows["helpdesk"]), rows
