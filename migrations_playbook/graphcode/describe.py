"""Describe a compiled graph: what old checkpoints depend on, read in-process.

`describe` gives the evaluate layer a `CandidateGraph` (topology, fields and what
the runtime enforces of them, validators, routers, per-node code facts, subgraphs,
context schema); `contract_of` gives the lockable JSON of the same facts (see
`migrations_playbook.graphcode.contract`). Nothing here runs a node, a model or a tool:
routers are evaluated on stored values only by the gate, and code facts come from
source (`migrations_playbook.graphcode.codeinfo`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import inspect
import re
import sys
from collections.abc import Callable
from typing import Any

import typing_extensions

from migrations_playbook.graphcode import codeinfo
from migrations_playbook.graphcode.saved import saved_value_of
from migrations_playbook.graphcode.tools import tool_node
from migrations_playbook.graphcode.typing_facts import render_type, structured_fields, unwrap, validation_error
from migrations_playbook.jsonschema_types import output_types_of as output_types_of_schema
from migrations_playbook.model import CandidateGraph, FieldSpec, NodeSpec, StateKind, Topology

MAX_SUBGRAPH_DEPTH = 4


def reducer_identity(channel: Any) -> str:
    """``ChannelClass`` or ``ChannelClass(module.qualname)`` of its reducer."""
    kind = type(channel).__name__
    operator = getattr(channel, "operator", None) or getattr(channel, "reducer", None)
    if operator is None:
        return kind
    name = getattr(operator, "__qualname__", None) or getattr(operator, "__name__", None) or repr(operator)
    module = getattr(operator, "__module__", None) or ""
    return f"{kind}({module}.{name})" if module else f"{kind}({name})"


def _state_hints(builder: Any) -> tuple[dict[str, Any], frozenset[str]]:
    """All declared fields (state, input, output and private schemas) and the required ones."""
    hints: dict[str, Any] = {}
    schemas = [builder.state_schema, *[s for s in getattr(builder, "schemas", {}) if s is not builder.state_schema]]
    for schema in schemas:
        fields = structured_fields(schema) if isinstance(schema, type) else None
        for name, (annotation, _) in (fields or {}).items():
            hints.setdefault(name, annotation)
    state_fields = structured_fields(builder.state_schema) or {}
    required = frozenset(name for name, (_, req) in state_fields.items() if req)
    managed = set(getattr(builder, "managed", None) or {})
    return {k: v for k, v in hints.items() if k not in managed}, required - managed


def state_kind(schema: Any) -> StateKind:
    """Which kind of state schema this is (it decides what the runtime enforces)."""
    if not isinstance(schema, type):
        return "other"
    if typing_extensions.is_typeddict(schema):
        return "typeddict"
    if isinstance(getattr(schema, "model_fields", None), dict):
        return "pydantic"
    if dataclasses.is_dataclass(schema):
        return "dataclass"
    return "other"


def _error_text(exc: BaseException) -> tuple[str | None, str]:
    """(first field, message) of a validation or construction error."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        with contextlib.suppress(Exception):
            return validation_error(exc)
    if isinstance(exc, TypeError):
        # A dataclass built without a field: "__init__() missing 1 required positional argument: 'due'"
        named = re.search(r"missing \d+ required (?:positional|keyword-only) arguments?: '(\w+)'", str(exc))
        if named:
            return named.group(1), f"{named.group(1)}: missing ({exc})"
    return None, f"{type(exc).__name__}: {exc}"


def _schema_validator(schema: Any) -> Callable[[dict[str, Any]], tuple[str | None, str] | None]:
    """Build a whole-object validator that does what the runtime does with a dict of values:
    a pydantic model is validated (its validators run), a dataclass is constructed
    (``__post_init__`` runs) and then type-checked, a TypedDict is type-checked."""
    from pydantic import TypeAdapter

    kind = state_kind(schema)
    if kind == "other":
        return lambda values: None
    fields = set(structured_fields(schema) or {})
    try:
        adapter: TypeAdapter[Any] | None = TypeAdapter(schema)
    except Exception:  # noqa: BLE001 - arbitrary types cannot be checked from JSON
        adapter = None

    def check(values: dict[str, Any]) -> tuple[str | None, str] | None:
        known = {k: v for k, v in values.items() if k in fields}
        try:
            if kind == "pydantic":
                schema.model_validate(known)
            elif kind == "dataclass":
                schema(**known)
                if adapter is not None:
                    adapter.validate_python(known)
            elif adapter is not None:
                adapter.validate_python(known)
        except Exception as exc:  # noqa: BLE001 - user validators raise anything
            return _error_text(exc)
        return None

    return check


