"""The README stays the front door (issue 35): at most 250 lines, every repository path it names exists, and every
relative link of the documentation pages leads somewhere: to a file or folder of the repository and, with `#anchor`,
to a heading of that file.

Which text counts as a path the README names: a relative link's target, and an inline code span that looks like a
repository path (it has a `/`, or ends in .py, .md, .json, .toml or .yml) and is neither a URL, a command (it has a
space), a shell variable or home folder (`$...`, `~...`), a route (`/ok`), a placeholder (`<...>`, `{...}`, `*`) nor
a path the repository's .gitignore keeps out (`.venv/`, `.langgraph_api/`: made by running things, never committed).
"""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

README = REPO_ROOT / "README.md"
README_BUDGET = 250
PAGES = sorted(
    {
        README,
        *(REPO_ROOT / "docs").glob("*.md"),
        REPO_ROOT / "bench" / "README.md",
        REPO_ROOT / "deploy" / "README.md",
        *(REPO_ROOT / "graphs").glob("*/README.md"),
        REPO_ROOT / "migrations_playbook" / "README.md",
        *(REPO_ROOT / "migrations_playbook" / "docs").glob("*.md"),
        REPO_ROOT / "tests" / "layout_check" / "README.md",
    }
)
PATH_SUFFIXES = (".py", ".md", ".json", ".toml", ".yml")


def _name(page: Path) -> str:
    return str(page.relative_to(REPO_ROOT))


def _prose(text: str) -> str:
    """The text outside fenced code blocks: a block shows commands and output, not links."""
    return re.sub(r"^(`{3,}).*?^\1\s*$", "", text, flags=re.MULTILINE | re.DOTALL)


def _code_spans(prose: str) -> list[str]:
    return [span.strip() for _, span in re.findall(r"(`+)(.+?)\1", prose)]


def _links(prose: str) -> list[str]:
    """Targets of the markdown links (and images) in the prose, code spans left out."""
    without_code = re.sub(r"(`+).+?\1", "code", prose)
    return re.findall(r"\]\(([^()\s]+)\)", without_code)


def _is_relative(target: str) -> bool:
    return not re.match(r"^[a-z][a-z0-9+.-]*:", target)  # http:, https:, mailto: ...


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: markup dropped, lower case, punctuation out, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = text.replace("`", "").strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    anchors: set[str] = set()
    seen: dict[str, int] = {}
    for heading in re.findall(r"^#{1,6} +(.+?) *#*$", _prose(page.read_text()), flags=re.MULTILINE):
        slug = _slug(heading)
        anchors.add(slug if slug not in seen else f"{slug}-{seen[slug]}")
        seen[slug] = seen.get(slug, 0) + 1
    return anchors


def _ignored_by_git(path: str) -> bool:
    """Whether the repository's .gitignore keeps the path out (a folder pattern matches any part of it)."""
    patterns = [
        line.strip() for line in (REPO_ROOT / ".gitignore").read_text().splitlines() if line.strip() and not line.startswith("#")
    ]
    parts = [p for p in path.split("/") if p]
    for pattern in patterns:
        if pattern.endswith("/"):
            if any(fnmatch.fnmatch(part, pattern.rstrip("/")) for part in parts):
                return True
        elif any(fnmatch.fnmatch(part, pattern) for part in parts):
            return True
    return False


def _looks_like_a_repo_path(span: str) -> bool:
    if re.search(r"\s", span) or "://" in span or span[0] in "$~/-" or re.search(r"[<>{}*…]", span):
        return False
    if not ("/" in span or span.endswith(PATH_SUFFIXES)):
        return False
    return not _ignored_by_git(span)


def _named_paths(page: Path) -> list[str]:
    prose = _prose(page.read_text())
    spans = [s for s in _code_spans(prose) if _looks_like_a_repo_path(s)]
    links = [t.split("#", 1)[0] for t in _links(prose) if _is_relative(t)]
    return [p for p in spans + links if p]


def test_the_readme_stays_within_its_line_budget() -> None:
    lines = len(README.read_text().splitlines())
    assert lines <= README_BUDGET, f"README.md has {lines} lines: move text beside what it describes (docs/, bench/)"


def test_every_repo_path_the_readme_names_exists() -> None:
    named = _named_paths(README)
    assert len(named) >= 20  # the rule above finds the README's links and paths, so the check is not empty
    missing = sorted({p for p in named if not (REPO_ROOT / p).exists()})
    assert missing == []


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_every_relative_link_resolves_to_a_file_and_heading(page: Path) -> None:
    broken = []
    for target in _links(_prose(page.read_text())):
        if not _is_relative(target):
            continue
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if not resolved.exists():
            broken.append(f"{target}: no such file")
        elif anchor and (resolved.suffix != ".md" or anchor not in _anchors(resolved)):
            broken.append(f"{target}: no heading #{anchor} in {resolved.name}")
    assert broken == []


def test_a_heading_anchor_is_the_one_github_makes() -> None:
    assert _slug("Changing a graph under live threads: `playbook`") == "changing-a-graph-under-live-threads-playbook"
    assert _slug("`playbook gate`: every live thread against the candidate code") == (
        "playbook-gate-every-live-thread-against-the-candidate-code"
    )
    assert _slug("The two set-up commands") == "the-two-set-up-commands"
