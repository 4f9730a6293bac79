"""Contract locks and migration records.

A lock (``<contracts dir>/<graph_id>.json``) is what old checkpoints depend on:
node names, edges, interrupt points, state fields with required-ness, types and
reducers, and the current flow_version. Where the lock and record folders are:
`migrations_playbook.graphcode.settings`.

A record (``<records dir>/*.md``) documents one migration. Its
front matter lists the contract hashes it covers::

    ---
    id: 0002-ticket-triage-add-priority-note
    date: 2026-11-30
    contracts:
      - ticket_triage sha256:0123456789abcdef
    ---

`check` fails when code and lock differ, or when a lock's hash is covered by
no record: no contract change lands without a record.

A record may also accept findings the gate (and the runtime guard) would block on for the code
it covers, once ``playbook shadow`` has proved the change on the live threads::

    accepts:
      - REDUCER_CHANGED campus_supervisor messages

(``CODE GRAPH [FIELD]``). `accepted_findings` gives them to the gate and the guard, which report
such a finding as a warning naming the record instead of blocking. `check` refuses an ``accepts``
entry whose graph the record does not cover, and a record that accepts anything without the
shadow's passing output pasted in it (``**Shadow verdict: pass**``): an acceptance is a proof
on record, not an opinion.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CONTRACTS_DIR = Path("migrations_playbook/contracts")
RECORDS_DIR = Path("migrations_playbook/records")
"""This repo's folders (relative to its root), as its pyproject.toml's [tool.playbook] names them.
Other projects: `migrations_playbook.graphcode.settings` (flags, their own [tool.playbook], defaults)."""
LOCK_VERSION = 2
"""1: topology, interrupt nodes, fields. 2 adds what resumed threads depend on beyond
that: per-node `@task`/`interrupt()` call order, unguarded reads, routing targets,
`defer` and Send input fields (``node_details``), the state kind, enforced
required-ness, managed values, validator digests, static breakpoints, the context
schema and every subgraph's own shape (``subgraphs``)."""