def _validators_digest(schema: Any) -> str | None:
    """A digest of a pydantic model's validators (their source), so a lock shows a changed one."""
    decorators = getattr(schema, "__pydantic_decorators__", None)
    if decorators is None:
        return None
    parts = []
    for group in ("field_validators", "model_validators", "root_validators", "validators"):
        for name, info in sorted((getattr(decorators, group, None) or {}).items()):
            func = getattr(info, "func", None)
            try:
                source = inspect.getsource(func) if func is not None else ""
            except (OSError, TypeError):
                source = repr(func)
            parts.append(f"{group}:{name}:{source}")
    if not parts:
        return None
    return "sha256:" + hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def _interrupt_nodes(graph: Any, prefix: str = "") -> list[str]:
    """Nodes configured with interrupt_before/after, or whose source calls interrupt(),
    at any subgraph depth (``review:confirm``)."""
    from langgraph.pregel import Pregel

    found = {
        prefix + n
        for n in [*(getattr(graph, "interrupt_before_nodes", None) or []), *(getattr(graph, "interrupt_after_nodes", None) or [])]
        if n != "*"
    }
    builder = getattr(graph, "builder", None)
    for name, spec in (getattr(builder, "nodes", None) or {}).items():
        runnable = getattr(spec, "runnable", None)
        if isinstance(runnable, Pregel):
            found.update(_interrupt_nodes(runnable, f"{prefix}{name}:"))
            continue
        func = getattr(runnable, "func", None) or getattr(runnable, "afunc", None)
        try:
            source = inspect.getsource(func) if func is not None else ""
        except (OSError, TypeError):
            source = ""
        if "interrupt(" in source or any(
            call.startswith(codeinfo.INTERRUPT + "(") for call in codeinfo.analyse_node(runnable).calls
        ):
            found.add(prefix + name)  # its own code, a helper it calls, or a ToolNode's tool
    return sorted(found)


def _flow_version(graph: Any) -> int | None:
    builder = getattr(graph, "builder", None)
    schema = getattr(builder, "state_schema", None)
    module = sys.modules.get(getattr(schema, "__module__", ""), None)
    value = getattr(module, "CURRENT_FLOW_VERSION", None)
    return value if isinstance(value, int) else None


def _router(branch: Any) -> Callable[[dict[str, Any]], set[str] | None]:
    def pick(values: dict[str, Any]) -> set[str] | None:
        try:
            result = branch.path.invoke(values)
        except Exception:  # noqa: BLE001 - a router that needs a runtime cannot be judged offline
            return None
        results = result if isinstance(result, list | tuple) else [result]
        targets: set[str] = set()
        for item in results:
            node = getattr(item, "node", item)  # Send(node=...) or a name
            if branch.ends and node in branch.ends:
                node = branch.ends[node]
            if not isinstance(node, str):
                return None
            targets.add(node)
        return targets

    return pick


