"""The runtime's thread and run records found by id, without a scan of every record (issue 39).

langgraph-runtime-inmem 0.36.7 keeps its records in two lists, ``store["threads"]`` and
``store["runs"]``. What this package does per operation (`thread_records`' journal row,
`thread_status`' settle) needs one thread's record and its runs; found by a scan of both lists,
that cost grew with every thread the server ever stored (9% of the server's samples at 3,200
threads). `RecordIndex` keeps positions by thread id and by run id, in step with the lists:

* the runtime appends (a new thread, a new run): the tail beyond what was indexed is read;
* it removes (``pop``, ``del``, a filtered copy of the list assigned back) or reassigns a list:
  the list is no longer the one indexed, shorter than what was indexed, or its last indexed
  position holds another record; the index is then built again, once (a delete already costs
  the runtime a scan of its own);
* it replaces a record in place (``Threads.patch``: ``thread_list[idx] = deepcopy(thread)``, the
  same id): a position is read from the list at each look-up, so the new record is found, and a
  record whose id is not the one indexed there makes the index build again.

Ids are compared as the UUIDs' integers (a Python-level ``UUID.__eq__`` per record was a third
of the old scans); an id that is not a UUID is compared as it is. One lock per index: the
server calls the runtime's operations from more than one event loop, each in a thread of its
own.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Hashable
from typing import Any
from uuid import UUID


def id_key(value: Any) -> Hashable:
    """How ids are compared: a UUID by its integer, a string that is a UUID the same way."""
    key: Hashable = value
    if isinstance(value, UUID):
        key = value.int
    elif isinstance(value, str):
        with contextlib.suppress(ValueError):
            key = UUID(value).int
    return key


class _ListIndex:
    """Positions of one runtime list's records by the values of some of their fields."""

    def __init__(self, store: Any, name: str, fields: tuple[str, ...]) -> None:
        self.store = store
        self.name = name
        self.fields = fields
        self._list: list[dict[str, Any]] | None = None
        self._indexed = 0
        self._last: dict[str, Any] | None = None
        self._positions: dict[str, dict[Hashable, list[int]]] = {f: {} for f in fields}
        self.rebuilds = 0
        """How often the index was built from the whole list (the first time included)."""

    def _in_step(self, items: list[dict[str, Any]]) -> bool:
        if items is not self._list or len(items) < self._indexed:
            return False
        return self._indexed == 0 or items[self._indexed - 1] is self._last

    def _catch_up(self) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = self.store[self.name]
        if not self._in_step(items):
            self._list, self._indexed, self._last = items, 0, None
            self._positions = {f: {} for f in self.fields}
            self.rebuilds += 1
        for position in range(self._indexed, len(items)):
            record = items[position]
            for f in self.fields:
                self._positions[f].setdefault(id_key(record.get(f)), []).append(position)
        if len(items) > self._indexed:
            self._indexed, self._last = len(items), items[-1]
        return items

    def find(self, field: str, value: Any) -> list[dict[str, Any]]:
        """Every record whose ``field`` is ``value``, in list order."""
        key = id_key(value)
        for attempt in (1, 2):
            items = self._catch_up()
            found = []
            for position in self._positions[field].get(key, ()):
                record = items[position]
                if id_key(record.get(field)) != key:  # replaced in place by a record of another id
                    break
                found.append(record)
            else:
                return found
            if attempt == 1:
                self._list = None  # build again
        items = self.store[self.name]
        return [record for record in items if id_key(record.get(field)) == key]


class RecordIndex:
    """The store's threads by thread id and runs by thread id and by run id (see the module doc)."""

    def __init__(self, store: Any) -> None:
        self._lock = threading.Lock()
        self.threads = _ListIndex(store, "threads", ("thread_id",))
        self.runs = _ListIndex(store, "runs", ("thread_id", "run_id"))

    def thread(self, thread_id: Any) -> dict[str, Any] | None:
        with self._lock:
            found = self.threads.find("thread_id", thread_id)
        return found[0] if found else None

    def runs_of(self, thread_id: Any) -> list[dict[str, Any]]:
        with self._lock:
            return self.runs.find("thread_id", thread_id)

    def run(self, run_id: Any) -> dict[str, Any] | None:
        with self._lock:
            found = self.runs.find("run_id", run_id)
        return found[0] if found else None


def index_of(store: Any) -> RecordIndex:
    """The store's index, made on first use and kept on the store itself."""
    index = getattr(store, "_record_index", None)
    if index is None or index.threads.store is not store:
        index = RecordIndex(store)
        with contextlib.suppress(AttributeError):  # a plain dict (tests): an index per call still answers right
            store._record_index = index
    return index
