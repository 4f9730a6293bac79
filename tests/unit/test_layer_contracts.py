"""The repo's layer contracts ([tool.importlinter] in pyproject.toml, run by `make lint`).

They hold on the tree as it is, and each kind of violation breaks the contract meant to catch it,
naming the offending import: a copy of the root packages (migrations_playbook/, server/, graphs/,
bench/, tests/) in tmp_path gets one bad import (or cycle, or unlayered module) and `lint-imports`
runs there on the same section.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "migrations_playbook"
PYPROJECT = ROOT / "pyproject.toml"
# Beside this interpreter, as `make lint` runs it ($(VENV)/bin/lint-imports).
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
# rich (import-linter's output) wraps at the terminal's width, 80 without one: an import line must stay whole.
ENV = {**os.environ, "COLUMNS": "500", "NO_COLOR": "1"}


def importlinter_config() -> dict:
    return tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["importlinter"]


def contract(contract_id: str) -> dict:
    (found,) = [c for c in importlinter_config()["contracts"] if c["id"] == contract_id]
    return found


def importlinter_section() -> str:
    """The [tool.importlinter] tables of pyproject.toml, as written there."""
    kept: list[str] = []
    inside = False
    for line in PYPROJECT.read_text(encoding="utf-8").splitlines():
        header = re.fullmatch(r"\[\[?\s*([\w.\-\"]+)\s*\]\]?\s*(#.*)?", line)
        if header:
            table = header.group(1)
            inside = table == "tool.importlinter" or table.startswith("tool.importlinter.")
        if inside:
            kept.append(line)
    section = "\n".join(kept) + "\n"
    assert tomllib.loads(section)["tool"]["importlinter"] == importlinter_config(), "the section was not cut out whole"
    return section


def lint_imports(cwd: Path, config: Path) -> subprocess.CompletedProcess[str]:
    assert LINT_IMPORTS.exists(), f"{LINT_IMPORTS} is missing: `make install` installs import-linter (the test extra)"
    # lint-imports puts its working directory first on sys.path: in tmp_path it analyses the copy.
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(config), "--no-cache"],
        cwd=cwd,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def broken_section(output: str, contract_id: str) -> str:
    """What lint-imports printed under one broken contract's heading ('' when it was kept)."""
    name = contract(contract_id)["name"]
    names = [c["name"] for c in importlinter_config()["contracts"]]
    _, _, broken = output.partition("\nBroken contracts\n")
    heading = f"\n{name}\n{'-' * len(name)}\n"
    if heading not in broken:
        return ""
    rest = broken.split(heading, 1)[1]
    ends = [rest.index(h) for other in names if (h := f"\n{other}\n{'-' * len(other)}\n") in rest]
    return rest[: min(ends, default=len(rest))]


def test_contracts_hold_on_the_tree() -> None:
    result = lint_imports(ROOT, PYPROJECT)
    assert result.returncode == 0, result.stdout + result.stderr


def test_server_contract_forbids_every_top_level_module_but_guard_and_contract_route() -> None:
    layers = contract("playbook-layers")
    top_level = {f"{PACKAGE}.{name.strip(' ()')}" for layer in layers["layers"] for name in re.split(r"[|:]", layer)}
    forbidden = set(contract("server-public-api")["forbidden_modules"])
    assert top_level - forbidden == {f"{PACKAGE}.guard", f"{PACKAGE}.contract_route"}
    assert forbidden <= top_level


@dataclass(frozen=True)
class Violation:
    writes: dict[str, str]  # path under tmp_path: a line appended to the file (made when it does not exist)
    contract_ids: tuple[str, ...]  # the contracts that must break
    expected: str  # a regular expression its section of the output must match ({line}: the appended line's number)


def direct(importer: str, imported: str) -> str:
    return re.escape(f"{importer} -> {imported}") + r" \((?:l\.\d+, )*l\.{line}(?:, l\.\d+)*\)"