def _node_specs(graph: Any, builder: Any) -> dict[str, NodeSpec]:
    """Per-node code facts: a StateGraph's nodes, or a Functional API graph's entrypoint."""
    specs: dict[str, NodeSpec] = {}
    if builder is None:
        for name, node in (getattr(graph, "nodes", None) or {}).items():
            if name.startswith("__"):
                continue
            facts = codeinfo.analyse(getattr(node, "bound", None))
            specs[name] = NodeSpec(
                name=name, calls=tuple(facts.calls), targets=frozenset(facts.targets), dynamic_targets=facts.dynamic_targets
            )
        return specs
    state_schema = builder.state_schema
    for name, spec in builder.nodes.items():
        runnable = getattr(spec, "runnable", None)
        facts = codeinfo.analyse_node(runnable)
        ends = spec.ends or ()
        ends = set(ends.values() if isinstance(ends, dict) else ends)
        router_returns: set[str] = set()
        for branch in (builder.branches.get(name) or {}).values():
            router_returns |= codeinfo.analyse(branch.path).returns
            if branch.ends:
                router_returns |= {str(v) for v in branch.ends.values()}
        input_schema = getattr(spec, "input_schema", None) or state_schema
        own_input = isinstance(input_schema, type) and input_schema is not state_schema
        input_fields = (
            {field: required for field, (_, required) in (structured_fields(input_schema) or {}).items()} if own_input else {}
        )
        tools, messages_key = tool_node(runnable)
        specs[name] = NodeSpec(
            name=name,
            calls=tuple(facts.calls),
            reads=frozenset(facts.reads),
            writes=frozenset(facts.writes) if facts.writes is not None else None,
            # a declared end a Command(graph=Command.PARENT) goes to is the parent's node, not this graph's
            targets=frozenset(str(t) for t in facts.targets | (ends - facts.parent_targets)),
            dynamic_targets=facts.dynamic_targets,
            parent_targets=frozenset(str(t) for t in facts.parent_targets),
            router_returns=frozenset(router_returns),
            defer=bool(getattr(spec, "defer", False)),
            input_fields=input_fields,
            input_enforced=state_kind(input_schema) in ("pydantic", "dataclass"),
            tools=tools,
            messages_key=messages_key,
        )
    return specs


def _subgraph_of(spec: Any) -> Any:
    """The compiled subgraph a node runs: added as the node, or invoked inside its function."""
    from langgraph.pregel import Pregel

    runnable = getattr(spec, "runnable", None)
    if isinstance(runnable, Pregel):
        return runnable
    found = codeinfo.analyse(runnable).subgraphs
    return found[0] if len(found) == 1 else None


def _context(graph: Any, builder: Any) -> tuple[dict[str, dict[str, Any]] | None, Callable[[dict[str, Any]], str | None]]:
    schema = getattr(graph, "context_schema", None) or getattr(builder, "context_schema", None)
    fields = structured_fields(schema) if isinstance(schema, type) else None
    if fields is None:
        return None, lambda context: None
    check = _schema_validator(schema)

    def validate(context: dict[str, Any]) -> str | None:
        failed = check(context if isinstance(context, dict) else {})
        return None if failed is None else failed[1]

    described = {
        name: {"required": required, "type": render_type(annotation)} for name, (annotation, required) in sorted(fields.items())
    }
    return described, validate


