"""`playbook contract`: write or check the contract locks of any project."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from migrations_playbook.errors import EXIT_BLOCKED, EXIT_PASS, UsageError
from migrations_playbook.graphcode import contract, settings
from migrations_playbook.graphcode.candidate import contract_of, load_compiled
from migrations_playbook.graphcode.record import REQUIREMENTS


@dataclass(frozen=True)
class ContractRequest:
    config: Path
    write: bool
    """Write the locks (else check them)."""
    contracts_dir: str | None = None
    records_dir: str | None = None


def code_contracts(config: Path) -> dict[str, dict[str, Any]]:
    """graph id -> the contract of the code ``config`` registers."""
    return {gid: contract_of(gid, graph) for gid, graph in load_compiled(config).items()}


def paths_of(config: Path, contracts_flag: str | None, records_flag: str | None) -> tuple[Path, Path]:
    """(contracts folder, records folder) for ``config``, as `settings` resolves them (exit 2 on a bad table)."""
    try:
        paths = settings.contract_paths(config, contracts_flag=contracts_flag, records_flag=records_flag)
    except settings.SettingsError as exc:
        raise UsageError(str(exc)) from None
    return paths.contracts_dir, paths.records_dir


def record_command(request: ContractRequest) -> str:
    """The `playbook record new` command that writes the missing record, with this check's own flags as given."""
    flags = ""
    if request.config != Path("langgraph.json"):
        flags += f" --config {request.config}"
    if request.contracts_dir is not None:
        flags += f" --contracts-dir {request.contracts_dir}"
    if request.records_dir is not None:
        flags += f" --records-dir {request.records_dir}"
    return f"playbook record new{flags}"


def run(request: ContractRequest) -> int:
    config = request.config.resolve()
    if not config.is_file():
        raise UsageError(f"config not found: {config}")
    contracts_dir, records_dir = paths_of(config, request.contracts_dir, request.records_dir)
    contracts = code_contracts(config)
    if request.write:
        for graph_id, digest, changes in contract.write(contracts, contracts_dir):
            print(f"{graph_id} {digest}" + ("" if changes else "  (unchanged)"))
            for change in changes:
                print(f"  {change}")
        print(f"\nlocks written to {contracts_dir}; a record in {records_dir} must list each new hash")
        print(f"(`{record_command(request)}` writes its skeleton)")
        return EXIT_PASS
    failed = needs_record = False
    for status in contract.check(contracts, contracts_dir, records_dir):
        mark = "FAIL" if status.problems else "ok"
        print(f"{mark:4}  {status.graph_id} {status.digest or ''}".rstrip())
        for change in status.changes:
            print(f"        {change}")
        for problem in status.problems:
            print(f"        {problem}")
            needs_record = needs_record or "add a record" in problem or "no migration record" in problem
        failed = failed or bool(status.problems)
    if needs_record:
        print(f"\nA migration record is {REQUIREMENTS}.")
        print(f"fix: {record_command(request)}")
    return EXIT_BLOCKED if failed else EXIT_PASS
