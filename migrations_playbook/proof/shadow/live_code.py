"""Where the shadow proof's side A gets the deployed code: a checkout (``--live-code``) or a git ref
(``--live-ref``, checked out into a throwaway git worktree and removed afterwards).

The deployed code's langgraph.json is the folder's own (``DIR/langgraph.json``), else the file at the
candidate's place within its repository (a monorepo whose config is not at the root), or the file
given itself.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

from migrations_playbook.errors import UsageError


def _git(*args: str, cwd: Path) -> str:
    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False)
    except FileNotFoundError:
        raise UsageError("--live-ref needs git on PATH (or pass --live-code DIR, a checkout of the deployed code)") from None
    if done.returncode != 0:
        raise UsageError(f"git {' '.join(args)} failed: {(done.stderr or done.stdout).strip()[:300]}")
    return done.stdout.strip()


def _in_repo(candidate: Path) -> tuple[Path, Path]:
    """(the candidate's repository root, the config's path within it)."""
    root = Path(_git("rev-parse", "--show-toplevel", cwd=candidate.parent))
    return root, candidate.resolve().relative_to(root.resolve())


def _config_in(folder: Path, candidate: Path) -> Path:
    if folder.is_file():
        return folder
    if (folder / "langgraph.json").is_file():
        return folder / "langgraph.json"
    try:
        _, relative = _in_repo(candidate)
    except UsageError:
        relative = Path(candidate.name)
    if (folder / relative).is_file():
        return folder / relative
    raise UsageError(
        f"--live-code {folder}: no langgraph.json there (nor at {relative}): pass the deployed code's folder or config"
    )


@contextlib.contextmanager
def deployed_config(candidate: Path, *, live_code: Path | None, live_ref: str | None) -> Iterator[Path]:
    """The deployed code's langgraph.json, for as long as the block runs."""
    if live_code is not None:
        if not live_code.exists():
            raise UsageError(f"--live-code {live_code}: no such file or folder")
        yield _config_in(live_code, candidate)
        return
    assert live_ref is not None  # the parser asks for one of the two
    root, relative = _in_repo(candidate)
    commit = _git("rev-parse", "--verify", f"{live_ref}^{{commit}}", cwd=root)
    folder = Path(tempfile.mkdtemp(prefix="playbook-shadow-live-"))
    worktree = folder / "deployed"
    _git("worktree", "add", "--detach", str(worktree), commit, cwd=root)
    try:
        config = worktree / relative
        if not config.is_file():
            raise UsageError(f"--live-ref {live_ref} ({commit[:12]}) has no {relative}")
        yield config
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(worktree)], cwd=root, capture_output=True, check=False)
        shutil.rmtree(folder, ignore_errors=True)
