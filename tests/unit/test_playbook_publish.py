"""langgraph-playbook is ready to publish: complete metadata, the version in one place, a changelog, the CI
recipe pinning a release by name (the folder as the fallback), and a wheel and an sdist that `twine check`
passes (that last test needs `build` and `twine` in the environment; it is skipped without them)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO_ROOT

FOLDER = REPO_ROOT / "migrations_playbook"
PROJECT = tomllib.loads((FOLDER / "pyproject.toml").read_text())["project"]
VERSION = PROJECT["version"]


def test_the_metadata_is_complete() -> None:
    assert PROJECT["license"] and all((FOLDER / name).is_file() for name in PROJECT["license-files"])
    assert PROJECT["requires-python"] == ">=3.11,<3.14"
    assert {"Homepage", "Repository", "Issues", "Changelog", "Documentation"} <= set(PROJECT["urls"])
    assert PROJECT["authors"] and PROJECT["description"] and PROJECT["readme"] == "README.md"
    classifiers = PROJECT["classifiers"]
    # One classifier per Python minor the requires-python range admits, none beyond it.
    minors = {c.rsplit(" ", 1)[1] for c in classifiers if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)}
    assert minors == {"3.11", "3.12", "3.13"}
    assert not [c for c in classifiers if c.startswith("License ::")]  # PEP 639: the SPDX expression says it


def test_the_version_is_written_in_one_place() -> None:
    """pyproject.toml holds it; no module of the package repeats it (`playbook --version` reads the metadata)."""
    assert re.fullmatch(r"\d+\.\d+\.\d+", VERSION)
    repeated = [
        p
        for p in FOLDER.rglob("*.py")
        if "egg-info" not in str(p) and re.search(rf"['\"]{re.escape(VERSION)}['\"]", p.read_text())
    ]
    assert repeated == []


def test_the_changelog_has_the_current_version_as_its_newest_release() -> None:
    text = (FOLDER / "CHANGELOG.md").read_text()
    releases = re.findall(r"^## (\d+\.\d+\.\d+) - \d{4}-\d{2}-\d{2}$", text, flags=re.MULTILINE)
    assert releases and releases[0] == VERSION
    assert text.index("## Unreleased") < text.index(f"## {VERSION}")


def test_the_ci_recipe_installs_the_pinned_release_by_name_with_the_folder_as_fallback() -> None:
    workflow = yaml.safe_load((REPO_ROOT / "docs" / "ci" / "playbook-gate.yml").read_text())
    (install,) = [s for s in workflow["jobs"]["gate"]["steps"] if "langgraph-playbook==" in s.get("run", "")]
    assert install["env"]["PLAYBOOK_VERSION"] == VERSION
    script = re.sub(r"\s*\\\n\s*", " ", install["run"])
    assert 'pip install "langgraph-playbook==$PLAYBOOK_VERSION" || python -m pip install ./migrations_playbook' in script


def test_wheel_and_sdist_build_and_twine_check_passes(tmp_path: Path) -> None:
    pytest.importorskip("build")
    pytest.importorskip("twine")
    source = tmp_path / "src"
    # A copy: setuptools writes build/ and *.egg-info/ into the folder it builds.
    shutil.copytree(FOLDER, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__", "contracts", "records"))
    dist = tmp_path / "dist"
    built = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--sdist", "--wheel", "--outdir", str(dist), str(source)],
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
    (wheel,) = dist.glob(f"langgraph_playbook-{VERSION}-py3-none-any.whl")
    (sdist,) = dist.glob(f"langgraph_playbook-{VERSION}.tar.gz")
    checked = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", str(wheel), str(sdist)], capture_output=True, text=True
    )
    assert checked.returncode == 0 and "PASSED" in checked.stdout, checked.stdout + checked.stderr
    with zipfile.ZipFile(wheel) as zipped:
        metadata = zipped.read(f"langgraph_playbook-{VERSION}.dist-info/METADATA").decode()
        names = zipped.namelist()
    assert f"License-Expression: {PROJECT['license']}" in metadata
    assert "Project-URL: Changelog, " in metadata and "Classifier: Programming Language :: Python :: 3.13" in metadata
    assert f"langgraph_playbook-{VERSION}.dist-info/licenses/LICENSE" in names
    assert "migrations_playbook/cli.py" in names and not [n for n in names if "/contracts/" in n or "/records/" in n]
    with tarfile.open(sdist) as archive:
        members = archive.getnames()
    assert f"langgraph_playbook-{VERSION}/LICENSE" in members and f"langgraph_playbook-{VERSION}/PKG-INFO" in members
