"""The migration plan: what `playbook migrate` does to the threads (and assistants) the gate blocks.

A plan is one JSON file per migration, kept beside its record in the records folder
(``records/0006-helpdesk-assess.plan.json`` beside ``records/0006-helpdesk-assess.md``)
and reviewed in the pull request like code::

    {
      "plan_version": 1,
      "migration": "0006-helpdesk-assess",
      "graphs": ["helpdesk"],
      "steps": [
        {"op": "move_node", "from": "triage", "to": "assess"},
        {"op": "rename_key", "from": "response", "to": "reply"},
        {"op": "set_default", "key": "summary", "value": ""},
        {"op": "transform", "key": "priority", "map": {"normal": "low"}}
      ]
    }

Three layers, all pure but the import of named functions: `parse_plan` checks the
document's shape (no candidate needed), `check_against` checks it against the
candidate's graphs (declared keys, nodes, the edge a node move writes through), and
`compute_change` (`change.py`) turns one thread's view into the change the plan makes to it.
Every problem is a `PlanError` whose message names the step (``step 2 (rename_key)``);
the CLI prints it and exits 2 before anything is written.

Named functions (``"function": "package.module:attr"``) are imported with the plan's
own folder first on ``sys.path``, so a ``transforms.py`` beside the plan works. They
must be pure (no I/O, no clock, no randomness): a dry run and the apply call them
again and must get the same answer. They receive copies, never the tool's own data.
Their signatures:

* ``transform``:   ``f(value, values) -> new value`` (``value``: the key's stored JSON
  value; ``values``: the thread's values as earlier steps left them);
* ``set_default``: ``f(values) -> value`` for a key the thread lacks;
* ``context``:     ``f(context) -> new context`` (a stored assistant context, a dict);
* ``python``:      ``f(values, thread) -> dict | None``: the keys to write and their new
  values (``{}`` or None: nothing); ``thread`` is a `ThreadInfo` (`sources/repair_model.py`).
"""

from __future__ import annotations

import importlib
import inspect
import json
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

PLAN_VERSION = 1

MIGRATION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
Select = Literal["blocked", "all"]
"""Which threads a step touches: the ones the gate blocks (default), or every one it can change."""

OPS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    # op -> (required keys, optional keys); every step may also carry "graph", "select", "note".
    "move_node": (frozenset({"from", "to"}), frozenset({"as_node"})),
    "rename_key": (frozenset({"from", "to"}), frozenset({"old"})),
    "set_default": (frozenset({"key"}), frozenset({"value", "function"})),
    "transform": (frozenset({"key"}), frozenset({"function", "map"})),
    "context": (frozenset({"function"}), frozenset()),
    "python": (frozenset({"function"}), frozenset()),
}
COMMON = frozenset({"op", "graph", "select", "note"})
OLD_KEY = ("drop", "keep")
"""What `rename_key` does with the old key: ``drop`` (the candidate no longer declares it: its
value leaves the thread's state and stays in the pre-migration checkpoints) or ``keep`` (the
candidate still declares it, e.g. for an add-then-remove drain: the old value stays)."""


class PlanError(ValueError):
    """A plan that cannot be run as written (exit 2, nothing written)."""


@dataclass(frozen=True)
class Step:
    """One step of a plan, as written (``index`` is 1-based, as the messages say)."""

    index: int
    op: str
    graph: str
    select: Select = "blocked"
    params: Mapping[str, Any] = field(default_factory=dict)
    function: Callable[..., Any] | None = field(default=None, compare=False, repr=False)
    """The imported ``function`` (after `resolve_functions`)."""

    @property
    def label(self) -> str:
        what = {
            "move_node": f"{self.params.get('from')} -> {self.params.get('to')}",
            "rename_key": f"{self.params.get('from')} -> {self.params.get('to')}",
            "set_default": str(self.params.get("key")),
            "transform": str(self.params.get("key")),
            "context": str(self.params.get("function")),
            "python": str(self.params.get("function")),
        }[self.op]
        return f"step {self.index} ({self.op} {what})"

    def get(self, key: str, default: Any = None) -> Any:
        return self.params.get(key, default)


@dataclass(frozen=True)
class Plan:
    migration: str
    graphs: tuple[str, ...]
    steps: tuple[Step, ...]
    source: Path | None = None
    description: str = ""

    def steps_for(self, graph_id: str, *ops: str) -> list[Step]:
        return [s for s in self.steps if s.graph == graph_id and (not ops or s.op in ops)]


# -- parse: the document's shape ------------------------------------------------------------


