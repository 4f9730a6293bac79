"""Start and stop a local Agent Server (`langgraph dev`) in a folder of its own.

Used by the test fixtures, the benchmarks and the staging replay. The server
runs with its working folder set to ``workdir``: that is where it keeps
`.langgraph_api/` (its pickled threads) and what it would watch for reloads,
so the repository is never written or watched. Reload is off.

`langgraph dev` flushes threads to disk only on a graceful stop, so `stop()`
sends SIGINT and waits; it kills only when the server does not exit in time.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType

DEFAULT_STARTUP_TIMEOUT = 120.0
DEFAULT_STOP_TIMEOUT = 30.0
PORT_ATTEMPTS = 3
_ADDRESS_IN_USE = re.compile(r"address already in use|Errno 98", re.IGNORECASE)
_MOVED = re.compile(r"Port (\d+) is already in use, using port (\d+) instead")
"""What `langgraph dev` logs when the port it was given is taken: it serves on another one, silently."""


class ServerStartError(RuntimeError):
    """The server exited or did not answer `/ok` in time; carries its log tail."""


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that is free right now on ``host``."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


def langgraph_executable() -> str:
    """The `langgraph` CLI of the running interpreter's environment."""
    beside = Path(sys.executable).with_name("langgraph")
    if beside.exists():
        return str(beside)
    found = shutil.which("langgraph")
    if found is None:
        raise ServerStartError("the `langgraph` CLI is not installed (pip install 'langgraph-cli[inmem]')")
    return found


class DevServer:
    """A `langgraph dev` process; use as a context manager or call start/stop."""

    def __init__(
        self,
        config: Path | str,
        workdir: Path | str,
        *,
        host: str = "127.0.0.1",
        port: int | None = None,
        env: dict[str, str] | None = None,
        extra_args: tuple[str, ...] = (),
        startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
        executable: str | None = None,
    ) -> None:
        self.config = Path(config).resolve()
        self.workdir = Path(workdir).resolve()
        self.host = host
        self.port = port or free_port(host)
        self._port_chosen_here = port is None
        """A port picked by `free_port` can be taken by another process before the server binds it
        (parallel test workers, a second bench): `start` then picks another instead of failing."""
        self.extra_args = extra_args
        self.startup_timeout = startup_timeout
        self.executable = executable
        """The `langgraph` CLI to run (another environment's: a project installed in a venv of its own);
        by default the running interpreter's (`langgraph_executable`)."""
        self.env = {
            **os.environ,
            "LANGGRAPH_NO_VERSION_CHECK": "true",
            "LANGSMITH_TRACING": "false",
            "PYTHONUNBUFFERED": "1",
            **(env or {}),
        }
        self.log_path = self.workdir / "server.log"
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> DevServer:
        attempts = PORT_ATTEMPTS if self._port_chosen_here else 1
        for attempt in range(1, attempts + 1):
            if self.is_up():
                if attempt < attempts:
                    self.port = free_port(self.host)
                    continue
                raise ServerStartError(f"something already answers on {self.url}; pick another port")
            try:
                return self._launch()
            except ServerStartError as exc:
                if attempt == attempts or not _ADDRESS_IN_USE.search(str(exc)):
                    raise
                self.port = free_port(self.host)
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _launch(self) -> DevServer:
        self.workdir.mkdir(parents=True, exist_ok=True)
        args = [
            self.executable or langgraph_executable(),
            "dev",
            "--config",
            str(self.config),
            "--host",
            self.host,
            "--port",
            str(self.port),
            "--no-browser",
            "--no-reload",
            *self.extra_args,
        ]
        log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            args,
            cwd=self.workdir,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        log.close()
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise ServerStartError(f"langgraph dev exited with {self.process.returncode}:\n{self.log_tail()}")
            moved = _MOVED.search(self.log_tail())
            if moved and int(moved.group(1)) == self.port:
                if not self._port_chosen_here:
                    self.stop()
                    raise ServerStartError(f"port {self.port} is in use: langgraph dev would serve on {moved.group(2)} instead")
                self.port = int(moved.group(2))  # langgraph dev took another port itself: follow it
            if self.is_up():
                return self
            time.sleep(0.2)
        self.stop()
        raise ServerStartError(
            f"langgraph dev did not answer {self.url}/ok within {self.startup_timeout:.0f}s:\n{self.log_tail()}"
        )

    def is_up(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/ok", timeout=2) as response:
                status: int = response.status
                return status == 200
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            return False

    def stop(self, timeout: float = DEFAULT_STOP_TIMEOUT) -> int | None:
        """Stop gracefully (SIGINT, so threads are flushed to disk); kill on timeout."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return None if process is None else process.returncode
        process.send_signal(signal.SIGINT)
        try:
            return process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            return process.wait(timeout=10)

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def __enter__(self) -> DevServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
