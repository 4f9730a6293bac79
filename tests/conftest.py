"""Shared test configuration.

Lanes: `tests/unit` (no network: run with --disable-socket) and
`tests/integration` (a real `langgraph dev` started by the fixtures in
`tests/integration/conftest.py`).
"""

from __future__ import annotations

import os
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