def contract_hash(contract: dict[str, Any]) -> str:
    canonical = json.dumps(contract, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()[:16]


def lock_document(contract: dict[str, Any]) -> dict[str, Any]:
    return {"lock_version": LOCK_VERSION, **contract}


def strip_lock(document: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in document.items() if k != "lock_version"}


def parse_record(text: str) -> dict[str, Any]:
    """Front matter of a record: scalar ``key: value`` lines and the ``contracts`` list."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        return {}
    meta: dict[str, Any] = {"contracts": []}
    current_list: str | None = None
    for line in lines[1:]:
        if line.strip() == "---":
            break
        if line.lstrip().startswith("- ") and current_list:
            meta[current_list].append(line.strip()[2:].strip())
            continue
        key, _, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if not key:
            continue
        if value:
            meta[key] = value
            current_list = None
        else:
            meta.setdefault(key, [])
            current_list = key
    return meta


def covered_hashes(records_dir: Path) -> dict[str, set[str]]:
    """graph id -> hashes (or ``removed``) that records cover."""
    covered: dict[str, set[str]] = {}
    for record in sorted(records_dir.glob("*.md")) if records_dir.is_dir() else []:
        for entry in parse_record(record.read_text()).get("contracts", []):
            graph_id, digest = contract_entry(entry)
            covered.setdefault(graph_id, set()).add(digest)
    return covered


def contract_entry(entry: str) -> tuple[str, str]:
    """A ``contracts:`` entry as (graph id, ``sha256:...`` or ``removed``): the digest is the last word, since a
    graph id may hold spaces (langgraph.json's graph keys are free text, e.g. open_deep_research's
    ``Deep Researcher``)."""
    graph_id, _, digest = entry.strip().rpartition(" ")
    return graph_id.strip(), digest.strip()


def diff_contracts(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """Human-readable differences between two contracts of one graph."""
    changes: list[str] = []
    old_nodes, new_nodes = set(old.get("nodes", [])), set(new.get("nodes", []))
    changes += [f"node removed: {n}" for n in sorted(old_nodes - new_nodes)]
    changes += [f"node added: {n}" for n in sorted(new_nodes - old_nodes)]
    old_edges, new_edges = set(old.get("edges", [])), set(new.get("edges", []))
    changes += [f"edge removed: {e}" for e in sorted(old_edges - new_edges)]
    changes += [f"edge added: {e}" for e in sorted(new_edges - old_edges)]
    if old.get("interrupt_nodes") != new.get("interrupt_nodes"):
        changes.append(f"interrupt nodes: {old.get('interrupt_nodes')} -> {new.get('interrupt_nodes')}")
    if old.get("flow_version") != new.get("flow_version"):
        changes.append(f"flow_version: {old.get('flow_version')} -> {new.get('flow_version')}")
    for key in ("state_kind", "managed", "validators", "interrupt_before", "interrupt_after", "context"):
        if old.get(key) != new.get(key):
            changes.append(f"{key}: {old.get(key)} -> {new.get(key)}")
    old_details, new_details = old.get("node_details") or {}, new.get("node_details") or {}
    for name in sorted(set(old_details) & set(new_details)):
        for key in ("calls", "reads", "targets", "defer", "input_fields"):
            if old_details[name].get(key) != new_details[name].get(key):
                changes.append(f"node {name} {key}: {old_details[name].get(key)} -> {new_details[name].get(key)}")
    old_subs, new_subs = old.get("subgraphs") or {}, new.get("subgraphs") or {}
    for path in sorted(set(old_subs) | set(new_subs)):
        if old_subs.get(path) != new_subs.get(path):
            changes.append(
                f"subgraph {path} changed"
                if path in old_subs and path in new_subs
                else f"subgraph {'removed' if path in old_subs else 'added'}: {path}"
            )
    old_fields, new_fields = old.get("fields", {}), new.get("fields", {})
    for name in sorted(set(old_fields) | set(new_fields)):
        if name not in new_fields:
            changes.append(f"field removed: {name}")
        elif name not in old_fields:
            required = " (required!)" if new_fields[name]["required"] else ""
            changes.append(f"field added: {name}: {new_fields[name]['type']}{required}")
        else:
            for key in ("required", "enforced", "type", "reducer"):
                if old_fields[name].get(key) != new_fields[name].get(key):
                    changes.append(f"field {name} {key}: {old_fields[name].get(key)} -> {new_fields[name].get(key)}")
    return changes


PLACEHOLDER = "TODO(playbook)"
"""Marks each line of a record skeleton (`playbook record new`) a person must replace: `check` refuses a
record that still holds one, so an unfilled skeleton never covers a lock."""


def unfilled(text: str) -> list[int]:
    """The line numbers (1-based) of a record that still hold `PLACEHOLDER`."""
    return [i for i, line in enumerate(text.splitlines(), start=1) if PLACEHOLDER in line]


SHADOW_PASSED = "**Shadow verdict: pass**"
"""What a record that accepts findings must hold: the shadow's passing output (markdown)."""


def _accepts(record: Path) -> tuple[dict[str, Any], list[tuple[str, str, str | None]], list[str]]:
    """(front matter, its well-formed ``accepts`` entries, the problems of the rest)."""
    text = record.read_text()
    meta = parse_record(text)
    accepts = meta.get("accepts") or []
    entries: list[tuple[str, str, str | None]] = []
    problems: list[str] = []
    covered = {contract_entry(entry)[0] for entry in meta.get("contracts", [])}
    for entry in accepts if isinstance(accepts, list) else [accepts]:
        parts = str(entry).split()
        if len(parts) not in (2, 3) and not _spaced_graph(parts, covered):
            parts = []
        if len(parts) < 2 or not parts[0].isupper():
            problems.append(f"{record.name}: accepts entry {entry!r} is not `CODE GRAPH [FIELD]`")
            continue
        graph_id, field_name = _spaced_graph(parts, covered) or (parts[1], parts[2] if len(parts) == 3 else None)
        if graph_id not in covered:
            problems.append(f"{record.name}: accepts {entry!r} for a graph the record's contracts do not list")
            continue
        entries.append((parts[0], graph_id, field_name))
    if accepts and SHADOW_PASSED not in text:
        problems.append(
            f"{record.name}: accepts findings but holds no passing shadow output ({SHADOW_PASSED}): prove the change "
            "with `playbook shadow ... --format markdown` and paste its output"
        )
        entries = []
    return meta, entries, problems


def _spaced_graph(parts: list[str], covered: set[str]) -> tuple[str, str | None] | None:
    """(graph id, field or None) of an ``accepts`` entry ``CODE GRAPH [FIELD]`` whose graph id holds spaces: the
    longest id the record's contracts list that the words after the code start with, then at most one field."""
    for graph_id in sorted((g for g in covered if " " in g), key=len, reverse=True):
        words = graph_id.split()
        if parts[1 : 1 + len(words)] == words and len(parts) - 1 - len(words) in (0, 1):
            rest = parts[1 + len(words) :]
            return graph_id, rest[0] if rest else None
    return None


def accepted_findings(records_dir: Path, hashes: Mapping[str, str]) -> dict[tuple[str, str, str | None], str]:
    """(code, graph id, field or None) -> the record id that accepts it, for the code whose contract hash
    per graph is ``hashes``: a record's ``accepts`` apply to the code its ``contracts`` list covers."""
    found: dict[tuple[str, str, str | None], str] = {}
    for record in sorted(records_dir.glob("*.md")) if records_dir.is_dir() else []:
        meta, entries, _ = _accepts(record)
        covers = {contract_entry(entry) for entry in meta.get("contracts", [])}
        for code, graph_id, field_name in entries:
            if (graph_id, hashes.get(graph_id, "")) in covers:
                found[(code, graph_id, field_name)] = str(meta.get("id") or record.stem)
    return found


@dataclass
class ContractStatus:
    graph_id: str
    digest: str | None
    problems: list[str] = field(default_factory=list)
    changes: list[str] = field(default_factory=list)


def check(contracts: dict[str, dict[str, Any]], contracts_dir: Path, records_dir: Path) -> list[ContractStatus]:
    """Compare code contracts with the locks and the records (and the records' ``accepts`` entries)."""
    covered = covered_hashes(records_dir)
    statuses: list[ContractStatus] = []
    for record in sorted(records_dir.glob("*.md")) if records_dir.is_dir() else []:
        problems = _accepts(record)[2]
        todo = unfilled(record.read_text())
        if todo:
            problems.append(
                f"{record.name} is an unfilled skeleton: replace the {PLACEHOLDER} line(s) "
                f"{', '.join(map(str, todo[:10]))}{' ...' if len(todo) > 10 else ''} with what the record says"
            )
        if problems:
            statuses.append(ContractStatus(graph_id=f"record {record.stem}", digest=None, problems=problems))
    for graph_id, contract in sorted(contracts.items()):
        digest = contract_hash(contract)
        status = ContractStatus(graph_id=graph_id, digest=digest)
        lock_path = contracts_dir / f"{graph_id}.json"
        if not lock_path.is_file():
            status.problems.append(f"no lock at {lock_path}: run `playbook contract --write` and add a record")
        else:
            document = json.loads(lock_path.read_text())
            locked = strip_lock(document)
            if int(document.get("lock_version") or 1) < LOCK_VERSION:
                status.problems.append(
                    f"{lock_path} is lock format {document.get('lock_version') or 1}, older than {LOCK_VERSION}: "
                    f"run `playbook contract --write` and add a record covering {graph_id} {digest}"
                )
            elif locked != contract:
                status.changes = diff_contracts(locked, contract)
                status.problems.append(
                    f"code differs from {lock_path}: run `playbook contract --write`, run the gate, "
                    f"and add a record covering {graph_id} {digest}"
                )
            elif digest not in covered.get(graph_id, set()):
                status.problems.append(f"no migration record in {records_dir} covers {graph_id} {digest}")
        statuses.append(status)
    for lock_path in sorted(contracts_dir.glob("*.json")) if contracts_dir.is_dir() else []:
        graph_id = lock_path.stem
        if graph_id not in contracts and "removed" not in covered.get(graph_id, set()):
            statuses.append(
                ContractStatus(
                    graph_id=graph_id,
                    digest=None,
                    problems=[
                        f"{lock_path} locks a graph the config no longer registers: delete the lock "
                        f"and add a record with `- {graph_id} removed`"
                    ],
                )
            )
    return statuses


HISTORY_DIR = "history"
"""``<contracts dir>/history/<graph_id>/<hash>.json``: every lock ever written, kept so that a
thread that last ran under an older version is judged against that version's lock
(`migrations_playbook.guard`)."""


def history_path(contracts_dir: Path, graph_id: str, digest: str) -> Path:
    return contracts_dir / HISTORY_DIR / graph_id / f"{digest.replace(':', '-')}.json"


def read_history(contracts_dir: Path, graph_id: str, digest: str) -> dict[str, Any] | None:
    """The lock whose contract hash is ``digest`` (the current lock included), or None."""
    current = contracts_dir / f"{graph_id}.json"
    for path in (current, history_path(contracts_dir, graph_id, digest)):
        if path.is_file():
            document: dict[str, Any] = json.loads(path.read_text())
            if contract_hash(strip_lock(document)) == digest:
                return document
    return None


def write(contracts: dict[str, dict[str, Any]], contracts_dir: Path) -> list[tuple[str, str, list[str]]]:
    """Write one lock per graph, and a copy into the lock history; returns (graph id, hash,
    changes vs the old lock)."""
    contracts_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for graph_id, contract in sorted(contracts.items()):
        lock_path = contracts_dir / f"{graph_id}.json"
        old = strip_lock(json.loads(lock_path.read_text())) if lock_path.is_file() else {}
        changes = diff_contracts(old, contract) if old else ["new lock"]
        text = json.dumps(lock_document(contract), indent=2, ensure_ascii=False) + "\n"
        lock_path.write_text(text)
        digest = contract_hash(contract)
        kept = history_path(contracts_dir, graph_id, digest)
        kept.parent.mkdir(parents=True, exist_ok=True)
        kept.write_text(text)
        written.append((graph_id, digest, changes if old != contract else []))
    return written


def read_locks(path: Path) -> dict[str, dict[str, Any]]:
    """Contract locks from a folder of ``<graph_id>.json`` files (or one such file)."""
    files = sorted(path.glob("*.json")) if path.is_dir() else [path]
    locks: dict[str, dict[str, Any]] = {}
    for file in files:
        lock = json.loads(file.read_text())
        locks[lock["graph_id"]] = lock
    return locks