def load_plan(path: Path) -> Plan:
    """Read and parse a plan file (JSON)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PlanError(f"plan {path}: cannot read it: {exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise PlanError(f"plan {path}: not JSON: {exc}") from None
    return parse_plan(data, source=Path(path))


def _text(value: Any, where: str, name: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise PlanError(f"{where}: '{name}' must be a non-empty string, got {json.dumps(value)}")
    return value.strip()


def _node_name(value: Any, where: str, name: str) -> str:
    text = _text(value, where, name)
    if ":" in text:
        raise PlanError(
            f"{where}: '{name}' is {text!r}, a node inside a subgraph: moving threads inside a subgraph is not "
            "supported (drain those threads before the change, or keep the node: add-then-remove)"
        )
    return text


def parse_plan(data: Any, *, source: Path | None = None) -> Plan:
    """Check a plan document's shape (no candidate needed) and build the `Plan`."""
    where = f"plan {source}" if source else "plan"
    if not isinstance(data, dict):
        raise PlanError(f"{where}: must be a JSON object, got {type(data).__name__}")
    known = {"plan_version", "migration", "graphs", "steps", "description"}
    unknown = sorted(set(data) - known)
    if unknown:
        raise PlanError(f"{where}: unknown key(s) {', '.join(unknown)}; a plan has {', '.join(sorted(known))}")
    if data.get("plan_version") != PLAN_VERSION:
        raise PlanError(f"{where}: 'plan_version' must be {PLAN_VERSION}, got {json.dumps(data.get('plan_version'))}")
    migration = _text(data.get("migration"), where, "migration")
    if not MIGRATION_ID.match(migration):
        raise PlanError(
            f"{where}: 'migration' {migration!r} must be letters, digits, '.', '_' or '-' (at most 100), "
            "e.g. '0006-helpdesk-assess'"
        )
    graphs = data.get("graphs")
    if not isinstance(graphs, list) or not graphs or not all(isinstance(g, str) and g for g in graphs):
        raise PlanError(f"{where}: 'graphs' must be a non-empty list of graph ids, got {json.dumps(graphs)}")
    if len(set(graphs)) != len(graphs):
        raise PlanError(f"{where}: 'graphs' names a graph twice: {json.dumps(graphs)}")
    raw_steps = data.get("steps")
    if not isinstance(raw_steps, list) or not raw_steps:
        raise PlanError(f"{where}: 'steps' must be a non-empty list of steps")
    description = data.get("description", "")
    if not isinstance(description, str):
        raise PlanError(f"{where}: 'description' must be a string")
    steps = tuple(_parse_step(i, raw, graphs, where) for i, raw in enumerate(raw_steps, start=1))
    _check_order(steps, where)
    return Plan(migration=migration, graphs=tuple(graphs), steps=steps, source=source, description=description)


def _parse_step(index: int, raw: Any, graphs: Sequence[str], where: str) -> Step:
    at = f"{where}: step {index}"
    if not isinstance(raw, dict):
        raise PlanError(f"{at}: must be an object with an 'op', got {json.dumps(raw)[:80]}")
    op = raw.get("op")
    if op not in OPS:
        raise PlanError(f"{at}: unknown op {json.dumps(op)}; the ops are {', '.join(OPS)}")
    at = f"{where}: step {index} ({op})"
    required, optional = OPS[op]
    unknown = sorted(set(raw) - required - optional - COMMON)
    if unknown:
        allowed = ", ".join(sorted(required | optional | COMMON))
        raise PlanError(f"{at}: unknown key(s) {', '.join(unknown)}; a {op} step has {allowed}")
    missing = sorted(required - set(raw))
    if missing:
        raise PlanError(f"{at}: missing {', '.join(repr(m) for m in missing)}")
    graph = raw.get("graph")
    if graph is None:
        if len(graphs) != 1:
            raise PlanError(f"{at}: the plan names several graphs ({', '.join(graphs)}): say which one with 'graph'")
        graph = graphs[0]
    if graph not in graphs:
        raise PlanError(f"{at}: graph {graph!r} is not among the plan's graphs ({', '.join(graphs)})")
    select = raw.get("select", "blocked")
    if select not in ("blocked", "all"):
        raise PlanError(f"{at}: 'select' must be 'blocked' (the threads the gate blocks) or 'all', got {json.dumps(select)}")
    if "note" in raw and not isinstance(raw["note"], str):
        raise PlanError(f"{at}: 'note' must be a string")
    params = {k: v for k, v in raw.items() if k not in COMMON}
    if op == "move_node":
        params["from"] = _node_name(raw["from"], at, "from")
        params["to"] = _node_name(raw["to"], at, "to")
        if params["from"] == params["to"]:
            raise PlanError(f"{at}: 'from' and 'to' are both {params['from']!r}")
        if "as_node" in raw:
            params["as_node"] = _node_name(raw["as_node"], at, "as_node")
    elif op == "rename_key":
        params["from"] = _text(raw["from"], at, "from")
        params["to"] = _text(raw["to"], at, "to")
        if params["from"] == params["to"]:
            raise PlanError(f"{at}: 'from' and 'to' are both {params['from']!r}")
        params["old"] = raw.get("old", "drop")
        if params["old"] not in OLD_KEY:
            raise PlanError(f"{at}: 'old' must be one of {', '.join(OLD_KEY)}, got {json.dumps(params['old'])}")
    elif op == "set_default":
        params["key"] = _text(raw["key"], at, "key")
        if ("value" in raw) == ("function" in raw):
            raise PlanError(f"{at}: give exactly one of 'value' (a JSON value) or 'function' (module:attr)")
    elif op == "transform":
        params["key"] = _text(raw["key"], at, "key")
        if ("map" in raw) == ("function" in raw):
            raise PlanError(f"{at}: give exactly one of 'map' (old value -> new value) or 'function' (module:attr)")
        if "map" in raw and (not isinstance(raw["map"], dict) or not raw["map"]):
            raise PlanError(f"{at}: 'map' must be a non-empty object from old (string) values to new values")
    if "function" in raw:
        spec = _text(raw["function"], at, "function")
        module, sep, attr = spec.partition(":")
        if not sep or not module or not attr:
            raise PlanError(f"{at}: 'function' must look like 'package.module:attr', got {spec!r}")
        params["function"] = spec
    return Step(index=index, op=op, graph=graph, select=select, params=params)


