"""The long-term store's items, journaled in ``records.sqlite`` before each write returns.

The runtime pickles its store (``/store/items``, a graph's ``runtime.store``) only every
10 s. `_journal_store_writes`, which `dev_checkpointer` awaits at start-up, lays the
journaled items over the store the runtime loaded and wraps the store's ``abatch`` so
that every later batch of puts and deletes journals the items it changed
(`_journaled_abatch`, through `_STORE_JOURNAL`).
"""

from __future__ import annotations

import asyncio
import functools
import json
import pickle
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from server.persistence.acknowledged import Acknowledged, mark_journal_table
from server.persistence.checked_pickles import checksum_on_sync
from server.persistence.files import RECORDS_NAME

_STORE_TABLE = (
    "CREATE TABLE IF NOT EXISTS store_items "
    "(namespace TEXT NOT NULL, key TEXT NOT NULL, seq INTEGER NOT NULL, item BLOB, PRIMARY KEY (namespace, key))"
)
"""One row per store item written since the last start: its latest value (NULL: deleted)."""


class _StoreJournal:
    """The store's rows in ``records.sqlite``: what `_journaled_abatch` writes after each batch of puts."""

    def __init__(self, journal: Any, seq: int, acknowledged: Acknowledged | None = None) -> None:
        self.journal = journal
        self.seq = seq
        self.acknowledged = acknowledged
        """The marker file: each batch's last seq, once committed (`acknowledged`)."""

    async def write(self, data: Any, keys: Iterable[tuple[tuple[str, ...], str]]) -> None:
        rows = []
        for namespace, key in keys:
            item = (data.get(namespace) or {}).get(key)
            self.seq += 1
            value = None if item is None else pickle.dumps(item, protocol=pickle.HIGHEST_PROTOCOL)
            rows.append((json.dumps(list(namespace), ensure_ascii=False), key, self.seq, value))
        async with self.journal.executemany(
            "INSERT INTO store_items (namespace, key, seq, item) VALUES (?, ?, ?, ?) ON CONFLICT (namespace, key) "
            "DO UPDATE SET seq = excluded.seq, item = excluded.item",
            rows,
        ):
            pass
        if rows and self.acknowledged is not None:  # this batch's own seqs: another batch's may not be committed yet
            self.acknowledged.acknowledge(RECORDS_NAME, "store_items", max(row[2] for row in rows))


_STORE_JOURNAL: _StoreJournal | None = None
"""The store's journal while the server runs (None before `dev_checkpointer` and after shutdown)."""


async def _journal_store_writes(journal: Any, acknowledged: Acknowledged | None = None) -> None:
    """Lay the journaled store items over the pickled store, pickle it, and journal every later write.

    langgraph-runtime-inmem 0.36.7 keeps the store (``/store/items``, a graph's
    ``runtime.store``) in a dict it pickles to ``store.pckl`` every 10 s and at a graceful
    stop: a SIGKILL lost the items written in the last seconds, after the server had
    answered. Every batch of puts and deletes now writes the items it changed to the
    journal (one row per item, its latest value) before the batch returns, so before the
    server answers, and its last seq to ``acknowledged`` (the marker file). At start-up the
    rows are laid over the items the runtime loaded, the pickle is rewritten (from now on
    with a checksum line, `checked_pickles`), and the rows it holds are cleared. Vectors (a
    store with an ``index``, which this deployment does not configure) are not journaled.
    """
    global _STORE_JOURNAL
    from langgraph_runtime_inmem import store as inmem_store  # type: ignore[import-untyped]  # no type info

    async with journal.execute(_STORE_TABLE):
        pass
    mark = await mark_journal_table(journal, "store_items")
    async with journal.execute("SELECT namespace, key, seq, item FROM store_items ORDER BY seq") as cursor:
        rows = await cursor.fetchall()
    data = inmem_store.STORE._data
    for persistent in (data, inmem_store.STORE._vectors):
        if hasattr(persistent, "sync"):  # a PersistentDict (file persistence is on)
            checksum_on_sync(persistent)
    for namespace, key, _, item in rows:
        items = data[tuple(json.loads(namespace))]
        if item is None:
            items.pop(key, None)
        else:
            items[key] = pickle.loads(item)
    last = max((row[2] for row in rows), default=0)
    if rows and hasattr(data, "sync"):
        await asyncio.to_thread(data.sync)  # nothing serves requests yet
        async with journal.execute("DELETE FROM store_items WHERE seq <= ?", (last,)):
            pass
    store_class = type(inmem_store.STORE)
    if not getattr(store_class.abatch, "journaled", False):
        store_class.abatch = _journaled_abatch(store_class.abatch)
    # Count on from the journal's own count of acknowledged writes: the rows are cleared above.
    _STORE_JOURNAL = _StoreJournal(journal, max(last, mark), acknowledged)


def _journaled_abatch(abatch: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    from langgraph.store.base import PutOp

    @functools.wraps(abatch)
    async def journaled(self: Any, ops: Iterable[Any]) -> Any:
        ops = list(ops)
        results = await abatch(self, ops)
        written = {(op.namespace, op.key) for op in ops if isinstance(op, PutOp)}
        if written and (journal := _STORE_JOURNAL) is not None:
            await journal.write(self._data, written)
        return results

    journaled.journaled = True  # type: ignore[attr-defined]  # marks the wrapper: applied once per class
    return journaled
