"""The LangGraph version sets the playbook supports, and the environments that test them.

A team installs the playbook beside its graphs (it imports the candidate in-process), so the
playbook runs on the team's langgraph, langgraph-checkpoint, langgraph-sdk, langchain-core and
checkpointer packages. `VERSION_SETS` is the tested matrix: per langgraph minor from 0.6 on, its
lowest and highest release, each with exact pins of everything else (what pip resolved for that
langgraph, or the lowest the playbook declares, so the declared lower bounds are the tested ones).
`OLDEST` runs in `make test` (`NEWEST` is the pinned set, installed there by test_playbook_distribution.py);
every set runs in `make test-versions` (tests/integration/test_playbook_versions.py).

`team_environment` makes one: a fresh virtual environment with the wheel built from
migrations_playbook/ (`build_wheel`) installed without its dependencies, then the set's pins (so
the pins, not the wheel's ranges, decide; `pip check` then proves the wheel's declared ranges admit
them). `python -m tests.playbook_versions` lists the sets.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class VersionSet:
    name: str
    pins: tuple[str, ...]
    """Exact ``name==version`` of every LangGraph package the team environment holds, and the
    PostgreSQL driver (langgraph-playbook[postgres])."""
    note: str = ""

    def versions(self) -> dict[str, str]:
        """Distribution name (extras left out) -> pinned version."""
        return {pin.partition("==")[0].partition("[")[0]: pin.partition("==")[2] for pin in self.pins}


VERSION_SETS: tuple[VersionSet, ...] = (
    VersionSet(
        "lg-0.6.0",
        (
            "langgraph==0.6.0",
            "langgraph-prebuilt==0.6.0",
            "langgraph-checkpoint==2.1.0",
            "langgraph-sdk==0.2.10",
            "langchain-core==0.3.72",
            "langgraph-checkpoint-sqlite==2.0.11",
            "langgraph-checkpoint-postgres==2.0.21",
            "psycopg[binary]==3.2.1",
        ),
        "the oldest: every lower bound the playbook declares",
    ),
    VersionSet(
        "lg-0.6.11",
        (
            "langgraph==0.6.11",
            "langgraph-prebuilt==0.6.5",
            "langgraph-checkpoint==3.0.1",
            "langgraph-sdk==0.2.15",
            "langchain-core==0.3.86",
            "langgraph-checkpoint-sqlite==3.0.3",
            "langgraph-checkpoint-postgres==3.0.5",
            "psycopg[binary]==3.3.9",
        ),
    ),
    VersionSet(
        "lg-1.0.0",
        (
            "langgraph==1.0.0",
            "langgraph-prebuilt==1.0.0",
            "langgraph-checkpoint==2.1.2",
            "langgraph-sdk==0.2.15",
            "langchain-core==1.0.0",
            "langgraph-checkpoint-sqlite==2.0.11",
            "langgraph-checkpoint-postgres==2.0.25",
            "psycopg[binary]==3.3.9",
        ),
    ),
    VersionSet(
        "lg-1.0.10",
        (
            "langgraph==1.0.10",
            "langgraph-prebuilt==1.0.13",
            "langgraph-checkpoint==4.3.2",
            "langgraph-sdk==0.3.15",
            "langchain-core==1.8.3",
            "langgraph-checkpoint-sqlite==3.1.2",
            "langgraph-checkpoint-postgres==3.2.0",
            "psycopg[binary]==3.3.9",
        ),
    ),
    VersionSet(
        "lg-1.1.0",
        (
            "langgraph==1.1.0",
            "langgraph-prebuilt==1.0.8",
            "langgraph-checkpoint==4.0.0",
            "langgraph-sdk==0.3.0",
            "langchain-core==1.2.0",
            "langgraph-checkpoint-sqlite==3.0.3",
            "langgraph-checkpoint-postgres==3.0.5",
            "psycopg[binary]==3.3.9",
        ),
        "langgraph-sdk before its _async split, langgraph-checkpoint before writes_sort_key",
    ),
    VersionSet(
        "lg-1.1.10",
        (
            "langgraph==1.1.10",
            "langgraph-prebuilt==1.0.13",
            "langgraph-checkpoint==4.3.2",
            "langgraph-sdk==0.3.15",
            "langchain-core==1.8.3",
            "langgraph-checkpoint-sqlite==3.1.2",
            "langgraph-checkpoint-postgres==3.2.0",
            "psycopg[binary]==3.3.9",
        ),
    ),
    VersionSet(
        "lg-1.2.0",
        (
            "langgraph==1.2.0",
            "langgraph-prebuilt==1.1.0",
            "langgraph-checkpoint==4.1.0",
            "langgraph-sdk==0.3.6",
            "langchain-core==1.4.0",
            "langgraph-checkpoint-sqlite==3.1.0",
            "langgraph-checkpoint-postgres==3.1.0",
            "psycopg[binary]==3.3.9",
        ),
        "the first DeltaChannel",
    ),
    VersionSet(
        "lg-1.2.24",
        (
            "langgraph==1.2.24",
            "langgraph-prebuilt==1.1.3",
            "langgraph-checkpoint==4.3.2",
            "langgraph-sdk==0.4.14",
            "langchain-core==1.8.3",
            "langgraph-checkpoint-sqlite==3.1.2",
            "langgraph-checkpoint-postgres==3.2.0",
            "psycopg[binary]==3.3.9",
        ),
        "the newest: this repo's pinned set (constraints.txt)",
    ),
)
OLDEST = VERSION_SETS[0]
NEWEST = VERSION_SETS[-1]
BY_NAME = {s.name: s for s in VERSION_SETS}


def _errors(text: str) -> str:
    """pip's stderr without the warnings about index locations this machine does not have."""
    return "\n".join(line for line in text.splitlines() if not line.startswith("WARNING: Location "))