def _check_order(steps: Sequence[Step], where: str) -> None:
    """Steps that would fight over one thread: two moves away from the same node, one key written twice
    by renames/defaults, a rename whose old key a later step still reads."""
    moves: dict[tuple[str, str], Step] = {}
    for step in steps:
        if step.op == "move_node":
            key = (step.graph, step.get("from"))
            if key in moves:
                raise PlanError(f"{where}: {step.label} moves threads away from {key[1]!r} again ({moves[key].label} does)")
            moves[key] = step
    dropped: dict[tuple[str, str], Step] = {}
    for step in steps:
        read = (
            step.get("key") if step.op in ("set_default", "transform") else step.get("from") if step.op == "rename_key" else None
        )
        if read is not None and (step.graph, read) in dropped:
            raise PlanError(
                f"{where}: {step.label} reads {read!r}, which {dropped[(step.graph, read)].label} renamed away; "
                "order the steps so each reads what the previous ones leave"
            )
        if step.op == "rename_key" and step.get("old") == "drop":
            dropped[(step.graph, step.get("from"))] = step


# -- functions named by import path -----------------------------------------------------------


ARITY = {"transform": 2, "set_default": 1, "context": 1, "python": 2}
SIGNATURES = {
    "transform": "f(value, values) -> new value",
    "set_default": "f(values) -> value",
    "context": "f(context) -> new context",
    "python": "f(values, thread) -> dict of key -> new value (or None)",
}


def resolve_functions(plan: Plan, extra_paths: Sequence[Path] = ()) -> Plan:
    """Import every step's ``function`` (the plan's folder first on sys.path, then ``extra_paths``)
    and check it takes the arguments its op passes. Returns the plan with the functions set."""
    paths = [p for p in ([plan.source.resolve().parent] if plan.source else []) + [Path(p) for p in extra_paths]]
    for path in reversed(paths):
        if str(path) not in sys.path:
            sys.path.insert(0, str(path))
    importlib.invalidate_caches()
    steps = []
    for step in plan.steps:
        spec = step.get("function")
        if spec is None:
            steps.append(step)
            continue
        module_name, _, attr = spec.partition(":")
        try:
            module = importlib.import_module(module_name)
        except Exception as exc:  # noqa: BLE001 - any import failure of user code is a plan error, named
            raise PlanError(f"{step.label}: cannot import {module_name!r}: {type(exc).__name__}: {exc}") from None
        target: Any = module
        for part in attr.split("."):
            target = getattr(target, part, None)
            if target is None:
                raise PlanError(f"{step.label}: {module_name!r} has no {attr!r}")
        if not callable(target):
            raise PlanError(f"{step.label}: {spec} is not callable")
        try:
            inspect.signature(target).bind(*([None] * ARITY[step.op]))
        except TypeError:
            raise PlanError(f"{step.label}: {spec} must take {ARITY[step.op]} argument(s): {SIGNATURES[step.op]}") from None
        except ValueError:  # builtins without a signature: trust them
            pass
        steps.append(
            Step(index=step.index, op=step.op, graph=step.graph, select=step.select, params=step.params, function=target)
        )
    return Plan(
        migration=plan.migration, graphs=plan.graphs, steps=tuple(steps), source=plan.source, description=plan.description
    )


