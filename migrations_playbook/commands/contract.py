"""`playbook contract`: write or check the contract locks of any project."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from migrations_playbook.errors import EXIT_BLOCKED, EXIT_PASS, UsageError
from migrations_playbook.graphcode import contract, settings
from migrations_playbook.graphcode.candidate import contract_of, load_compiled


@dataclass(frozen=True)
class ContractRequest:
    config: Path
    write: bool
    """Write the locks (else check them)."""
    contracts_dir: str | None = None
    records_dir: str | None = None


def _contracts(config: Path) -> dict[str, dict[str, Any]]:
    return {gid: contract_of(gid, graph) for gid, graph in load_compiled(config).items()}


def run(request: ContractRequest) -> int:
    config = request.config.resolve()
    if not config.is_file():
        raise UsageError(f"config not found: {config}")
    try:
        paths = settings.contract_paths(config, contracts_flag=request.contracts_dir, records_flag=request.records_dir)
    except settings.SettingsError as exc:
        raise UsageError(str(exc)) from None
    contracts_dir, records_dir = paths.contracts_dir, paths.records_dir
    contracts = _contracts(config)
    if request.write:
        for graph_id, digest, changes in contract.write(contracts, contracts_dir):
            print(f"{graph_id} {digest}" + ("" if changes else "  (unchanged)"))
            for change in changes:
                print(f"  {change}")
        print(f"\nlocks written to {contracts_dir}; a record in {records_dir} must list each new hash")
        return EXIT_PASS
    failed = False
    for status in contract.check(contracts, contracts_dir, records_dir):
        mark = "FAIL" if status.problems else "ok"
        print(f"{mark:4}  {status.graph_id} {status.digest or ''}".rstrip())
        for change in status.changes:
            print(f"        {change}")
        for problem in status.problems:
            print(f"        {problem}")
        failed = failed or bool(status.problems)
    return EXIT_BLOCKED if failed else EXIT_PASS
