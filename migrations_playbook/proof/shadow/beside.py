"""What the shadow drives beside the threads, on every side: the store searched as the runs search it
(`store_reads.py`) and every thread read back through each side's whole langgraph.json as its owner (`config.py`).
The stored assistants are run in `assistants.py`."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from migrations_playbook.model import Finding, ThreadSnapshot
from migrations_playbook.proof.shadow.config import Identity
from migrations_playbook.proof.shadow.traces import SideTrace
from migrations_playbook.sources.budget import Deadline


async def store_reads(
    identities: Sequence[Identity],
    urls: tuple[str, str | None, str],
    a: SideTrace,
    a2: SideTrace,
    b: SideTrace,
    deadline: Deadline | None,
) -> tuple[list[Finding], list[str]]:
    """The store searched on each side as the runs search it, after the runs (`store_reads.py`)."""
    from migrations_playbook.proof.shadow.store_reads import judge_searches, plan_searches, store_searches

    url_a, url_b, url_a2 = urls
    if a.store is None or url_b is None:
        return [], []
    searches = await plan_searches(url_a, identities, deadline=deadline)
    reads = await asyncio.gather(
        *(
            store_searches(label, url, searches, identities, deadline=deadline)
            for label, url in (("A", url_a), ("A2", url_a2), ("B", url_b))
        )
    )
    return judge_searches(reads[0], reads[1], reads[2], a.store, b.store)


async def read_back_all(
    source: Any,
    snapshots: Sequence[ThreadSnapshot],
    identities: Sequence[Identity],
    urls: tuple[str, str | None, str],
    deadline: Deadline | None,
    *,
    chosen: Sequence[str],
) -> tuple[dict[str, Mapping[str, str]], list[Finding], list[str]]:
    """The threads read back on each side through its langgraph.json (`config.py`): every thread listed by each
    identity's search, and the stored state of the threads run (``chosen``) as their owners. Returns the owners'
    headers (for the drive), the findings and the notes."""
    from migrations_playbook.proof.shadow.config import judge_read_back, live_visibility, owners_of, read_back

    known = {t.thread_id for t in snapshots}
    owners = owners_of(await live_visibility(source.url, identities, known, deadline), identities)
    url_a, url_b, url_a2 = urls
    labels = ("A (deployed code)", "A2 (deployed code again)", "B (candidate)")
    sides = await asyncio.gather(
        *(
            read_back(label, url, identities, owners, known, states_of=set(chosen), deadline=deadline)
            for label, url in zip(labels, (url_a, url_a2, url_b), strict=True)
            if url is not None
        )
    )
    headers_of: dict[str, Mapping[str, str]] = {t: dict(o.headers) for t, o in owners.items()}
    if url_b is None:
        return headers_of, [], []
    graph_of = {t.thread_id: t.graph_id for t in snapshots}
    found, notes = judge_read_back(
        sides[0], sides[1], sides[2], {t: o.name for t, o in owners.items()}, [i.name for i in identities], graph_of
    )
    return headers_of, found, notes
