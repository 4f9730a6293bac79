"""The documented commands run as written (issue 27, newcomer papercuts), on every page that holds them since the
README handed its long sections on to docs/, bench/, the graphs' folders and the playbook's pages (issue 35):
Python is the venv's, Python snippets are programs (no top-level `await`, no name they do not define), the live
server's URL comes from one variable the README sets (`make run` may be on another port) and every page that reads
it links to where it is set, the `--persistence` folder is said, and every `playbook` command parses.

The graphs' READMEs show fragments of a client session (`client`, `thread_id` and a running event loop come from
the reader's own code), so their Python snippets are held only to parse; the other pages' snippets are programs.
"""

from __future__ import annotations

import ast
import builtins
import re
import shlex
from pathlib import Path

import pytest

from migrations_playbook.cli import build_parser
from tests.conftest import REPO_ROOT

README = REPO_ROOT / "README.md"
PROGRAM_PAGES = sorted(
    {
        README,
        *(REPO_ROOT / "docs").glob("*.md"),
        REPO_ROOT / "bench" / "README.md",
        REPO_ROOT / "migrations_playbook" / "README.md",
        *(REPO_ROOT / "migrations_playbook" / "docs").glob("*.md"),
    }
)
GRAPH_PAGES = sorted((REPO_ROOT / "graphs").glob("*/README.md"))
PAGES = PROGRAM_PAGES + GRAPH_PAGES
PLACEHOLDER = "<live langgraph dev folder>"
LIVE_IS_SET = re.compile(r"^LIVE=http://127\.0\.0\.1:2024\b", flags=re.MULTILINE)


def _name(page: Path) -> str:
    return str(page.relative_to(REPO_ROOT))


def _blocks(page: Path, lang: str) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```", page.read_text(), flags=re.MULTILINE | re.DOTALL)


def _pages(pages: list[Path]) -> pytest.MarkDecorator:
    return pytest.mark.parametrize("page", pages, ids=_name)


def _links(page: Path) -> list[tuple[Path, str]]:
    """The page's relative markdown links: (the file they point at, the anchor or "")."""
    links = []
    for target in re.findall(r"\]\(([^()\s]+)\)", page.read_text()):
        path, _, anchor = target.partition("#")
        if path and not re.match(r"^[a-z][a-z0-9+.-]*:", path):
            links.append(((page.parent / path).resolve(), anchor))
    return links


@_pages(PAGES)
def test_python_commands_name_the_venvs_python(page: Path) -> None:
    """`make run` and `make test` create .venv; a bare `python` is the system's, without the project. Only a new
    virtual environment is made with a bare Python (`python3 -m venv`)."""
    bare = [m.group(0) for m in re.finditer(r"(?<![/\w.])python3? -m (?!venv\b)[\w.]+", page.read_text())]
    assert bare == [], f"{_name(page)}: say .venv/bin/python: {bare}"


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
    snippets = [(page, snippet) for page in PROGRAM_PAGES for snippet in _blocks(page, "python")]
    assert snippets  # the SDK examples (docs/api.md) are found, so the check below is not empty
    for page, snippet in snippets:
        compile(snippet, _name(page), "exec")  # a top-level `await` is a SyntaxError here, as in `python file.py`
        tree = ast.parse(snippet)
        if any(isinstance(n, ast.Import | ast.ImportFrom) for n in tree.body):  # a program, not a one-line example
            assert _undefined(tree) == set(), (_name(page), snippet)


@_pages(GRAPH_PAGES)
def test_python_fragments_of_the_graph_readmes_parse(page: Path) -> None:
    for snippet in _blocks(page, "python"):
        compile(snippet, _name(page), "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)


@_pages(PAGES)
def test_the_persistence_folder_is_said_or_linked(page: Path) -> None:
    """A page that writes `<live langgraph dev folder>` says what it is, or links to a page that does."""
    said = f"`{PLACEHOLDER}` is"
    text = page.read_text()
    if PLACEHOLDER in text:
        linked = [t for t, _ in _links(page) if t.is_file() and said in t.read_text()]
        assert said in text or linked, f"{_name(page)} uses {PLACEHOLDER} without saying what it is"


def _commands(page: Path) -> list[str]:
    """The `playbook` command lines of the page's bash blocks: `playbook` (or `.venv/bin/playbook`) and a
    subcommand, shell continuations joined and trailing comments dropped."""
    commands = []
    for block in _blocks(page, "bash"):
        joined = re.sub(r"\\\n\s*", " ", block)
        for line in joined.splitlines():
            line = line.split("  #")[0].strip()
            if re.match(r"(\.venv/bin/)?playbook [a-z]", line):
                commands.append(line)
    return commands


def test_the_readme_sets_the_live_url_once() -> None:
    """`PORT=8123 make run` serves elsewhere: the README sets $LIVE once, and no other page sets it again."""
    assert LIVE_IS_SET.search("\n".join(_blocks(README, "bash")))
    elsewhere = [_name(p) for p in PAGES if p != README and re.search(r"^LIVE=", p.read_text(), flags=re.MULTILINE)]
    assert elsewhere == []


@_pages(PAGES)
def test_live_commands_read_the_live_url_from_the_variable(page: Path) -> None:
    for command in _commands(page):
        if "--live" in command:
            assert '--live "$LIVE"' in command, (_name(page), command)


@_pages([p for p in PAGES if p != README])
def test_a_page_that_reads_live_links_to_where_it_is_set(page: Path) -> None:
    if "$LIVE" in "\n".join(_blocks(page, "bash")):
        assert (README.resolve(), "the-two-set-up-commands") in _links(page), (
            f"{_name(page)} reads $LIVE: link to the README's set-up commands, where it is set"
        )


def test_the_documented_playbook_commands_are_found() -> None:
    # the README's rollout: contract --write, check, migrate, record new, contract --check, inflight
    verbs = [command.split()[1] for command in _commands(README)]
    assert {"contract", "check", "migrate", "record", "inflight"} <= set(verbs) and len(verbs) >= 6
    assert sum(len(_commands(page)) for page in PAGES) >= 12


@_pages([p for p in PAGES if _commands(p)])
def test_every_playbook_command_parses(page: Path) -> None:
    for command in _commands(page):
        line = command.replace('"$LIVE"', "http://127.0.0.1:2024")
        line = re.sub(r"<[^<>]*>", "X", line)
        while re.search(r"\[[^\[\]]*\]", line):
            line = re.sub(r"\s*\[[^\[\]]*\]", "", line)
        argv = shlex.split(line)[1:]
        args = build_parser().parse_args(argv)  # SystemExit(2) on anything the CLI does not take
        assert callable(args.func), (_name(page), command)
