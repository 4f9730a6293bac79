"""Shared test configuration.

Lanes: `tests/unit` (no network: run with --disable-socket) and
`tests/integration` (a real `langgraph dev` started by the fixtures in
`tests/integration/conftest.py`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]

# Tests always run on the offline model and never trace to LangSmith,
# whatever the developer's shell says.
os.environ["MODEL"] = "offline"
os.environ["LANGSMITH_TRACING"] = "false"


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session", autouse=True)
def playbook_state_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """`playbook migrate` keeps its journal under ``$XDG_STATE_HOME/playbook/migrate/``: the tests'
    runs (and the playbook subprocesses they start, which inherit the environment) write it into a
    temporary folder of the session, never into the home folder of the machine running them."""
    folder = tmp_path_factory.mktemp("xdg-state")
    before = os.environ.get("XDG_STATE_HOME")
    os.environ["XDG_STATE_HOME"] = str(folder)
    yield folder
    if before is None:
        os.environ.pop("XDG_STATE_HOME", None)
    else:
        os.environ["XDG_STATE_HOME"] = before
