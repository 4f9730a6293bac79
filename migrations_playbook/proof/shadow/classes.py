"""Which threads the shadow proof runs: one representative per class of thread, plus a seeded sample.

Two threads are in the same class when the proof would drive them alike and the candidate meets them
in the same position: the same graph, status, pending node paths, kinds of pending questions, state
shape (the top-level keys and the type of each value) and assistant. By default the proof runs the
first thread of every class (in the source's order) and ``sample`` more threads drawn with a fixed
seed from the rest; ``--all`` runs every thread. The report says how many threads each class stands
for, so a finding on a representative names its class's size. Pure: no I/O.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from migrations_playbook.model import ThreadSnapshot

SEED = 20240601
"""The sample's seed: the same threads on every run over the same data."""


def _kind(value: Any) -> str:
    if isinstance(value, Mapping):
        kind = value.get("kind")
        return str(kind) if kind is not None else "object"
    return type(value).__name__


def class_key(thread: ThreadSnapshot) -> tuple[Any, ...]:
    """What makes threads alike for the proof."""
    values = thread.values if isinstance(thread.values, Mapping) else {}
    shape = tuple(sorted((str(k), type(v).__name__) for k, v in values.items()))
    kinds = tuple(sorted(_kind(v) for task in thread.tasks for v in task.interrupt_values))
    return (thread.graph_id, thread.status, tuple(sorted(thread.pending)), kinds, shape, thread.assistant_id or "")


@dataclass
class ThreadClass:
    """Threads alike for the proof."""

    key: tuple[Any, ...]
    members: list[str] = field(default_factory=list)

    @property
    def graph_id(self) -> str:
        return str(self.key[0])

    def describe(self) -> str:
        graph, status, pending, kinds, shape, _ = self.key
        where = ",".join(pending) or "-"
        asked = ",".join(kinds) or "-"
        keys = ",".join(k for k, _ in shape) or "-"
        return f"{graph} {status} at {where} (questions {asked}; keys {keys})"


@dataclass
class Selection:
    """The classes, and the threads the proof runs."""

    classes: list[ThreadClass]
    chosen: list[str]
    class_of: dict[str, int]
    """Thread id -> index into `classes`."""

    def stands_for(self, thread_id: str) -> int:
        """How many threads the class of ``thread_id`` holds."""
        return len(self.classes[self.class_of[thread_id]].members)


def select(threads: Iterable[ThreadSnapshot], *, sample: int, every: bool, include: frozenset[str] = frozenset()) -> Selection:
    """The classes of ``threads`` and the ones to run (all of them with ``every``; ``include``: threads that
    must run whatever the sample, e.g. those `playbook check` settles a gate finding on)."""
    classes: dict[tuple[Any, ...], ThreadClass] = {}
    class_of: dict[str, int] = {}
    order: list[str] = []
    for thread in threads:
        key = class_key(thread)
        if key not in classes:
            classes[key] = ThreadClass(key)
        classes[key].members.append(thread.thread_id)
        class_of[thread.thread_id] = list(classes).index(key)
        order.append(thread.thread_id)
    listed = list(classes.values())
    if every:
        return Selection(listed, order, class_of)
    chosen = [c.members[0] for c in listed]
    rest = sorted(set(order) - set(chosen), key=order.index)
    extra = random.Random(SEED).sample(rest, min(sample, len(rest))) if sample > 0 else []
    picked = set(chosen) | set(extra) | (set(include) & set(order))
    return Selection(listed, [t for t in order if t in picked], class_of)


def class_lines(selection: Selection, run: Sequence[str]) -> list[str]:
    """The report's notes on the classes: what each is, how many threads it stands for, how many ran."""
    ran = set(run)
    lines = []
    for thread_class in selection.classes:
        count = sum(1 for t in thread_class.members if t in ran)
        lines.append(f"class {thread_class.describe()}: {len(thread_class.members)} thread(s), {count} run")
    return lines
