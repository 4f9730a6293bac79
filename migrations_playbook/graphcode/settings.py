"""Where a project keeps its contract locks and migration records (`playbook contract`).

Per setting, the first that is given wins:

1. a flag: ``--contracts-dir`` / ``--records-dir`` (relative to the working folder);
2. the ``[tool.playbook]`` table of the project's pyproject.toml (paths relative to
   that pyproject.toml)::

       [tool.playbook]
       contracts_dir = "migrations_playbook/contracts"
       records_dir = "migrations_playbook/records"
       config = "langgraph.json"   # optional: the one langgraph.json this table is for

3. the defaults, which assume nothing about the project: ``playbook/contracts``
   beside the langgraph.json, and records in a ``records`` folder beside the
   contracts folder (``playbook/records``; ``<dir>/../records`` for an explicit
   ``--contracts-dir <dir>`` or ``contracts_dir``).

The project's pyproject.toml is the nearest one in the langgraph.json's folder or
above it, not above a repository root (a folder holding ``.git``). A table in a
pyproject.toml above the langgraph.json applies to every langgraph.json below it,
unless it names its ``config``: then other langgraph.json files below it (test
fixtures, examples) get the defaults instead of that project's lock folder.

No environment variable takes part, so nothing overrides explicit configuration
behind the user's back. Reading is pure: nothing is created or written here.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TABLE = "tool.playbook"
KEYS = ("contracts_dir", "records_dir", "config")
"""Every key `[tool.playbook]` may hold; any other is refused (a typo must not be ignored)."""
DEFAULT_CONTRACTS = Path("playbook/contracts")
RECORDS_NAME = "records"


class SettingsError(Exception):
    """The `[tool.playbook]` table (or its pyproject.toml) is unusable: exit 2."""


@dataclass(frozen=True)
class ContractPaths:
    contracts_dir: Path
    records_dir: Path
    pyproject: Path | None = None
    """The pyproject.toml whose table was used, if any."""


def find_pyproject(config_dir: Path) -> Path | None:
    """The nearest pyproject.toml in ``config_dir`` or above, not above a repository root."""
    for folder in (config_dir, *config_dir.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
        if (folder / ".git").exists():
            return None
    return None


def read_table(pyproject: Path) -> dict[str, Any]:
    """The validated ``[tool.playbook]`` table of ``pyproject`` (empty when it has none)."""
    try:
        data = tomllib.loads(pyproject.read_text())
    except (OSError, UnicodeDecodeError) as exc:
        raise SettingsError(f"cannot read {pyproject}: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"{pyproject} is not valid TOML: {exc}") from None
    tool = data.get("tool", {})
    table = tool.get("playbook", {}) if isinstance(tool, Mapping) else {}
    if not isinstance(table, Mapping):
        raise SettingsError(f"{pyproject}: [{TABLE}] must be a table, got {type(table).__name__} {table!r}")
    unknown = sorted(set(table) - set(KEYS))
    if unknown:
        raise SettingsError(f"{pyproject}: [{TABLE}] has unknown key(s) {', '.join(unknown)}; known: {', '.join(KEYS)}")
    for key, value in table.items():
        if not isinstance(value, str) or not value.strip():
            raise SettingsError(f"{pyproject}: [{TABLE}] {key} must be a non-empty path string, got {value!r}")
    return dict(table)


def resolve(
    config_path: Path,
    *,
    pyproject: Path | None = None,
    table: Mapping[str, str] | None = None,
    contracts_flag: str | Path | None = None,
    records_flag: str | Path | None = None,
) -> ContractPaths:
    """The lock and record folders for ``config_path`` (absolute), from flags, table and defaults."""
    config_path = config_path.resolve()
    table = dict(table or {})
    base = pyproject.resolve().parent if pyproject is not None else config_path.parent
    if "config" in table and (base / table["config"]).resolve() != config_path:
        table = {}  # the table is for another langgraph.json
    from_table = False
    if contracts_flag is not None:
        contracts = Path(contracts_flag).resolve()
    elif "contracts_dir" in table:
        contracts, from_table = (base / table["contracts_dir"]).resolve(), True
    else:
        contracts = config_path.parent / DEFAULT_CONTRACTS
    if records_flag is not None:
        records = Path(records_flag).resolve()
    elif "records_dir" in table:
        records, from_table = (base / table["records_dir"]).resolve(), True
    else:
        records = contracts.parent / RECORDS_NAME
    return ContractPaths(contracts_dir=contracts, records_dir=records, pyproject=pyproject if from_table else None)


def contract_paths(
    config_path: Path, *, contracts_flag: str | Path | None = None, records_flag: str | Path | None = None
) -> ContractPaths:
    """`resolve` with the project's own pyproject.toml (found from ``config_path``; not read
    when both flags are given)."""
    config_path = config_path.resolve()
    pyproject = None if contracts_flag is not None and records_flag is not None else find_pyproject(config_path.parent)
    table = read_table(pyproject) if pyproject is not None else {}
    return resolve(config_path, pyproject=pyproject, table=table, contracts_flag=contracts_flag, records_flag=records_flag)
