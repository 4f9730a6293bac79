"""The root README's commands run as written (issue 27, newcomer papercuts): Python is the venv's, Python
snippets are programs (no top-level `await`, no name they do not define), the live server's URL comes from one
variable (`make run` may be on another port), the `--persistence` folder is said, and every `playbook` command
parses."""

from __future__ import annotations

import ast
import builtins
import re
import shlex

from migrations_playbook.cli import build_parser
from tests.conftest import REPO_ROOT

README = REPO_ROOT / "README.md"


def _text() -> str:
    return README.read_text()


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```", _text(), flags=re.MULTILINE | re.DOTALL)


def test_python_commands_name_the_venvs_python() -> None:
    """`make run` and `make test` create .venv; a bare `python` is the system's, without the project."""
    bare = [m.group(0) for m in re.finditer(r"(?<![/\w.])python3? -m [\w.]+", _text())]
    assert bare == [], f"say .venv/bin/python: {bare}"


def _undefined(tree: ast.Module) -> set[str]:
    bound = set(dir(builtins))
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.add(node.id)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            bound |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
    loaded = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return loaded - bound


def test_python_snippets_are_programs() -> None:
    snippets = _blocks("python")
    assert snippets
    for snippet in snippets:
        compile(snippet, "README.md", "exec")  # a top-level `await` is a SyntaxError here, as in `python file.py`
        tree = ast.parse(snippet)
        if any(isinstance(n, ast.Import | ast.ImportFrom) for n in tree.body):  # a program, not a one-line example
            assert _undefined(tree) == set(), snippet


def test_the_persistence_folder_is_said() -> None:
    text = _text()
    if "<live langgraph dev folder>" in text:
        assert "`<live langgraph dev folder>` is" in text


def _commands() -> list[str]:
    commands = []
    for block in _blocks("bash"):
        joined = re.sub(r"\\\n\s*", " ", block)
        for line in joined.splitlines():
            line = line.split("  #")[0].strip()
            if line.startswith(".venv/bin/playbook "):
                commands.append(line)
    return commands


def test_the_live_url_comes_from_one_variable() -> None:
    """`PORT=8123 make run` serves elsewhere: the commands read $LIVE, set once."""
    assert re.search(r"^LIVE=http://127\.0\.0\.1:2024\b", "\n".join(_blocks("bash")), flags=re.MULTILINE)
    for command in _commands():
        if "--live" in command:
            assert '--live "$LIVE"' in command, command


def test_every_playbook_command_parses() -> None:
    commands = _commands()
    assert len(commands) >= 8
    for command in commands:
        line = command.replace('"$LIVE"', "http://127.0.0.1:2024")
        line = re.sub(r"<[^<>]*>", "X", line)
        while re.search(r"\[[^\[\]]*\]", line):
            line = re.sub(r"\s*\[[^\[\]]*\]", "", line)
        argv = shlex.split(line)[1:]
        args = build_parser().parse_args(argv)  # SystemExit(2) on anything the CLI does not take
        assert callable(args.func), command
