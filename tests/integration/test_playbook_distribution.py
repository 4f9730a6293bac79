"""The playbook distribution (migrations_playbook/pyproject.toml) installed alone into another project's
environment, gating that project's live server.

The wheel is built from the folder, installed into a fresh virtual environment that holds
only it and what the fixture project itself needs (LangGraph; constraints.txt keeps the
versions this repo tested), never langgraph-api, the CLI, the in-memory runtime or a model
client. That environment runs `gate`, `inflight` and `contract --check` against a real
`langgraph dev` started from the main environment (the fixture project's server), from a
folder outside this repo so nothing of it is importable there.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from migrations_playbook.staging.server import DevServer
from tests.conftest import REPO_ROOT
from tests.fixtures.gate_projects.variants import HELPDESK_TRIAGE_RENAMED, V1, make_variant, populate

pytestmark = pytest.mark.integration

FORBIDDEN = {"langgraph-api", "langgraph-cli", "langgraph-runtime-inmem", "langchain-openai", "versioned-graphs"}
"""What a team's environment must not need for the gate."""


@dataclass(frozen=True)
class Installed:
    bin: Path
    """The fresh environment's bin/ (its `playbook` and `python`)."""
    packages: dict[str, str]
    """Every distribution installed there: name -> version."""
    outside: Path
    """A working folder outside this repo."""


def _run(argv: list[str], cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=cwd, env=env)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    root = tmp_path_factory.mktemp("distribution")
    wheels = root / "wheels"
    # Built from a copy: setuptools writes build/ and *.egg-info/ into the folder it builds.
    source = root / "source"
    shutil.copytree(
        REPO_ROOT / "migrations_playbook",
        source,
        ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__", "contracts", "records"),
    )
    built = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(wheels), str(source)], cwd=root)
    assert built.returncode == 0, built.stderr
    (wheel,) = wheels.glob("langgraph_playbook-*.whl")
    venv = root / "venv"
    made = _run([sys.executable, "-m", "venv", str(venv)], cwd=root)
    assert made.returncode == 0, made.stderr
    bin_ = venv / "bin"
    pip = _run(
        [
            str(bin_ / "python"),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-compile",
            "-c",
            str(REPO_ROOT / "constraints.txt"),
            str(wheel),
        ],
        cwd=root,
    )
    assert pip.returncode == 0, pip.stderr
    listed = _run([str(bin_ / "python"), "-m", "pip", "list", "--format", "json"], cwd=root)
    packages = {p["name"].lower(): p["version"] for p in json.loads(listed.stdout)}
    outside = root / "work"
    outside.mkdir()
    return Installed(bin_, packages, outside)


@dataclass(frozen=True)
class Live:
    url: str
    project: Path
    threads: dict[str, list[str]]


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory):
    """The fixture project's own server, from the main environment (the team's deployment)."""
    root = tmp_path_factory.mktemp("distribution-live")
    project = root / "v1"
    shutil.copytree(V1, project)
    with DevServer(project / "langgraph.json", project) as server:
        yield Live(server.url, project, asyncio.run(populate(server.url)))


def test_the_distribution_holds_the_gate_and_nothing_of_the_deployment(installed: Installed) -> None:
    assert "langgraph-playbook" in installed.packages
    assert {"langgraph", "langgraph-sdk"} <= set(installed.packages)
    assert not FORBIDDEN & set(installed.packages), sorted(FORBIDDEN & set(installed.packages))
    version = _run([str(installed.bin / "playbook"), "--version"], cwd=installed.outside)
    assert version.returncode == 0
    assert version.stdout.strip() == f"playbook {installed.packages['langgraph-playbook']} (langgraph-playbook)"
    # It imports nothing of this repo's deployment: no `graphs` package there.
    probe = _run(
        [str(installed.bin / "python"), "-c", "import importlib.util as u; print(u.find_spec('graphs'))"], cwd=installed.outside
    )
    assert probe.stdout.strip() == "None", probe.stdout + probe.stderr


def test_gate_inflight_and_contract_check_run_from_the_team_environment(installed: Installed, live: Live) -> None:
    playbook = str(installed.bin / "playbook")
    candidate = make_variant(installed.outside, "candidate", HELPDESK_TRIAGE_RENAMED)

    gate = _run(
        [
            playbook,
            "gate",
            "--live",
            live.url,
            "--candidate",
            str(candidate),
            "--graph",
            "helpdesk",
            "--format",
            "json",
            "--no-progress",
        ],
        cwd=installed.outside,
    )
    assert gate.returncode == 1, gate.stderr
    report = json.loads(gate.stdout)
    (missing,) = [f for f in report["findings"] if f["code"] == "NODE_MISSING"]
    assert (missing["node"], set(missing["thread_ids"])) == ("triage", set(live.threads["helpdesk_at_triage"]))
    same = _run(
        [
            playbook,
            "gate",
            "--live",
            live.url,
            "--candidate",
            str(live.project / "langgraph.json"),
            "--format",
            "json",
            "--no-progress",
        ],
        cwd=installed.outside,
    )
    assert same.returncode == 0, same.stdout + same.stderr

    inflight = _run([playbook, "inflight", "--live", live.url, "--format", "json"], cwd=installed.outside)
    assert inflight.returncode == 0, inflight.stderr
    rows = json.loads(inflight.stdout)["graphs"]
    assert any(r["status"] == "interrupted" and r["next"] == "triage" and r["threads"] == 2 for r in rows["helpdesk"]), rows

    contracts = installed.outside / "contracts"
    config = str(live.project / "langgraph.json")
    written = _run(
        [
            playbook,
            "contract",
            "--config",
            config,
            "--write",
            "--contracts-dir",
            str(contracts),
            "--records-dir",
            str(installed.outside / "records"),
        ],
        cwd=installed.outside,
    )
    assert written.returncode == 0, written.stderr
    (installed.outside / "records").mkdir(exist_ok=True)
    hashes = "\n".join(f"  - {m[1]} {m[2]}" for m in re.finditer(r"^(\S+) (sha256:[0-9a-f]+)", written.stdout, re.M))
    assert hashes.count("sha256:") == 3, written.stdout
    (installed.outside / "records" / "0001-baseline.md").write_text(f"---\nid: 0001-baseline\ncontracts:\n{hashes}\n---\n")
    check = _run(
        [
            playbook,
            "contract",
            "--config",
            config,
            "--check",
            "--contracts-dir",
            str(contracts),
            "--records-dir",
            str(installed.outside / "records"),
        ],
        cwd=installed.outside,
    )
    assert check.returncode == 0, check.stdout + check.stderr
    drifted = _run(
        [
            playbook,
            "contract",
            "--config",
            str(candidate),
            "--check",
            "--contracts-dir",
            str(contracts),
            "--records-dir",
            str(installed.outside / "records"),
        ],
        cwd=installed.outside,
    )
    assert drifted.returncode == 1, drifted.stdout + drifted.stderr
