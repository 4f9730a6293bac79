"""`playbook` as a user runs it in the integration tests: a fresh process of this checkout's interpreter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tests.conftest import REPO_ROOT


def playbook(
    *args: str, timeout: float = 600, cwd: Path | None = None, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m migrations_playbook ARGS`` in a fresh process (``env``: variables over the test's own)."""
    return subprocess.run(
        [sys.executable, "-m", "migrations_playbook", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env=None if env is None else {**os.environ, **env},
        check=False,
    )


def run_check(
    live_url: str,
    persistence: Path,
    live_code: Path,
    candidate: Path,
    *extra: str,
    env: Mapping[str, str] | None = None,
    timeout: float = 600,
) -> tuple[int, dict[str, Any], str]:
    """``playbook check --format json`` against ``live_url``: (exit code, the JSON report or {} when it printed
    none, stderr)."""
    source = ("--live", live_url, "--persistence", str(persistence), "--live-code", str(live_code))
    result = playbook(
        "check", *source, "--candidate", str(candidate), *extra, "--format", "json", timeout=timeout, cwd=REPO_ROOT, env=env
    )
    report = json.loads(result.stdout) if result.stdout.lstrip().startswith("{") else {}
    return result.returncode, report, result.stderr
