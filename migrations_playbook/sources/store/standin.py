"""A stand-in of the live graph, built from its contract lock, whose nodes never run.

The checkpointer source derives a thread's `next`, tasks, interrupts and nested
subgraph states with LangGraph's own `get_state(subgraphs=True)`. That needs a
compiled graph with the *live* code's shape (the candidate may have renamed the very
node a thread is paused at, and under the candidate `get_state` would show
``next == []``), and the live code is not here, only its lock. So this module compiles
a `StateGraph` with the lock's nodes (functions that raise if ever called),
their ``defer`` flags, subgraph nodes as compiled stand-ins of the subgraphs, the
lock's static edges and state fields: the same channels (``branch:to:<node>``,
``join:a+b:c``, the state keys) and triggers the live graph has, which is all
`get_state` reads. A Functional API graph becomes an `entrypoint` of the same name.

Reducers matter only where `get_state` applies pending writes (a finished sibling's
writes, null writes): a reducer the lock names is used when it can be imported
without running project code (the standard library, LangGraph, LangChain, or a
module the candidate already imported); otherwise the stand-in keeps the last write.
Waiting edges are not in the lock's drawing: their ``join:...`` channels are taken
from the thread's own checkpoints (`StandIns.get`).

Without ``--live-contract`` the "lock" is the shape the store itself shows
(`store_shape.DerivedShape.lock`): nodes, subgraphs and state keys, no edge, every reducer
`UNKNOWN_REDUCER`: the stand-in keeps what is stored and a pending write only fills an empty
channel (how the write would merge is the unknown reducer's business).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Annotated, Any

from typing_extensions import TypedDict

_SAFE_MODULES = ("_operator", "operator", "langgraph.", "langchain_core.", "langchain.")
BRANCH_TO = "branch:to:"
JOIN = "join:"
UNKNOWN_REDUCER = "unknown"
"""The reducer of a field whose live reducer nobody knows (a shape derived from the store): the
stand-in keeps the stored value (`keep_stored`)."""


class StandInError(Exception):
    """The lock does not describe a graph a stand-in can be compiled from."""


def never_runs(*_: Any, **__: Any) -> Any:
    raise RuntimeError("a stand-in node of the live graph never runs")


def keep_last(current: Any, update: Any) -> Any:
    """Reducer of a channel whose live reducer cannot be imported: the last write wins."""
    return update


def keep_stored(current: Any, update: Any) -> Any:
    """Reducer of a channel whose live reducer is unknown (`UNKNOWN_REDUCER`): the stored value stays
    (the first write fills an empty channel; LangGraph's aggregate does that before calling this)."""
    return current


def resolve_reducer(identity: str) -> Callable[[Any, Any], Any] | None:
    """The reducer a lock's ``BinaryOperatorAggregate(module.qualname)`` names, or None
    (LastValue and other plain channels)."""
    if not identity.startswith("BinaryOperatorAggregate(") or not identity.endswith(")"):
        return None
    target = identity[len("BinaryOperatorAggregate(") : -1]
    if "add_messages" in target:
        from langgraph.graph.message import add_messages

        return add_messages
    if "<locals>" in target or "." not in target:
        return keep_last
    parts = target.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        module_name = ".".join(parts[:cut])
        safe = module_name in sys.modules or any(module_name == m.rstrip(".") or module_name.startswith(m) for m in _SAFE_MODULES)
        if not safe:
            continue
        try:
            obj: Any = importlib.import_module(module_name)
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
        except (ImportError, AttributeError):
            continue
        return obj if callable(obj) else keep_last
    return keep_last


def _state_schema(name: str, fields: Mapping[str, Mapping[str, Any]]) -> type[Any]:
    annotations: dict[str, Any] = {}
    for field, spec in sorted(fields.items()):
        kind = str(spec.get("reducer") or "LastValue")
        reducer = keep_stored if kind == UNKNOWN_REDUCER else resolve_reducer(kind)
        if reducer is None and not kind.startswith("LastValue"):
            reducer = keep_last  # Topic, EphemeralValue, ...: read what is stored, never raise on writes
        annotations[field] = Annotated[Any, reducer] if reducer is not None else Any
    # mypy types only TypedDict() calls with literal arguments ("not callable", hence an Any result); these come from the lock
    return TypedDict(name, annotations, total=False)  # type: ignore[operator,no-any-return]  # functional TypedDict


def parse_edge(text: str) -> tuple[str, str, bool] | None:
    """``"a -> b"`` / ``"a -?-> b"`` (lock format) -> (a, b, conditional)."""
    for arrow, conditional in ((" -?-> ", True), (" -> ", False)):
        if arrow in text:
            source, _, target = text.partition(arrow)
            return source.strip(), target.strip(), conditional
    return None


def parse_join(channel: str) -> tuple[list[str], str] | None:
    """``join:a+b:c`` -> (["a", "b"], "c")."""
    if not channel.startswith(JOIN):
        return None
    body = channel[len(JOIN) :]
    starts, sep, end = body.rpartition(":")
    if not sep or not starts or not end:
        return None
    return starts.split("+"), end


class LockLevel:
    """The part of a lock that describes one (sub)graph level (``""``: the graph itself)."""

    def __init__(self, lock: Mapping[str, Any], prefix: str) -> None:
        self.lock = lock
        self.prefix = prefix
        own = lock if not prefix else (lock.get("subgraphs") or {}).get(prefix) or {}
        self.fields: Mapping[str, Mapping[str, Any]] = own.get("fields") or {}
        self.details: Mapping[str, Mapping[str, Any]] = own.get("node_details") or {}
        self.state_kind = str(own.get("state_kind") or "typeddict")
        self.interrupt_before = frozenset(own.get("interrupt_before") or ())
        self.interrupt_after = frozenset(own.get("interrupt_after") or ())
        head = prefix + ":" if prefix else ""
        names = {n[len(head) :] for n in lock.get("nodes") or () if n.startswith(head)}
        self.nodes = sorted({n for n in names if ":" not in n and not n.startswith("__")} | set(self.details))
        every = set(lock.get("nodes") or ()) | set(lock.get("subgraphs") or {})
        locked = set(lock.get("subgraphs") or {})
        self.subgraphs = sorted(
            n for n in self.nodes if f"{head}{n}" in locked or any(p.startswith(f"{head}{n}:") for p in every)
        )

    def path(self, node: str) -> str:
        return f"{self.prefix}:{node}" if self.prefix else node

    def edges(self) -> list[tuple[str, str, bool]]:
        """The lock's edges between nodes of this level (``__start__``/``__end__`` included)."""
        head = self.prefix + ":" if self.prefix else ""
        known = set(self.nodes) | {"__start__", "__end__"}
        found = []
        for text in self.lock.get("edges") or ():
            parsed = parse_edge(str(text))
            if parsed is None:
                continue
            source, target, conditional = parsed
            if head:
                if not (source.startswith(head) and target.startswith(head)):
                    continue
                source, target = source[len(head) :], target[len(head) :]
            if source in known and target in known and ":" not in source and ":" not in target:
                found.append((source, target, conditional))
        return found


def build(lock: Mapping[str, Any], joins: Mapping[str, Iterable[str]] | None = None, prefix: str = "") -> Any:
    """Compile the stand-in of the (sub)graph under ``prefix``; ``joins`` maps a level to the
    ``join:...`` channels its threads hold."""
    from langgraph.func import entrypoint
    from langgraph.graph import END, START, StateGraph

    level = LockLevel(lock, prefix)
    if not level.nodes:
        where = f" under {prefix!r}" if prefix else ""
        raise StandInError(f"the lock of {lock.get('graph_id')!r} names no node{where}")
    if level.state_kind == "functional":

        def entry(inputs: Any) -> Any:
            raise RuntimeError("a stand-in node of the live graph never runs")

        entry.__name__ = level.nodes[0]
        return entrypoint()(entry)

    name = f"LiveState_{lock.get('graph_id') or 'graph'}_{prefix or 'root'}".replace(":", "_")
    schema = _state_schema(name, level.fields)
    builder = StateGraph(schema)
    for node in level.nodes:
        if node in level.subgraphs:
            builder.add_node(node, build(lock, joins, level.path(node)))
        else:
            builder.add_node(node, never_runs, defer=bool((level.details.get(node) or {}).get("defer")))
    has_entry = False
    for source, target, conditional in level.edges():
        if conditional or source == "__end__" or target == "__start__":
            continue  # branches only write, and a stand-in never runs
        builder.add_edge(START if source == "__start__" else source, END if target == "__end__" else target)
        has_entry = has_entry or source == "__start__"
    if not has_entry:
        builder.add_edge(START, level.nodes[0])
    for channel in sorted((joins or {}).get(prefix, ())):
        parsed = parse_join(channel)
        if parsed and all(n in level.nodes for n in (*parsed[0], parsed[1])):
            builder.add_edge(parsed[0], parsed[1])
    return builder.compile()


class StandIns:
    """Stand-ins of one live graph, compiled once per set of waiting-edge channels."""

    def __init__(self, lock: Mapping[str, Any], checkpointer: Any) -> None:
        self.lock = lock
        self.checkpointer = checkpointer
        self._built: dict[frozenset[tuple[str, str]], Any] = {}
        self._levels: dict[str, LockLevel] = {}
        self.derived: dict[int, Any] = {}
        """id(stand-in) -> what a caller derives once per compiled stand-in (the checkpointer's `IdleTest`)."""

    def level(self, prefix: str) -> LockLevel:
        """The lock's part for the (sub)graph under ``prefix`` (read once)."""
        if prefix not in self._levels:
            self._levels[prefix] = LockLevel(self.lock, prefix)
        return self._levels[prefix]

    def get(self, joins: frozenset[tuple[str, str]] = frozenset()) -> Any:
        """The stand-in for threads whose checkpoints hold these ``(level, join channel)`` pairs."""
        if joins not in self._built:
            by_level: dict[str, set[str]] = {}
            for level, channel in joins:
                by_level.setdefault(level, set()).add(channel)
            graph = build(self.lock, by_level)
            graph.checkpointer = self.checkpointer
            self._built[joins] = graph
        return self._built[joins]