def describe(graph_id: str, graph: Any, *, _depth: int = 0) -> CandidateGraph:
    """Describe a compiled graph: topology, fields, validators, routers, code facts, subgraphs."""
    from langgraph.graph import StateGraph
    from pydantic import TypeAdapter, ValidationError

    topology = Topology.from_drawings(graph.get_graph().to_json(), graph.get_graph(xray=True).to_json())
    builder = getattr(graph, "builder", None)
    builder = builder if isinstance(builder, StateGraph) else None
    nodes = _node_specs(graph, builder)
    interrupt_before = frozenset(n for n in getattr(graph, "interrupt_before_nodes", None) or [] if n != "*")
    interrupt_after = frozenset(n for n in getattr(graph, "interrupt_after_nodes", None) or [] if n != "*")
    channel_names = frozenset(getattr(graph, "channels", {}) or {})
    context_fields, validate_context = _context(graph, builder)
    if builder is None:
        return CandidateGraph(
            graph_id=graph_id,
            topology=topology,
            fields={},
            state_inspectable=False,
            state_kind="functional",
            context_fields=context_fields,
            validate_context=validate_context,
            nodes=nodes,
            interrupt_before=interrupt_before,
            interrupt_after=interrupt_after,
            channels=channel_names,
            saved=saved_value_of(graph),
        )

    hints, required = _state_hints(builder)
    kind = state_kind(builder.state_schema)
    enforced = kind in ("pydantic", "dataclass")
    channels = getattr(graph, "channels", {})
    fields = {
        name: FieldSpec(
            name=name,
            required=name in required,
            type=render_type(annotation),
            reducer=reducer_identity(channels[name]) if name in channels else "LastValue",
            enforced=enforced and name in required,
        )
        for name, annotation in sorted(hints.items())
    }
    adapters: dict[str, TypeAdapter[Any] | None] = {}

    def adapter(name: str) -> TypeAdapter[Any] | None:
        if name not in adapters:
            try:
                adapters[name] = TypeAdapter(unwrap(hints[name]))
            except Exception:  # noqa: BLE001 - arbitrary types cannot be validated from JSON
                adapters[name] = None
        return adapters[name]

    def validate(name: str, value: Any) -> str | None:
        checker = adapter(name) if name in hints else None
        if checker is None:
            return None
        try:
            checker.validate_python(value)
        except ValidationError as exc:
            return validation_error(exc)[1]
        return None

    def coerce(values: dict[str, Any]) -> dict[str, Any]:
        out = dict(values)
        for name, value in values.items():
            checker = adapter(name) if name in hints else None
            if checker is not None:
                with contextlib.suppress(Exception):
                    out[name] = checker.validate_python(value)
        return out

    whole = _schema_validator(builder.state_schema) if kind in ("pydantic", "dataclass") else None

    def validate_state(values: dict[str, Any]) -> tuple[str, str] | None:
        if whole is None:
            return None
        failed = whole(values)
        return None if failed is None else (failed[0] or "", failed[1])

    routers = {source: [_router(branch) for branch in branches.values()] for source, branches in builder.branches.items()}
    subgraphs: dict[str, CandidateGraph] = {}
    if _depth < MAX_SUBGRAPH_DEPTH:
        for name, spec in builder.nodes.items():
            sub = _subgraph_of(spec)
            if sub is not None:
                with contextlib.suppress(Exception):
                    subgraphs[name] = describe(f"{graph_id}:{name}", sub, _depth=_depth + 1)
    return CandidateGraph(
        graph_id=graph_id,
        topology=topology,
        fields=fields,
        state_inspectable=True,
        validate=validate,
        coerce=coerce,
        routers=routers,
        state_kind=kind,
        managed=frozenset(getattr(builder, "managed", None) or {}),
        subgraphs=subgraphs,
        validate_state=validate_state,
        validators=_validators_digest(builder.state_schema),
        context_fields=context_fields,
        validate_context=validate_context,
        nodes=nodes,
        interrupt_before=interrupt_before,
        interrupt_after=interrupt_after,
        channels=channel_names,
        output_types=output_types_of(graph),
    )


def output_types_of(graph: Any) -> dict[str, frozenset[str]] | None:
    """The keys a compiled graph's output schema names, with their JSON types (``get_output_jsonschema``, as the
    server serves it for the live graph, managed values included); None when the output is not keyed (a
    Functional API entrypoint)."""
    try:
        schema = graph.get_output_jsonschema()
    except Exception:  # noqa: BLE001 - a schema the code cannot render is "unknown", never a crash of the gate
        return None
    return output_types_of_schema(schema)


def _fields_lock(described: CandidateGraph) -> dict[str, Any]:
    return {
        name: {"required": spec.required, "enforced": spec.enforced, "type": spec.type, "reducer": spec.reducer}
        for name, spec in described.fields.items()
    }


def _shape_lock(described: CandidateGraph) -> dict[str, Any]:
    """The per-graph facts a lock keeps, for a top-level graph or a subgraph."""
    return {
        "state_kind": described.state_kind,
        "fields": _fields_lock(described),
        "managed": sorted(described.managed),
        "validators": described.validators,
        "node_details": {name: spec.to_lock() for name, spec in sorted(described.nodes.items())},
        "interrupt_before": sorted(described.interrupt_before),
        "interrupt_after": sorted(described.interrupt_after),
    }


def _subgraph_locks(described: CandidateGraph, prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, sub in sorted(described.subgraphs.items()):
        out[prefix + name] = _shape_lock(sub)
        out.update(_subgraph_locks(sub, f"{prefix}{name}:"))
    return out


def contract_of(graph_id: str, graph: Any) -> dict[str, Any]:
    """The lockable description of a compiled graph (see `migrations_playbook.graphcode.contract`)."""
    described = describe(graph_id, graph)
    return {
        "graph_id": graph_id,
        "flow_version": _flow_version(graph),
        "nodes": sorted(n for n in described.topology.nodes if not n.startswith("__")),
        "edges": [f"{s} {'-?->' if conditional else '->'} {t}" for s, t, conditional in described.topology.edges],
        "interrupt_nodes": _interrupt_nodes(graph),
        "state_inspectable": described.state_inspectable,
        **_shape_lock(described),
        "context": described.context_fields,
        "subgraphs": _subgraph_locks(described),
    }