# -- check against the candidate ----------------------------------------------------------------


def static_predecessors(topology: Any, node: str) -> list[str]:
    """Nodes with a plain (not conditional) edge to ``node`` in a `Topology`."""
    return sorted({source for source, target, conditional in topology.edges if target == node and not conditional})


def check_against(plan: Plan, candidates: Mapping[str, Any], registered: set[str]) -> Plan:
    """Check the plan against the candidate's graphs (`CandidateGraph`s); fill in each move's
    ``as_node`` (the node whose edge the update is written through) when it is the only one."""
    steps = []
    for graph_id in plan.graphs:
        if graph_id not in registered or graph_id not in candidates:
            raise PlanError(
                f"plan {plan.migration}: graph {graph_id!r} is not in the candidate "
                f"(it registers {', '.join(sorted(registered)) or 'none'})"
            )
    for step in plan.steps:
        candidate = candidates[step.graph]
        nodes = candidate.topology.nodes
        fields = candidate.fields
        params = dict(step.params)
        if step.op == "move_node":
            if step.get("to") not in nodes:
                raise PlanError(
                    f"{step.label}: the candidate's {step.graph} has no node {step.get('to')!r} "
                    f"(its nodes: {', '.join(sorted(n for n in nodes if not n.startswith('__') and ':' not in n))})"
                )
            if step.get("from") in nodes:
                raise PlanError(
                    f"{step.label}: the candidate still has node {step.get('from')!r}: threads there resume as they are, "
                    "there is nothing to move"
                )
            preds = static_predecessors(candidate.topology, step.get("to"))
            as_node = step.get("as_node")
            if as_node is None:
                if len(preds) != 1:
                    raise PlanError(
                        f"{step.label}: say which node the update is written as ('as_node'): "
                        + (
                            f"{step.get('to')!r} has several plain edges into it ({', '.join(preds)})"
                            if preds
                            else f"no plain edge leads to {step.get('to')!r} in the candidate (only conditional ones, "
                            "whose router would decide): write a python step instead"
                        )
                    )
                as_node = preds[0]
            elif as_node not in preds:
                raise PlanError(
                    f"{step.label}: 'as_node' {as_node!r} has no plain edge to {step.get('to')!r} in the candidate, "
                    f"so update_state(as_node={as_node!r}) would not schedule it"
                    + (f" (nodes with one: {', '.join(preds)})" if preds else "")
                )
            params["as_node"] = as_node
        elif step.op in ("rename_key", "set_default", "transform"):
            if not candidate.state_inspectable:
                raise PlanError(
                    f"{step.label}: the candidate's {step.graph} has no inspectable state schema (Functional API): "
                    "use a python step"
                )
            key = step.get("to") if step.op == "rename_key" else step.get("key")
            if key not in fields:
                raise PlanError(
                    f"{step.label}: the candidate's {step.graph} declares no state key {key!r} "
                    f"(it declares {', '.join(sorted(fields))})"
                )
            if step.op == "rename_key":
                old_declared = step.get("from") in fields
                if step.get("old") == "drop" and old_declared:
                    raise PlanError(
                        f'{step.label}: the candidate still declares {step.get("from")!r}: say "old": "keep" '
                        "(add-then-remove: the old key stays for its drain period) or remove it from the candidate"
                    )
                if step.get("old") == "keep" and not old_declared:
                    raise PlanError(
                        f'{step.label}: "old": "keep" needs the candidate to declare {step.get("from")!r}, and it does not'
                    )
            if step.op == "set_default" and "value" in step.params:
                problem = candidate.validate(key, step.get("value"))
                if problem:
                    raise PlanError(
                        f"{step.label}: the default {json.dumps(step.get('value'))} does not fit the candidate's type of "
                        f"{key!r}: {problem}"
                    )
            if step.op == "transform" and "map" in step.params:
                for old, new in step.get("map").items():
                    problem = candidate.validate(key, new)
                    if problem:
                        raise PlanError(
                            f"{step.label}: map {old!r} -> {json.dumps(new)} does not fit the candidate's type of "
                            f"{key!r}: {problem}"
                        )
        elif step.op == "context" and candidate.context_fields is None:
            raise PlanError(f"{step.label}: the candidate's {step.graph} has no context_schema: there is no context to transform")
        steps.append(
            Step(index=step.index, op=step.op, graph=step.graph, select=step.select, params=params, function=step.function)
        )
    return Plan(
        migration=plan.migration, graphs=plan.graphs, steps=tuple(steps), source=plan.source, description=plan.description
    )
