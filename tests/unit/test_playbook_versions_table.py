"""The version matrix (tests/playbook_versions.py) agrees with what is declared and documented.

The oldest set is every lower bound migrations_playbook/pyproject.toml declares (so the bounds are
the tested ones), the newest is this repo's pinned set (constraints.txt), every set lies in the
declared ranges, and the documented table (migrations_playbook/docs/versions.md, "Supported LangGraph versions")
lists the sets as they are.
"""

from __future__ import annotations

import re
import tomllib

from packaging.requirements import Requirement
from packaging.version import Version

from tests.conftest import REPO_ROOT
from tests.playbook_versions import NEWEST, OLDEST, VERSION_SETS

PYPROJECT = tomllib.loads((REPO_ROOT / "migrations_playbook" / "pyproject.toml").read_text())
DECLARED = [
    Requirement(r)
    for r in [
        *PYPROJECT["project"]["dependencies"],
        *PYPROJECT["project"]["optional-dependencies"]["sqlite"],
        *PYPROJECT["project"]["optional-dependencies"]["postgres"],
    ]
]


def _lower(requirement: Requirement) -> Version:
    (bound,) = [s for s in requirement.specifier if s.operator == ">="]
    return Version(bound.version)


def test_the_oldest_set_is_every_declared_lower_bound() -> None:
    pinned = OLDEST.versions()
    for requirement in DECLARED:
        assert Version(pinned[requirement.name]) == _lower(requirement), (requirement, pinned[requirement.name])


def test_the_newest_set_is_this_repos_pinned_set() -> None:
    constraints = dict(line.split("==", 1) for line in (REPO_ROOT / "constraints.txt").read_text().splitlines() if "==" in line)
    for name, version in NEWEST.versions().items():
        assert constraints[name] == version, (name, version, constraints[name])


def test_every_set_lies_in_the_declared_ranges_and_covers_every_minor() -> None:
    for version_set in VERSION_SETS:
        pinned = version_set.versions()
        for requirement in DECLARED:
            assert requirement.specifier.contains(pinned[requirement.name]), (version_set.name, requirement)
    minors = {Version(s.versions()["langgraph"]).release[:2] for s in VERSION_SETS}
    assert minors == {(0, 6), (1, 0), (1, 1), (1, 2)}
    assert all(sum(Version(s.versions()["langgraph"]).release[:2] == m for s in VERSION_SETS) == 2 for m in minors)


def test_the_documented_table_lists_the_sets() -> None:
    page = (REPO_ROOT / "migrations_playbook" / "docs" / "versions.md").read_text()
    section = page.split("# Supported LangGraph versions\n", 1)[1].split("\n## ", 1)[0]
    rows = [
        [cell.strip() for cell in line.strip("|").split("|")]
        for line in section.splitlines()
        if re.match(r"\| (oldest|newest|) *\| \d", line)
    ]
    columns = (
        "langgraph",
        "langgraph-checkpoint",
        "langgraph-sdk",
        "langchain-core",
        "langgraph-checkpoint-sqlite",
        "langgraph-checkpoint-postgres",
    )
    documented = [tuple(cell.split(" ")[0] for cell in row[1:]) for row in rows]
    assert documented == [tuple(s.versions()[c] for c in columns) for s in VERSION_SETS]
    assert (rows[0][0], rows[-1][0]) == ("oldest", "newest")
