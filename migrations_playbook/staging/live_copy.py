"""A staging Agent Server: a copy of a live `langgraph dev` folder, served with one side's code.

``--persistence DIR``: a local `langgraph dev`'s `.langgraph_api/` folder (or the folder holding
it) is copied into a temporary working folder, and a `langgraph dev` is started there. The code it
serves is a copy too: the project folder of the langgraph.json it is given (the candidate's, or the
deployed code's for the shadow's side A) is copied into that working folder, less what a checkout
does not carry (`.git`, virtual environments, caches), and served from there with its own
langgraph.json: the same relative paths, module names and `.env` as `langgraph dev` gives them in
the project itself, and nothing the copy writes lands next to the original code. Only a path that
points outside the project folder (a dependency ``../lib``) is made absolute, and imported from where
it is. Before the copy is served, its unfinished runs and its crons are held (`held.py`): nothing
runs on a copy that the proof did not send.

A running `langgraph dev` (runtime-inmem 0.36.7) writes the persistence folder every 10 seconds, but
its checkpoints only until the first state read through the API, and always on a graceful stop:
whoever reads the copy checks that every copied thread has the live thread's latest checkpoint, and
refuses a stale copy (`StaleCopy`, exit 2).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import sqlite3
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from migrations_playbook.graphcode.candidate import _search_roots, read_config
from migrations_playbook.staging.held import HeldWork, hold
from migrations_playbook.staging.server import DevServer

_PATH_KEYS = ("path",)


def absolute_config(config_path: Path) -> dict[str, Any]:
    """The candidate config with every relative path made absolute."""
    config_path = config_path.resolve()
    base = config_path.parent
    config = read_config(config_path)

    def fix(spec: Any) -> Any:
        if isinstance(spec, str) and spec.startswith("."):
            location, sep, attr = spec.partition(":")
            return f"{(base / location).resolve()}{sep}{attr}"
        if isinstance(spec, dict):
            return {k: fix(v) if k in _PATH_KEYS or k == "app" else v for k, v in spec.items()}
        return spec

    config["graphs"] = {gid: fix(spec) for gid, spec in config["graphs"].items()}
    config["dependencies"] = [
        str((base / d).resolve()) if isinstance(d, str) and d.startswith(".") else d for d in config.get("dependencies", [])
    ]
    if isinstance(config.get("env"), str):
        config["env"] = str((base / config["env"]).resolve())
    if isinstance(config.get("auth"), dict):
        config["auth"] = fix(config["auth"])
    if isinstance(config.get("http"), dict):
        config["http"] = fix(config["http"])
    return config


SQLITE_FILES = ("*.sqlite", "*.sqlite-wal", "*.sqlite-shm", "*.sqlite-journal")
"""A SQLite checkpointer's files in the persistence folder (server/persistence/)."""


def _copy_database(source: Path, target: Path) -> None:
    """A consistent copy of a SQLite file another process may be writing (WAL included)."""
    live, copy = sqlite3.connect(source), sqlite3.connect(target)
    try:
        live.backup(copy)
    finally:
        copy.close()
        live.close()


NOT_COPIED = (
    ".git",
    ".hg",
    ".venv",
    "venv",
    ".tox",
    ".nox",
    "node_modules",
    "__pycache__",
    ".langgraph_api",
    "*.egg-info",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
)
"""What a project folder holds that a checkout does not carry: left out of the served copy."""


def _outside(spec: str, base: Path) -> bool:
    """A relative path (``./x.py:attr``, ``../lib``) that leads out of the project folder ``base``."""
    location = spec.partition(":")[0]
    return spec.startswith(".") and not (base / location).resolve().is_relative_to(base)


def _absolute_outside(config: Any, base: Path) -> Any:
    """``config`` with each relative path that leaves ``base`` (the project folder) made absolute, wherever it
    is (graphs, dependencies, env, auth, http, store.index.embed, checkpointer, ...)."""
    if isinstance(config, str) and _outside(config, base):
        location, sep, attr = config.partition(":")
        return f"{(base / location).resolve()}{sep}{attr}"
    if isinstance(config, dict):
        return {k: _absolute_outside(v, base) for k, v in config.items()}
    if isinstance(config, list):
        return [_absolute_outside(v, base) for v in config]
    return config


def served_copy(config_path: Path, into: Path) -> Path:
    """Copy the project folder of ``config_path`` to ``into`` (which must not exist) and return the copy's
    langgraph.json: the project as a checkout of it would be served."""
    config_path = config_path.resolve()
    base = config_path.parent
    config = read_config(config_path)
    shutil.copytree(base, into, ignore=shutil.ignore_patterns(*NOT_COPIED), symlinks=True)
    copied = into / config_path.name
    fixed = _absolute_outside(config, base)
    if fixed != config:
        copied.write_text(json.dumps(fixed, indent=2))
    return copied


def _persistence_files(persistence: Path) -> Path:
    """The folder holding a `langgraph dev`'s persistence files: ``persistence`` or its ``.langgraph_api``."""
    source = persistence / ".langgraph_api" if (persistence / ".langgraph_api").is_dir() else persistence
    if not any(source.glob("*.pckl")):
        raise FileNotFoundError(f"no langgraph dev persistence (*.pckl) in {source}")
    return source