def run(argv: list[str], cwd: Path, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    """``argv`` with this repo's environment left out (no PYTHONPATH, no VIRTUAL_ENV)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PYTHONWARNINGS"] = "ignore"  # an old langgraph-checkpoint warns on import under a newer langchain-core
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=cwd, env=env)


def build_wheel(root: Path) -> Path:
    """The wheel built from a copy of migrations_playbook/ (setuptools writes build/ into the folder it builds)."""
    source = root / "source"
    shutil.copytree(
        REPO_ROOT / "migrations_playbook",
        source,
        ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__", "contracts", "records"),
    )
    built = run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(root / "wheels"), str(source)], cwd=root)
    if built.returncode != 0:
        raise RuntimeError(f"pip wheel failed:\n{_errors(built.stderr)}")
    (wheel,) = (root / "wheels").glob("langgraph_playbook-*.whl")
    return wheel


@dataclass(frozen=True)
class TeamEnvironment:
    version_set: VersionSet
    bin: Path
    packages: dict[str, str]
    """Every distribution installed there: name -> version."""
    check: str
    """`pip check`'s output: empty when every installed distribution's requirements hold."""

    @property
    def playbook(self) -> str:
        return str(self.bin / "playbook")

    @property
    def python(self) -> str:
        return str(self.bin / "python")


def team_environment(root: Path, wheel: Path, version_set: VersionSet) -> TeamEnvironment:
    """A fresh virtual environment under ``root`` holding the wheel and ``version_set`` (nothing of this repo)."""
    venv = root / version_set.name
    made = run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=root)
    if made.returncode != 0:
        raise RuntimeError(f"venv failed:\n{made.stderr}")
    bin_ = venv / "bin"
    # This repo's pip installs into the new environment (--python): no pip bootstrapped there.
    pip = [sys.executable, "-m", "pip", "--python", str(bin_ / "python"), "--disable-pip-version-check"]
    installed = run([*pip, "install", "--quiet", "--no-compile", *version_set.pins], cwd=root)
    if installed.returncode != 0:
        raise RuntimeError(f"pip install {' '.join(version_set.pins)} failed:\n{_errors(installed.stderr)}")
    # The wheel without its dependencies: its declared ranges must admit the set (`pip check`), never replace it.
    added = run([*pip, "install", "--quiet", "--no-compile", "--no-deps", str(wheel)], cwd=root)
    if added.returncode != 0:
        raise RuntimeError(f"pip install {wheel.name} failed:\n{_errors(added.stderr)}")
    listed = run([*pip, "list", "--format", "json"], cwd=root)
    packages = {p["name"].lower(): p["version"] for p in json.loads(listed.stdout)}
    checked = run([*pip, "check"], cwd=root)
    return TeamEnvironment(version_set, bin_, packages, "" if checked.returncode == 0 else checked.stdout + checked.stderr)


def main() -> None:
    for version_set in VERSION_SETS:
        role = " (oldest)" if version_set is OLDEST else " (newest)" if version_set is NEWEST else ""
        print(f"{version_set.name}{role}: {' '.join(version_set.pins)}" + (f"  # {version_set.note}" if version_set.note else ""))


if __name__ == "__main__":
    main()
