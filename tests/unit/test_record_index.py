"""`server/persistence/record_index.py`: records found by id stay right whatever the runtime does to its lists.

Each test changes the lists the way langgraph-runtime-inmem 0.36.7 does (append, ``pop``,
``del``, a filtered copy assigned back, a record replaced in place) and compares every look-up
with a plain scan.
"""

from __future__ import annotations

import random
import uuid
from typing import Any

import pytest

from server.persistence.record_index import RecordIndex, id_key, index_of


class Store(dict[str, Any]):
    """A dict that takes attributes, as the runtime's store does."""


def _store(threads: int = 5, runs_per_thread: int = 2) -> Store:
    store = Store(threads=[], runs=[])
    for _ in range(threads):
        _add_thread(store, runs_per_thread)
    return store


def _add_thread(store: Store, runs: int) -> uuid.UUID:
    thread_id = uuid.uuid4()
    store["threads"].append({"thread_id": thread_id, "status": "idle"})
    for _ in range(runs):
        store["runs"].append({"run_id": uuid.uuid4(), "thread_id": thread_id, "status": "success"})
    return thread_id


def _second(store: Store) -> Any:
    return store["threads"][1]["thread_id"]


def _agrees(index: RecordIndex, store: Store) -> None:
    ids = {t["thread_id"] for t in store["threads"]} | {r["thread_id"] for r in store["runs"]} | {uuid.uuid4()}
    for thread_id in ids:
        assert index.thread(thread_id) is next((t for t in store["threads"] if t["thread_id"] == thread_id), None)
        assert [id(r) for r in index.runs_of(thread_id)] == [id(r) for r in store["runs"] if r["thread_id"] == thread_id]
        assert index.thread(str(thread_id)) is index.thread(thread_id)
    for run in store["runs"]:
        assert index.run(run["run_id"]) is run
    assert index.run(uuid.uuid4()) is None


def test_appends_are_read_without_building_the_index_again() -> None:
    store = _store()
    index = RecordIndex(store)
    _agrees(index, store)
    for _ in range(20):
        thread_id = _add_thread(store, 1)
        store["runs"].append({"run_id": uuid.uuid4(), "thread_id": thread_id, "status": "pending"})
        _agrees(index, store)
    assert (index.threads.rebuilds, index.runs.rebuilds) == (1, 1)


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda s, rng: s["threads"].pop(rng.randrange(len(s["threads"]))), id="pop-a-thread"),
        pytest.param(lambda s, rng: s["threads"].pop(), id="pop-the-last-thread"),
        pytest.param(lambda s, rng: s["runs"].__delitem__(rng.randrange(len(s["runs"]))), id="del-a-run"),
        pytest.param(lambda s, rng: s["runs"].__delitem__(-1), id="del-the-last-run"),
        pytest.param(
            lambda s, rng: s.__setitem__("runs", [r for r in s["runs"] if r["thread_id"] != s["threads"][0]["thread_id"]]),
            id="runs-filtered-and-assigned-back",
        ),
        pytest.param(
            lambda s, rng: s["runs"].__setitem__(slice(None), [r for r in s["runs"] if r["thread_id"] != _second(s)]),
            id="runs-filtered-in-place",
        ),
        pytest.param(
            lambda s, rng: s["threads"].__setitem__(2, {**s["threads"][2], "status": "busy"}), id="thread-replaced-same-id"
        ),
        pytest.param(lambda s, rng: (s["threads"].pop(0), _add_thread(s, 2)), id="pop-then-append-to-the-same-length"),
    ],
)
def test_every_way_the_runtime_changes_its_lists_is_followed(change: Any) -> None:
    rng = random.Random(39)
    store = _store()
    index = RecordIndex(store)
    _agrees(index, store)
    for _ in range(3):
        change(store, rng)
        _agrees(index, store)
        _add_thread(store, 2)
        _agrees(index, store)


def test_random_interleaving_of_every_change_agrees_with_a_scan() -> None:
    rng = random.Random(7)
    store = _store(threads=30, runs_per_thread=3)
    index = RecordIndex(store)
    for _ in range(300):
        roll = rng.random()
        if roll < 0.5:
            _add_thread(store, rng.randrange(0, 4))
        elif roll < 0.65 and store["threads"]:
            gone = store["threads"].pop(rng.randrange(len(store["threads"])))["thread_id"]
            store["runs"] = [r for r in store["runs"] if r["thread_id"] != gone]
        elif roll < 0.8 and store["runs"]:
            del store["runs"][rng.randrange(len(store["runs"]))]
        elif store["threads"]:
            at = rng.randrange(len(store["threads"]))
            store["threads"][at] = {**store["threads"][at], "status": "interrupted"}
        thread_id = rng.choice(store["threads"])["thread_id"] if store["threads"] else uuid.uuid4()
        assert index.thread(thread_id) is next((t for t in store["threads"] if t["thread_id"] == thread_id), None)
        assert index.runs_of(thread_id) == [r for r in store["runs"] if r["thread_id"] == thread_id]
    _agrees(index, store)


def test_the_runtime_replaces_records_in_place_only_with_a_copy_of_the_same_thread() -> None:
    """What the index relies on: a record replaced in place keeps its id (one place in 0.36.7,
    ``Threads.patch``); a new place that assigns into the lists must be looked at."""
    import inspect
    import re

    from langgraph_runtime_inmem import ops  # type: ignore[import-untyped]  # the runtime ships no type info

    source = inspect.getsource(ops)
    assignments = re.findall(r'(\w+|conn\.store\["(?:threads|runs)"\])\[(\w+)\]\s*=(?!=)\s*(\w+)', source)
    into_lists = [a for a in assignments if a[0] in ("thread_list", "run_list", 'conn.store["threads"]', 'conn.store["runs"]')]
    assert into_lists == [("thread_list", "thread_idx", "thread")]
    assert "thread = copy.deepcopy(thread_list[thread_idx])" in source


def test_ids_that_are_not_uuids_are_compared_as_they_are() -> None:
    assert id_key("not-a-uuid") == "not-a-uuid"
    store = Store(threads=[{"thread_id": "plain"}], runs=[{"run_id": 1, "thread_id": "plain"}])
    index = RecordIndex(store)
    assert index.thread("plain") == {"thread_id": "plain"}
    assert index.run(1) == {"run_id": 1, "thread_id": "plain"}
    assert index.thread("other") is None


def test_the_index_is_kept_on_the_store_and_a_plain_dict_gets_a_fresh_one() -> None:
    store = _store()
    assert index_of(store) is index_of(store)
    plain = {"threads": list(store["threads"]), "runs": list(store["runs"])}
    thread_id = plain["threads"][0]["thread_id"]
    assert index_of(plain).thread(thread_id) is plain["threads"][0]