def _copy_persistence(source: Path, data: Path) -> None:
    """A copy of a persistence folder another process may be writing: the files, each SQLite database through
    SQLite's backup (consistent, WAL included)."""
    shutil.copytree(source, data, ignore=shutil.ignore_patterns(*SQLITE_FILES))
    for database in source.glob("*.sqlite"):
        _copy_database(database, data / database.name)


@contextlib.contextmanager
def snapshot(persistence: Path) -> Iterator[Path]:
    """One copy of the live persistence folder for every side of a proof (a temporary folder, removed after).

    The sides then start from the same data (a live server that moves between their copies no longer makes A, A2
    and B see different threads), and the live folder is read once: SQLite's backup of a large database is the
    slow part of a copy (about 40 s for 580 MB on a loaded machine, against under a second for a file copy), so
    each side copies the snapshot as files (`start_staging(..., frozen=True)`)."""
    source = _persistence_files(persistence)
    with tempfile.TemporaryDirectory(prefix="playbook-snapshot-") as scratch:
        data = Path(scratch) / ".langgraph_api"
        _copy_persistence(source, data)
        yield data


class StagingServer(DevServer):
    """A staging `langgraph dev` on a copy, with what the copy holds back (`held`)."""

    held: HeldWork = HeldWork()

    def discard(self) -> int | None:
        """Stop the server without flushing its copy (SIGKILL to its process group): the copy is thrown away with
        its folder, and a graceful stop would first write every copied thread back to disk (22 s of a 213 s
        `check` at 1,000 threads, bench/check_run.py)."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return None if process is None else process.returncode
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        return process.wait(timeout=10)


def start_staging(
    candidate: Path,
    persistence: Path,
    stack: ExitStack,
    *,
    env: Mapping[str, str] | None = None,
    pinned: Mapping[str, str] | None = None,
    frozen: bool = False,
    held: HeldWork | None = None,
) -> StagingServer:
    """Copy the live persistence folder and the project of ``candidate`` (a langgraph.json: the candidate's or
    the deployed code's), hold the copy's unfinished runs and crons, and serve it (``env``: more variables for
    the server; ``pinned``: variables the config's own ``env`` (a dotenv file `langgraph dev` lets override the
    server's environment) must not override, written into the copy's config itself; ``frozen``: ``persistence``
    is a `snapshot`, which nothing writes, copied as files; ``held``: what `hold` took out of that snapshot, held
    once for every side, so the copy is served as it is). `HoldError` when the copy's run queue cannot be held."""
    source = _persistence_files(persistence)
    workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="playbook-staging-"))) / "project"
    config_path = served_copy(candidate, workdir)
    data = workdir / ".langgraph_api"
    if frozen:
        shutil.copytree(source, data)
    else:
        _copy_persistence(source, data)
    if held is None:
        held = hold(data)
    if pinned:
        config = read_config(config_path)
        env_file = config.get("env")
        if isinstance(env_file, str):
            env_file = str((config_path.parent / env_file).resolve())
        config["env"] = {**config_env(env_file if isinstance(env_file, str) else config.get("env")), **pinned}
        config_path.write_text(json.dumps(config, indent=2))
    roots = _search_roots(config_path, read_config(config_path))
    # A dependency that is itself a package (``./migrations_playbook``) is importable from its
    # parent; first on the path, its modules would shadow the standard library (its http.py).
    roots = [root for root in roots if not (root / "__init__.py").is_file()]
    server = StagingServer(
        config_path,
        workdir,
        env={"PYTHONPATH": ":".join(str(r) for r in roots), **(env or {})},
    )
    server.held = held
    stack.callback(server.discard)
    server.start()
    return server


def config_env(env: Any) -> dict[str, str]:
    """A langgraph.json ``env`` as variables: its mapping, or the dotenv file it names (absolute)."""
    if isinstance(env, dict):
        return {str(k): str(v) for k, v in env.items()}
    if not isinstance(env, str) or not Path(env).is_file():
        return {}
    from dotenv import dotenv_values  # python-dotenv, which langgraph-cli (the staging server) depends on

    return {k: v for k, v in dotenv_values(env).items() if v is not None}


class StaleCopy(Exception):
    """The staging copy does not hold the live thread's latest checkpoint."""


def checkpoint_id(state: Mapping[str, Any]) -> str | None:
    """The id of the checkpoint a ``get_state`` answer shows (None for none)."""
    checkpoint = state.get("checkpoint") or {}
    found: str | None = checkpoint.get("checkpoint_id")
    return found


def require_fresh(thread_id: str, live_state: Mapping[str, Any], staging_state: Mapping[str, Any]) -> None:
    """`StaleCopy` unless the staging copy of a thread is at the live thread's latest checkpoint."""
    if checkpoint_id(staging_state) != checkpoint_id(live_state):
        raise StaleCopy(
            f"staging does not hold thread {thread_id}'s latest checkpoint "
            f"(live {checkpoint_id(live_state)}, staging {checkpoint_id(staging_state)}): "
            "the copy is older than the live state. `langgraph dev` may keep checkpoints "
            "in memory until a graceful stop: stop it with Ctrl+C (SIGINT), start it again, "
            "and rerun the replay"
        )
