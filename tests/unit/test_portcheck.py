"""`make run` fails loudly when its port is taken (server/portcheck.py), instead of `langgraph dev`
moving to another port while every README command says 2024."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest

from server import portcheck
from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.enable_socket  # loopback binds only


@pytest.fixture
def taken() -> Iterator[int]:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        yield s.getsockname()[1]


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_taken_port_is_exit_1_with_a_message(taken: int, capsys: pytest.CaptureFixture[str]) -> None:
    assert portcheck.main(["--host", "127.0.0.1", "--port", str(taken)]) == 1
    err = capsys.readouterr().err
    assert f"port {taken} on 127.0.0.1 is already in use" in err and "PORT=8123 make run" in err


def test_a_free_port_prints_the_url(capsys: pytest.CaptureFixture[str]) -> None:
    port = _free_port()
    assert portcheck.main(["--port", str(port)]) == 0
    assert capsys.readouterr().out == f"Agent Server: http://127.0.0.1:{port}\n"


def test_it_runs_as_a_module(taken: int) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "server.portcheck", "--port", str(taken)], cwd=REPO_ROOT, capture_output=True, text=True
    )
    assert done.returncode == 1 and "already in use" in done.stderr


def _recipe(makefile: str, target: str) -> list[str]:
    """The recipe lines of ``target`` (read, never run: make would remake what the recipe depends on)."""
    lines = makefile.splitlines()
    head = next(i for i, line in enumerate(lines) if re.match(rf"^{re.escape(target)}:", line))
    recipe = []
    for line in lines[head + 1 :]:
        if not line.startswith("\t"):
            break
        recipe.append(line.strip())
    return recipe


def test_make_run_checks_the_port_before_langgraph_dev() -> None:
    recipe = _recipe((REPO_ROOT / "Makefile").read_text(), "run")
    commands = [line for line in recipe if re.search(r"portcheck|langgraph dev", line)]
    assert len(commands) == 2, recipe
    assert "-m server.portcheck" in commands[0] and "--port $(PORT)" in commands[0], recipe
    assert "langgraph dev" in commands[1] and "--port $(PORT)" in commands[1], recipe
