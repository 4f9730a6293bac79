"""A throwaway PostgreSQL server for tests: initdb + pg_ctl in a temporary folder.

The server binaries are looked up, in order: on ``PATH`` (``initdb`` and
``pg_ctl``), in ``/usr/lib/postgresql/<version>/bin`` (Debian's server package,
which this project's machines have), and in the ``pgserver`` wheel (pinned in
constraints.txt; ``make install`` adds it when the machine has no server binaries).

initdb refuses to run as root, so as root the cluster belongs to the ``postgres``
user (``nobody`` when there is none) and initdb/pg_ctl run as that user (``runuser``).
The data folder, the socket and the server log live in a fresh folder under the
system temp dir (not under pytest's per-user folder, which other users cannot
enter), never in the repository; `stop` stops the server and removes the folder.
The server listens on a free loopback port only, with durability off (fsync) for speed.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path
from types import TracebackType

INSTALL_HINT = (
    "no PostgreSQL server binaries (initdb, pg_ctl): install Debian's postgresql package, "
    "or `pip install -c constraints.txt pgserver` (what `make install` does on such machines)"
)


class PostgresUnavailable(RuntimeError):
    """No server binaries on this machine."""


def find_bindir() -> Path:
    """The folder holding initdb and pg_ctl (see the module docstring for the order)."""
    initdb = shutil.which("initdb")
    if initdb and shutil.which("pg_ctl"):
        return Path(initdb).resolve().parent
    versions = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/initdb"),
        key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0,
    )
    if versions:
        return versions[-1].parent
    spec = importlib.util.find_spec("pgserver")
    if spec is not None and spec.submodule_search_locations:
        for location in spec.submodule_search_locations:
            bindir = Path(location) / "pginstall" / "bin"
            if (bindir / "initdb").exists():
                return bindir
    raise PostgresUnavailable(INSTALL_HINT)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _owner() -> str | None:
    """The user the cluster runs as when we are root (None: run as ourselves)."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            pwd.getpwnam(name)
            return name
    raise PostgresUnavailable("running as root, and there is neither a `postgres` nor a `nobody` user to run initdb as")


class PostgresServer:
    """One PostgreSQL cluster on a free loopback port; a context manager."""

    def __init__(self) -> None:
        self.root: Path | None = None
        self.port: int | None = None
        self.log: Path | None = None
        self._bindir: Path | None = None
        self._owner: str | None = None

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def url_for(self, database: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def _run(self, *argv: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        command = [str(self._bindir / argv[0]), *argv[1:]]
        if self._owner is not None:
            command = ["runuser", "-u", self._owner, "--", *command]
        result = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
        if result.returncode != 0:
            tail = self.log.read_text()[-2000:] if self.log and self.log.exists() else ""
            raise RuntimeError(f"{argv[0]} failed ({result.returncode}): {result.stderr or result.stdout}\n{tail}")
        return result

    def start(self) -> PostgresServer:
        self._bindir = find_bindir()
        self._owner = _owner()
        self.root = Path(tempfile.mkdtemp(prefix="playbook-pg-"))
        data, sockets, self.log = self.root / "data", self.root / "sock", self.root / "server.log"
        sockets.mkdir()
        if self._owner is not None:
            record = pwd.getpwnam(self._owner)
            for path in (self.root, sockets):
                os.chown(path, record.pw_uid, record.pw_gid)
        try:
            self._run("initdb", "-D", str(data), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync")
            self.port = _free_port()
            options = (
                f"-p {self.port} -k {sockets} -c listen_addresses=127.0.0.1 "
                "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
            )
            self._run("pg_ctl", "-D", str(data), "-l", str(self.log), "-o", options, "-w", "-t", "60", "start")
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        if self.root is None:
            return
        data = self.root / "data"
        if (data / "postmaster.pid").exists():
            with contextlib.suppress(RuntimeError, subprocess.TimeoutExpired):
                self._run("pg_ctl", "-D", str(data), "-m", "fast", "-w", "-t", "30", "stop", timeout=60)
        shutil.rmtree(self.root, ignore_errors=True)
        self.root = None

    def __enter__(self) -> PostgresServer:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()