VIOLATIONS = {
    "rules-imports-cli": Violation(
        {f"{PACKAGE}/rules/evaluate.py": "from migrations_playbook.cli import main"},
        ("playbook-layers", "cli-imported-by-nothing"),
        direct(f"{PACKAGE}.rules.evaluate", f"{PACKAGE}.cli"),
    ),
    "package-init-imports-cli": Violation(
        {f"{PACKAGE}/__init__.py": "from migrations_playbook.cli import main"},
        ("cli-imported-by-nothing",),
        direct(PACKAGE, f"{PACKAGE}.cli"),
    ),
    "repair-imports-proof": Violation(
        {f"{PACKAGE}/repair/__init__.py": "import migrations_playbook.proof"},
        ("playbook-layers",),
        direct(f"{PACKAGE}.repair", f"{PACKAGE}.proof"),
    ),
    "guard-imports-proof": Violation(
        {f"{PACKAGE}/guard.py": "import migrations_playbook.proof"},
        ("playbook-layers",),
        direct(f"{PACKAGE}.guard", f"{PACKAGE}.proof"),
    ),
    "guard-imports-repair": Violation(
        {f"{PACKAGE}/guard.py": "import migrations_playbook.repair"},
        ("repair-for-proof-only",),
        direct(f"{PACKAGE}.guard", f"{PACKAGE}.repair"),
    ),
    "model-imports-errors": Violation(
        {f"{PACKAGE}/model.py": "import migrations_playbook.errors"},
        ("playbook-layers",),
        direct(f"{PACKAGE}.model", f"{PACKAGE}.errors"),
    ),
    # describe.py imports codeinfo: codeinfo importing describe closes a cycle inside graphcode/, one layer.
    "cycle-in-graphcode": Violation(
        {f"{PACKAGE}/graphcode/codeinfo.py": "from migrations_playbook.graphcode import describe"},
        ("repo-acyclic",),
        r"No cycles are allowed in migrations_playbook\.graphcode\.\n(?:(?!No cycles).)*?"
        r"^- \.(?:codeinfo -> \.describe|describe -> \.codeinfo) \(",
    ),
    "unlayered-top-level-module": Violation(
        {f"{PACKAGE}/helpers.py": "import migrations_playbook.model"},
        ("playbook-layers",),
        r"The following modules are not listed as layers:\n+^- migrations_playbook\.helpers$",
    ),
    "server-imports-sources-api": Violation(
        {"server/webapp.py": "import migrations_playbook.sources.api.reads"},
        ("server-public-api",),
        direct("server.webapp", f"{PACKAGE}.sources.api.reads"),
    ),
    "server-imports-staging": Violation(
        {"server/webhooks.py": "from migrations_playbook.staging import server"},
        ("server-public-api",),
        direct("server.webhooks", f"{PACKAGE}.staging.server"),
    ),
    "server-imports-package-root": Violation(
        {"server/webapp.py": "import migrations_playbook"},
        ("server-not-playbook-root",),
        direct("server.webapp", PACKAGE),
    ),
    # Even the guard: a graph runs under the server, which runs the guard; a graph importing it is a side door.
    "graph-imports-guard": Violation(
        {"graphs/common/models.py": "import migrations_playbook.guard"},
        ("graphs-not-playbook",),
        direct("graphs.common.models", f"{PACKAGE}.guard"),
    ),
    "graph-imports-server": Violation(
        {"graphs/fan_room/nodes.py": "from server import payloads"},
        ("deployment-layers",),
        direct("graphs.fan_room.nodes", "server.payloads"),
    ),
    # supersteps.py and turns.py once imported each other; conversations.py holds what both need.
    "cycle-in-bench": Violation(
        {"bench/conversations.py": "from bench import turns"},
        ("repo-acyclic",),
        r"No cycles are allowed in bench\.\n(?:(?!No cycles).)*?^- \.(?:conversations -> \.turns|turns -> \.conversations) \(",
    ),
    "cycle-in-server": Violation(
        {"server/payloads.py": "from server import serving"},
        ("repo-acyclic",),
        r"No cycles are allowed in server\.\n(?:(?!No cycles).)*?^- \.(?:payloads -> \.serving|serving -> \.payloads) \(",
    ),
}


def copy_sources(src: Path, dst: Path) -> None:
    """The .py files of a package tree: all that lint-imports reads."""

    def ignore(folder: str, names: list[str]) -> set[str]:
        return {n for n in names if n == "__pycache__" or ((Path(folder) / n).is_file() and not n.endswith(".py"))}

    shutil.copytree(src, dst, ignore=ignore)


@pytest.mark.parametrize("violation", VIOLATIONS.values(), ids=VIOLATIONS.keys())
def test_contracts_fail_on_a_violation(tmp_path: Path, violation: Violation) -> None:
    for package in importlinter_config()["root_packages"]:
        copy_sources(ROOT / package, tmp_path / package)
    config = tmp_path / "importlinter.toml"
    config.write_text(importlinter_section(), encoding="utf-8")

    line = 0
    for relative, import_line in violation.writes.items():
        target = tmp_path / relative
        assert target.parent.is_dir(), f"{relative}: the layout this case edits has changed"
        text = target.read_text(encoding="utf-8") if target.exists() else ""
        if text and not text.endswith("\n"):
            text += "\n"
        text += import_line + "\n"
        target.write_text(text, encoding="utf-8")
        line = text.count("\n")

    result = lint_imports(tmp_path, config)
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    expected = re.compile(violation.expected.replace("{line}", str(line)), re.MULTILINE | re.DOTALL)
    for contract_id in violation.contract_ids:
        section = broken_section(result.stdout, contract_id)
        assert section, f"contract {contract_id!r} was not broken:\n{output}"
        assert expected.search(section), f"{contract_id}: no match for {expected.pattern!r} in\n{section}"


def module_names(package: Path) -> set[str]:
    """The last name of each module and subpackage in a package (its own name included)."""
    names = {package.name}
    for child in package.iterdir():
        if child.is_dir() and (child / "__init__.py").is_file():
            names |= module_names(child)
        elif child.suffix == ".py" and child.stem not in {"__init__", "__main__"}:
            names.add(child.stem)
    return names


def test_no_module_is_named_like_a_stdlib_module() -> None:
    # A module named like one of the standard library (the old migrations_playbook/http.py) is an
    # `import http` away from the wrong module, and misleads whoever reads an import line.
    names = module_names(ROOT / PACKAGE)
    assert {"cli", "guard", "evaluate"} <= names
    assert sorted(names & sys.stdlib_module_names) == []


MODULE_BUDGET = 600
"""Lines a module of the product may have (issue 35): past it, a module holds more than one concern."""


def test_no_module_of_the_product_is_over_its_line_budget() -> None:
    packages = [p for p in importlinter_config()["root_packages"] if p != "tests"]
    sizes = {
        str(path.relative_to(ROOT)): len(path.read_text(encoding="utf-8").splitlines())
        for package in packages
        for path in (ROOT / package).rglob("*.py")
    }
    assert len(sizes) > 100 and {"server", "graphs", "bench", PACKAGE} <= {name.split("/")[0] for name in sizes}
    assert {name: lines for name, lines in sizes.items() if lines > MODULE_BUDGET} == {}
