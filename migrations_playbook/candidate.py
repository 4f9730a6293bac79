"""Candidate side: load the graphs a langgraph.json names, in-process, and describe them.

Works for any LangGraph project: graph specs may be file paths
(``./src/agent.py:graph``, relative to the config file) or module paths
(``pkg.module:graph``), and may name a compiled graph, an uncompiled
`StateGraph`, or a factory (sync or async, with or without a config argument).

The candidate's own folder (and its local ``dependencies``) go first on
``sys.path``, and any already-imported module of the same top-level package is
dropped first, so a modified copy of an installed project is loaded from the
copy, not from site-packages. Loading never talks to the live server.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import importlib
import importlib.util
import inspect
import json
import sys
import types
import typing
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

import typing_extensions

from migrations_playbook.model import CandidateGraph, FieldSpec, Topology

_WRAPPERS = frozenset({"NotRequired", "Required", "ReadOnly"})


class CandidateError(Exception):
    """The candidate config is unreadable or a graph in it cannot be loaded."""


# -- config and import ------------------------------------------------------------


def read_config(config_path: Path) -> dict[str, Any]:
    """Read and minimally validate a langgraph.json."""
    try:
        config = json.loads(config_path.read_text())
    except FileNotFoundError:
        raise CandidateError(f"candidate config not found: {config_path}") from None
    except (OSError, json.JSONDecodeError) as exc:
        raise CandidateError(f"cannot read candidate config {config_path}: {exc}") from None
    if not isinstance(config, dict) or not isinstance(config.get("graphs"), dict):
        raise CandidateError(f"{config_path}: no 'graphs' mapping")
    return config


def graph_specs(config: dict[str, Any]) -> dict[str, str]:
    """graph id -> ``path_or_module:attr`` (dict entries use their ``path``)."""
    specs: dict[str, str] = {}
    for graph_id, spec in config["graphs"].items():
        if isinstance(spec, dict):
            spec = spec.get("path")
        if not isinstance(spec, str) or ":" not in spec:
            raise CandidateError(f"graph {graph_id!r}: spec {spec!r} is not 'path_or_module:attr'")
        specs[graph_id] = spec
    return specs


def _search_roots(config_path: Path, config: dict[str, Any]) -> list[Path]:
    base = config_path.parent.resolve()
    roots = [base]
    for dep in config.get("dependencies", []):
        if isinstance(dep, str) and dep.startswith("."):
            candidate = (base / dep).resolve()
            if candidate.is_dir() and candidate not in roots:
                roots.append(candidate)
                src = candidate / "src"
                if src.is_dir():
                    roots.append(src)
    return roots


def _forget_shadowed(top_level: str, roots: Iterable[Path]) -> None:
    """Drop imported modules of ``top_level`` when a candidate root provides it."""
    provides = any((root / top_level).is_dir() or (root / f"{top_level}.py").is_file() for root in roots)
    if not provides:
        return
    for name in [n for n in sys.modules if n == top_level or n.startswith(top_level + ".")]:
        del sys.modules[name]


def import_object(spec: str, config_path: Path, graph_id: str) -> Any:
    """Import the object a graph spec names."""
    location, _, attr = spec.rpartition(":")
    try:
        if location.endswith(".py") or "/" in location:
            file_path = (config_path.parent / location).resolve()
            if not file_path.is_file():
                raise CandidateError(f"graph {graph_id!r}: file not found: {file_path}")
            module_name = f"_playbook_candidate_{graph_id}_{abs(hash(file_path)):x}"
            module_spec = importlib.util.spec_from_file_location(module_name, file_path)
            if module_spec is None or module_spec.loader is None:
                raise CandidateError(f"graph {graph_id!r}: cannot load {file_path}")
            module = importlib.util.module_from_spec(module_spec)
            sys.modules[module_name] = module
            module_spec.loader.exec_module(module)
        else:
            module = importlib.import_module(location)
    except CandidateError:
        raise
    except BaseException as exc:  # noqa: BLE001 - a candidate may raise anything, SystemExit included
        if isinstance(exc, KeyboardInterrupt):
            raise
        raise CandidateError(
            f"graph {graph_id!r}: importing {location!r} failed: {type(exc).__name__}: {exc}"
        ) from exc
    try:
        return getattr(module, attr)
    except AttributeError:
        raise CandidateError(f"graph {graph_id!r}: {location!r} has no attribute {attr!r}") from None


def materialize(obj: Any, graph_id: str) -> Any:
    """Turn what a spec names into a compiled graph (call factories, compile builders)."""
    from langgraph.graph import StateGraph
    from langgraph.pregel import Pregel

    try:
        if isinstance(obj, Pregel):
            return obj
        if isinstance(obj, StateGraph):
            return obj.compile()
        if callable(obj):
            params = inspect.signature(obj).parameters
            result = obj({"configurable": {}}) if params else obj()
            if inspect.isawaitable(result):
                result = asyncio.run(_await(result))
            if isinstance(result, contextlib.AbstractAsyncContextManager):
                result = asyncio.run(result.__aenter__())
            elif isinstance(result, contextlib.AbstractContextManager):
                result = result.__enter__()
            return materialize(result, graph_id) if not isinstance(result, Pregel) else result
    except CandidateError:
        raise
    except Exception as exc:
        raise CandidateError(f"graph {graph_id!r}: building the graph failed: {type(exc).__name__}: {exc}") from exc
    raise CandidateError(f"graph {graph_id!r}: {type(obj).__name__} is not a graph or a graph factory")


async def _await(awaitable: Any) -> Any:
    return await awaitable


# -- description --------------------------------------------------------------------


def render_type(tp: Any, _seen: frozenset[int] = frozenset()) -> str:
    """A stable, readable rendering of a type annotation (reducers and NotRequired dropped)."""
    from langchain_core.messages import AnyMessage

    if tp is AnyMessage:
        return "AnyMessage"
    origin, args = get_origin(tp), get_args(tp)
    if origin is typing.Annotated:
        return render_type(args[0], _seen)
    if getattr(origin, "_name", None) in _WRAPPERS:
        return render_type(args[0], _seen)
    if origin is Literal:
        return f"Literal[{', '.join(repr(a) for a in args)}]"
    if origin is Union or origin is types.UnionType:
        return " | ".join(render_type(a, _seen) for a in args)
    if origin is not None:
        name = getattr(origin, "__name__", None) or repr(origin).replace("typing.", "")
        return f"{name}[{', '.join(render_type(a, _seen) for a in args)}]" if args else name
    if tp is type(None):
        return "None"
    if isinstance(tp, type):
        if id(tp) in _seen:
            return tp.__name__
        inner = _structured_fields(tp)
        if inner is not None:
            seen = _seen | {id(tp)}
            body = ", ".join(
                f"{key}{'' if req else '?'}: {render_type(val, seen)}" for key, (val, req) in inner.items()
            )
            return f"{tp.__name__}{{{body}}}"
        return tp.__name__
    return repr(tp).replace("typing.", "")


def _structured_fields(tp: type) -> dict[str, tuple[Any, bool]] | None:
    """Fields of a TypedDict, pydantic model or dataclass: name -> (annotation, required)."""
    if typing_extensions.is_typeddict(tp):
        hints = typing.get_type_hints(tp, include_extras=True)
        required = getattr(tp, "__required_keys__", frozenset(hints))
        return {k: (v, k in required) for k, v in hints.items()}
    model_fields = getattr(tp, "model_fields", None)
    if isinstance(model_fields, dict):
        return {k: (f.annotation, f.is_required()) for k, f in model_fields.items()}
    if dataclasses.is_dataclass(tp):
        hints = typing.get_type_hints(tp, include_extras=True)
        return {
            f.name: (
                hints.get(f.name, Any),
                f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING,
            )
            for f in dataclasses.fields(tp)
        }
    return None


def _unwrap(tp: Any) -> Any:
    """Strip Annotated reducer metadata and NotRequired/Required wrappers."""
    while True:
        origin = get_origin(tp)
        if origin is typing.Annotated:
            base, *meta = get_args(tp)
            kept = [m for m in meta if type(m).__module__.startswith("pydantic")]
            tp = typing.Annotated[(base, *kept)] if kept else base
            if kept:
                return tp
        elif getattr(origin, "_name", None) in _WRAPPERS:
            tp = get_args(tp)[0]
        else:
            return tp


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
        fields = _structured_fields(schema) if isinstance(schema, type) else None
        for name, (annotation, _) in (fields or {}).items():
            hints.setdefault(name, annotation)
    state_fields = _structured_fields(builder.state_schema) or {}
    required = frozenset(name for name, (_, req) in state_fields.items() if req)
    return hints, required


def _interrupt_nodes(graph: Any, prefix: str = "") -> list[str]:
    """Nodes configured with interrupt_before/after, or whose source calls interrupt(),
    at any subgraph depth (``review:confirm``)."""
    from langgraph.pregel import Pregel

    found = {
        prefix + n
        for n in [*(getattr(graph, "interrupt_before_nodes", None) or []),
                  *(getattr(graph, "interrupt_after_nodes", None) or [])]
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
        if "interrupt(" in source:
            found.add(prefix + name)
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


def describe(graph_id: str, graph: Any) -> CandidateGraph:
    """Describe a compiled graph: topology, fields, validators and routers."""
    from langgraph.graph import StateGraph
    from pydantic import TypeAdapter, ValidationError

    topology = Topology.from_drawings(graph.get_graph().to_json(), graph.get_graph(xray=True).to_json())
    builder = getattr(graph, "builder", None)
    if not isinstance(builder, StateGraph):
        return CandidateGraph(graph_id=graph_id, topology=topology, fields={}, state_inspectable=False)

    hints, required = _state_hints(builder)
    channels = getattr(graph, "channels", {})
    fields = {
        name: FieldSpec(
            name=name,
            required=name in required,
            type=render_type(annotation),
            reducer=reducer_identity(channels[name]) if name in channels else "LastValue",
        )
        for name, annotation in sorted(hints.items())
    }
    adapters: dict[str, TypeAdapter | None] = {}

    def adapter(name: str) -> TypeAdapter | None:
        if name not in adapters:
            try:
                adapters[name] = TypeAdapter(_unwrap(hints[name]))
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
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first.get("loc", ())) or "value"
            return f"{where}: {first.get('msg')} (got {_short(first.get('input'))})"
        return None

    def coerce(values: dict[str, Any]) -> dict[str, Any]:
        out = dict(values)
        for name, value in values.items():
            checker = adapter(name) if name in hints else None
            if checker is not None:
                with contextlib.suppress(Exception):
                    out[name] = checker.validate_python(value)
        return out

    routers = {
        source: [_router(branch) for branch in branches.values()]
        for source, branches in builder.branches.items()
    }
    return CandidateGraph(
        graph_id=graph_id,
        topology=topology,
        fields=fields,
        state_inspectable=True,
        validate=validate,
        coerce=coerce,
        routers=routers,
    )


def _short(value: Any, limit: int = 60) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def contract_of(graph_id: str, graph: Any) -> dict[str, Any]:
    """The lockable description of a compiled graph (see `migrations_playbook.contract`)."""
    described = describe(graph_id, graph)
    return {
        "graph_id": graph_id,
        "flow_version": _flow_version(graph),
        "nodes": sorted(n for n in described.topology.nodes if not n.startswith("__")),
        "edges": [f"{s} {'-?->' if conditional else '->'} {t}" for s, t, conditional in described.topology.edges],
        "interrupt_nodes": _interrupt_nodes(graph),
        "state_inspectable": described.state_inspectable,
        "fields": {
            name: {"required": spec.required, "type": spec.type, "reducer": spec.reducer}
            for name, spec in described.fields.items()
        },
    }


# -- entry points ---------------------------------------------------------------------


def load_compiled(config_path: Path, graph_ids: Iterable[str] | None = None) -> dict[str, Any]:
    """graph id -> compiled graph, for the graphs of a langgraph.json (all, or ``graph_ids``)."""
    config_path = config_path.resolve()
    config = read_config(config_path)
    specs = graph_specs(config)
    wanted = list(graph_ids) if graph_ids else list(specs)
    roots = _search_roots(config_path, config)
    for root in reversed(roots):
        if str(root) in sys.path:
            sys.path.remove(str(root))
        sys.path.insert(0, str(root))
    importlib.invalidate_caches()
    for top_level in {specs[g].rpartition(":")[0].split(".")[0] for g in wanted if g in specs}:
        if not top_level.endswith(".py") and "/" not in top_level:
            _forget_shadowed(top_level, roots)
    compiled: dict[str, Any] = {}
    for graph_id in wanted:
        if graph_id not in specs:
            continue
        obj = import_object(specs[graph_id], config_path, graph_id)
        compiled[graph_id] = materialize(obj, graph_id)
    return compiled


def load_candidate(config_path: Path, graph_ids: Iterable[str] | None = None) -> tuple[set[str], dict[str, CandidateGraph]]:
    """Registered graph ids, and the described candidate graphs (all, or ``graph_ids``)."""
    config = read_config(config_path.resolve())
    registered = set(graph_specs(config))
    compiled = load_compiled(config_path, graph_ids)
    return registered, {gid: describe(gid, graph) for gid, graph in compiled.items()}
