"""`gate`, `inflight` and `snapshot` over a self-hosted checkpointer (``--checkpointer URI``).

The commands' other halves read an Agent Server (`cli.py`); these read the store
(`migrations_playbook.checkpointer`) and hand the same snapshots to the same
evaluator and renderers, so the exit codes and the JSON envelope are the same.
Store problems become the CLI's errors: a bad URI, a missing driver, a database
without checkpointer tables or a thread no graph can be told for is a usage error
(exit 2), a store that cannot be reached or stops answering is exit 3 (the URI is
shown without its password).
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from migrations_playbook.cli import ProgressBar, UsageError
from migrations_playbook.live import LiveUnreachable


def _locks(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """The live code's contract locks: the checkpointer source's only view of the live graph shape."""
    from migrations_playbook.live import read_locks

    folder = getattr(args, "live_contract", None)
    if not folder:
        raise UsageError(
            "--checkpointer needs --live-contract DIR: the contract locks of the code that wrote the threads "
            "(`playbook contract --write` on the deployed commit) give the graph shape their checkpoints follow"
        )
    path = Path(folder)
    if not path.exists():
        raise UsageError(f"--live-contract {folder}: no such file or folder")
    try:
        locks = read_locks(path)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UsageError(f"--live-contract {folder}: not a folder of contract locks ({type(exc).__name__}: {exc})") from None
    if not locks:
        raise UsageError(f"--live-contract {folder} holds no contract lock (<graph_id>.json)")
    bad = [graph_id for graph_id, lock in locks.items() if not lock.get("nodes")]
    if bad:
        raise UsageError(f"--live-contract {folder}: the lock of {', '.join(sorted(bad))} names no node")
    return locks


def _wanted(args: argparse.Namespace, locks: Mapping[str, Any]) -> list[str]:
    asked = list(args.graph)
    forced = getattr(args, "all_threads_are", None)
    if forced:
        if asked and asked != [forced]:
            raise UsageError(f"--all-threads-are {forced} scans only {forced}; drop --graph {' '.join(asked)}")
        asked = [forced]
    unknown = [g for g in asked if g not in locks]
    if unknown:
        raise UsageError(
            f"graph(s) {', '.join(unknown)} have no lock in --live-contract {args.live_contract}; "
            f"it has: {', '.join(sorted(locks))}"
        )
    return asked or sorted(locks)


def _attribution(args: argparse.Namespace, owners: set[str]) -> Any:
    """``owners``: the graphs an unlabeled thread can belong to (the candidate's, or the locks')."""
    from migrations_playbook.checkpointer import Attribution

    forced = getattr(args, "all_threads_are", None)
    if forced:
        return Attribution(single=forced, forced=True)
    return Attribution(single=next(iter(owners)) if len(owners) == 1 else None)


@contextlib.contextmanager
def _store(args: argparse.Namespace) -> Iterator[Any]:
    """The store, opened read-only; its errors mapped onto the CLI's exit codes."""
    from migrations_playbook.checkpointer import AttributionError
    from migrations_playbook.stores import StoreError, StoreUnreachable, open_store

    try:
        store = open_store(args.checkpointer)
    except StoreUnreachable as exc:
        raise LiveUnreachable(str(exc)) from None
    except StoreError as exc:
        raise UsageError(str(exc)) from None
    try:
        yield store
    except StoreUnreachable as exc:
        raise LiveUnreachable(str(exc)) from None
    except (StoreError, AttributionError) as exc:
        raise UsageError(str(exc)) from None
    finally:
        store.close()


def _source_notes(args: argparse.Namespace, store: Any, attribution: Any) -> list[str]:
    notes = [
        f"threads read from checkpointer {store.label} (read-only); live graph shape and reducers from contract "
        f"locks at {args.live_contract}",
    ]
    if attribution.forced:
        notes.append(f"every thread of the store taken as graph {attribution.single!r} (--all-threads-are)")
    elif attribution.single:
        notes.append(f"threads without 'graph_id' checkpoint metadata taken as graph {attribution.single!r}")
    return notes


def gate(args: argparse.Namespace, registered: set[str], candidates: dict[str, Any]) -> Any:
    """`playbook gate --checkpointer URI`: the report (`GateReport`). The threads are judged in
    parts, in parallel where the store allows (`checkpointer.partitioned`), and the parts' findings
    merged in thread id order: the report is the one a single pass gives."""
    from migrations_playbook.checkpointer import ScanCounts, iter_snapshots, live_graphs, partitioned
    from migrations_playbook.evaluate import Evaluator
    from migrations_playbook.model import GateReport

    locks = _locks(args)
    wanted = _wanted(args, locks)
    attribution = _attribution(args, registered)
    live = live_graphs(locks, wanted)

    def evaluator() -> Evaluator:
        made = Evaluator(live=live, candidates=candidates, registered=registered, strict=args.strict)
        for graph_id in wanted:
            made.summary(graph_id)
        return made

    def judge(part: Any, shown: Any, total: int) -> tuple[Any, ScanCounts]:
        judged, counts = evaluator(), ScanCounts()
        for thread in iter_snapshots(part, locks, wanted, attribution, counts=counts, progress=shown, total=total):
            judged.add(thread)
        return judged.partial(), counts

    progress = ProgressBar(enabled=args.format != "json" and not args.no_progress)
    with _store(args) as store:
        try:
            parts = partitioned(store, judge, progress=progress if progress.enabled else None)
        finally:
            progress.close()
        report, counts = evaluator(), ScanCounts()
        for partial, part_counts in parts:
            report.merge(partial)
            counts.merge(part_counts)
        notes = _source_notes(args, store, attribution) + counts.notes(args.live_contract)
        label = store.label
    notes.append("no assistants in a checkpointer: stored contexts (CONTEXT_INVALID) are not checked")
    return GateReport(
        live_url=label,
        candidate=str(args.candidate),
        strict=args.strict,
        graphs=report.summaries,
        findings=report.findings(),
        notes=notes,
    )


def inflight(args: argparse.Namespace) -> dict[str, Any]:
    """`playbook inflight --checkpointer URI`: counts per graph by status x flow_version x pending node."""
    from migrations_playbook.checkpointer import iter_snapshots

    locks = _locks(args)
    wanted = _wanted(args, locks)
    attribution = _attribution(args, set(locks))
    counts: dict[str, dict[tuple[str, str, str], int]] = {graph_id: {} for graph_id in wanted}
    with _store(args) as store:
        for thread in iter_snapshots(store, locks, wanted, attribution):
            version = thread.flow_version
            key = (thread.status, "none" if version is None else str(version), ",".join(thread.pending) or "-")
            bucket = counts[thread.graph_id]
            bucket[key] = bucket.get(key, 0) + 1
    return {
        graph_id: [{"status": s, "flow_version": v, "next": n, "threads": c} for (s, v, n), c in sorted(bucket.items())]
        for graph_id, bucket in counts.items()
    }


def snapshot(args: argparse.Namespace) -> dict[str, Any]:
    """`playbook snapshot --checkpointer URI`: what the gate reads, in the `snapshot` JSON format."""
    from migrations_playbook.checkpointer import iter_snapshots
    from migrations_playbook.model import Topology

    locks = _locks(args)
    wanted = _wanted(args, locks)
    attribution = _attribution(args, set(locks))
    with _store(args) as store:
        threads = [t.to_json() for t in iter_snapshots(store, locks, wanted, attribution)]
    return {
        "snapshot_version": 1,
        "graphs": {g: {"topology": Topology.from_lock(locks[g]).to_json()} for g in wanted},
        "threads": threads,
    }
