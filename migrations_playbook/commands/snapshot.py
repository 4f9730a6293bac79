"""`playbook snapshot`: record the live threads and topology the gate reads (JSON), over any `Source`."""

from __future__ import annotations

import asyncio
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from migrations_playbook.errors import EXIT_PASS
from migrations_playbook.render.progress import ProgressBar
from migrations_playbook.sources.base import SourceRequest
from migrations_playbook.sources.factory import open_source

SNAPSHOT_VERSION = 1


@dataclass(frozen=True)
class SnapshotRequest:
    source: SourceRequest
    graphs: list[str] = field(default_factory=list)
    out: str = "-"
    """A file to write, or ``-`` for stdout."""
    progress: bool = True
    """A progress bar on stderr while the threads are read."""


async def snapshot(request: SnapshotRequest) -> dict[str, Any]:
    async with open_source(request.source) as source:
        wanted = await source.graph_ids(request.graphs)
        graphs = await source.live_graphs(wanted, locks=False)
        progress = ProgressBar(enabled=request.progress)
        try:
            threads = [
                thread.to_json() async for thread in source.threads(wanted, progress=progress if progress.enabled else None)
            ]
        finally:
            progress.close()
        return {
            "snapshot_version": SNAPSHOT_VERSION,
            "graphs": {g: {"topology": lg.topology.to_json() if lg.topology else None} for g, lg in graphs.items()},
            "threads": threads,
        }


def run(request: SnapshotRequest) -> int:
    """Record what the gate reads from a live source, for offline evaluation and tests."""
    data = asyncio.run(snapshot(request))
    text = json.dumps(data, indent=1, ensure_ascii=False, sort_keys=True) + "\n"
    if request.out == "-":
        sys.stdout.write(text)
    else:
        Path(request.out).write_text(text)
        print(f"{len(data['threads'])} threads of {len(data['graphs'])} graphs written to {request.out}", file=sys.stderr)
    return EXIT_PASS
