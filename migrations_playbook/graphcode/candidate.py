"""Candidate side: load the graphs a langgraph.json names, in-process, and describe them.

Works for any LangGraph project: graph specs may be file paths
(``./src/agent.py:graph``, relative to the config file) or module paths
(``pkg.module:graph``), and may name a compiled graph, an uncompiled
`StateGraph`, or a factory (sync or async, with or without a config argument).

The candidate is loaded wholly from its own folder, whatever the layout (loose
files, a package beside langgraph.json, ``src/<package>/``, local ``dependencies``):
those folders go first on ``sys.path``, a file-path spec inside a package is
imported as that package's module, and already-imported modules of the packages
the candidate provides are dropped when they came from elsewhere (an installed or
editable copy, an earlier candidate), so a modified copy of an installed project
is loaded from the copy. Loading never talks to the live server.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import importlib.util
import inspect
import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from migrations_playbook.model import CandidateGraph

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
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CandidateError(f"cannot read candidate config {config_path}: {exc}") from None
    if not isinstance(config, dict) or not isinstance(config.get("graphs"), dict):
        raise CandidateError(f"{config_path}: no 'graphs' mapping")
    dependencies = config.get("dependencies", [])
    if not isinstance(dependencies, list) or not all(isinstance(d, str) for d in dependencies):
        raise CandidateError(f"{config_path}: 'dependencies' must be a list of strings, got {dependencies!r}")
    return config


def graph_specs(config: dict[str, Any]) -> dict[str, str]:
    """graph id -> ``path_or_module:attr`` (dict entries use their ``path``)."""
    specs: dict[str, str] = {}
    for graph_id, spec in config["graphs"].items():
        if isinstance(spec, dict):
            spec = spec.get("path")
        if not isinstance(spec, str) or ":" not in spec or not spec.rpartition(":")[0] or not spec.rpartition(":")[2]:
            raise CandidateError(f"graph {graph_id!r}: spec {spec!r} is not 'path_or_module:attr'")
        specs[graph_id] = spec
    return specs


def _is_file_spec(location: str) -> bool:
    return location.endswith(".py") or "/" in location


def _package_module(file_path: Path, base: Path) -> tuple[Path, str] | None:
    """(import root, dotted module name) of a file inside a regular package (folders with
    ``__init__.py``, the config folder itself never counted); None for a loose file."""
    if not file_path.stem.isidentifier():
        return None
    parts = [] if file_path.name == "__init__.py" else [file_path.stem]
    folder = file_path.parent
    while folder != base and folder.name.isidentifier() and (folder / "__init__.py").is_file():
        parts.insert(0, folder.name)
        folder = folder.parent
    if folder == file_path.parent:  # the file's own folder is no package
        return None
    return folder, ".".join(parts)


def _search_roots(config_path: Path, config: dict[str, Any]) -> list[Path]:
    """Folders the candidate imports from, in ``sys.path`` order: the config folder, each local
    dependency and its ``src/``, the config folder's ``src/``, and the folder above the package of
    each file-path spec (so ``./src/pkg/graph.py`` makes ``pkg`` importable from the copy)."""
    base = config_path.parent.resolve()
    roots: list[Path] = []

    def add(folder: Path) -> None:
        if folder.is_dir() and folder not in roots:
            roots.append(folder)

    add(base)
    for dep in config.get("dependencies", []):
        if dep.startswith(".") or Path(dep).is_absolute():
            folder = (base / dep).resolve()
            add(folder)
            add(folder / "src")
    add(base / "src")
    for spec in graph_specs(config).values():
        location = spec.rpartition(":")[0]
        if _is_file_spec(location):
            found = _package_module((base / location).resolve(), base)
            if found is not None:
                add(found[0])
    return roots


def _provided(roots: Iterable[Path]) -> dict[str, tuple[list[Path], bool]]:
    """Top-level name -> (where the candidate's copy lives, is it a module or regular package).

    As the import system does: the first root with a regular package or module wins; folders
    without ``__init__.py`` are namespace portions, used only when no root has the real thing."""
    found: dict[str, tuple[list[Path], bool]] = {}
    for root in roots:
        try:
            entries = sorted(root.iterdir())
        except OSError:
            continue
        for entry in entries:
            name = entry.stem if entry.suffix == ".py" else entry.name
            if not name.isidentifier() or name.startswith("__"):
                continue
            regular = (entry.suffix == ".py" and entry.is_file()) or (entry.is_dir() and (entry / "__init__.py").is_file())
            if regular:
                if not found.get(name, ([], False))[1]:
                    found[name] = ([entry.resolve()], True)
            elif entry.is_dir() and not found.get(name, ([], False))[1]:
                found.setdefault(name, ([], False))[0].append(entry.resolve())
    return found


def _running_packages() -> set[str]:
    """Top-level packages of the code on the call stack (the playbook, a test, a benchmark):
    never unloaded, or the caller would run on half-replaced modules."""
    names: set[str] = set()
    frame = inspect.currentframe()
    while frame is not None:
        names.add(str(frame.f_globals.get("__name__", "")).partition(".")[0])
        frame = frame.f_back
    return names


def _loaded_from(module: Any, locations: list[Path]) -> bool:
    """Whether an imported module's file (or a namespace package's folders) lies in ``locations``;
    True for a module with no location at all (made in memory by its package)."""
    file = getattr(module, "__file__", None)
    if not file:
        # A namespace package holds no code: its __path__ lists every portion on sys.path (an
        # editable install of the original project is one, and setuptools' path hook adds a
        # placeholder entry). It is the candidate's when the candidate's folder is one of them;
        # each of its modules is judged by its own file.
        portions = [Path(p).resolve() for p in getattr(module, "__path__", None) or []]
        return not portions or any(p == loc or loc in p.parents for p in portions for loc in locations)
    resolved = Path(file).resolve()
    return any(resolved == loc or loc in resolved.parents for loc in locations)


def _foreign(roots: Iterable[Path]) -> dict[str, Any]:
    """Imported modules (name -> module) of top-level packages a candidate root provides, that
    were loaded from somewhere else (an installed or editable copy, another candidate copy)."""
    provided = _provided(roots)
    protected = set(sys.stdlib_module_names) | set(sys.builtin_module_names) | _running_packages()
    foreign: dict[str, Any] = {}
    for name, module in list(sys.modules.items()):
        top = name.partition(".")[0]
        if top not in provided or top in protected:
            continue
        locations, regular = provided[top]
        if not regular and getattr(sys.modules.get(top), "__file__", None):
            continue  # a regular package elsewhere beats the candidate's namespace folder
        if not _loaded_from(module, locations):
            foreign[name] = module
    return foreign


def _forget_shadowed(roots: Iterable[Path]) -> None:
    """Drop every imported module of each top-level package a candidate root provides, when any
    of them was loaded from elsewhere, so the candidate's imports resolve to the candidate's copy."""
    stale = {name.partition(".")[0] for name in _foreign(roots)}
    for name in [n for n in sys.modules if n.partition(".")[0] in stale]:
        del sys.modules[name]


def import_object(spec: str, config_path: Path, graph_id: str) -> Any:
    """Import the object a graph spec names.

    A file path inside a package is imported as that package's module (so its relative imports
    and ``from pkg.x import`` both come from the same copy); a loose file by its location."""
    location, _, attr = spec.rpartition(":")
    base = config_path.parent.resolve()
    try:
        if _is_file_spec(location):
            file_path = (base / location).resolve()
            if not file_path.is_file():
                raise CandidateError(f"graph {graph_id!r}: file not found: {file_path}")
            found = _package_module(file_path, base)
            if found is not None:
                module = importlib.import_module(found[1])
                loaded = Path(getattr(module, "__file__", None) or "").resolve()
                if loaded != file_path:
                    raise CandidateError(
                        f"graph {graph_id!r}: module {found[1]} was imported from {loaded}, not from the candidate's {file_path}"
                    )
            else:
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
    except BaseException as exc:  # a candidate may raise anything, SystemExit included
        if isinstance(exc, KeyboardInterrupt):
            raise
        raise CandidateError(f"graph {graph_id!r}: importing {location!r} failed: {type(exc).__name__}: {exc}") from exc
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


# -- description: migrations_playbook.graphcode.describe (re-exported for callers of this module) --

from migrations_playbook.graphcode.describe import contract_of as contract_of  # noqa: E402 - re-export
from migrations_playbook.graphcode.describe import describe  # noqa: E402 - with the re-exports of its module
from migrations_playbook.graphcode.typing_facts import render_type as render_type  # noqa: E402 - re-export

# -- entry points ---------------------------------------------------------------------


def load_compiled(config_path: Path, graph_ids: Iterable[str] | None = None) -> dict[str, Any]:
    """graph id -> compiled graph, for the graphs of a langgraph.json (all, or ``graph_ids``).

    The graphs' code comes wholly from the candidate folder: its roots go first on
    ``sys.path``, modules of the same packages loaded from elsewhere are dropped first, and a
    module of those packages that still came from elsewhere is an error, not a silent pass."""
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
    _forget_shadowed(roots)
    compiled: dict[str, Any] = {}
    for graph_id in wanted:
        if graph_id not in specs:
            continue
        obj = import_object(specs[graph_id], config_path, graph_id)
        compiled[graph_id] = materialize(obj, graph_id)
    foreign = _foreign(roots)
    if foreign:
        name, module = sorted(foreign.items())[0]
        where = getattr(module, "__file__", None) or list(getattr(module, "__path__", None) or []) or "nowhere"
        raise CandidateError(
            f"the candidate's code imported {name} from {where}, not from the candidate folder "
            f"({', '.join(str(r) for r in roots)}); something outside sys.path (an import hook?) shadows it"
        )
    return compiled


def load_candidate_graphs(
    config_path: Path, graph_ids: Iterable[str] | None = None
) -> tuple[set[str], dict[str, Any], dict[str, CandidateGraph]]:
    """Registered graph ids, the compiled candidate graphs (all, or ``graph_ids``) and their descriptions."""
    config = read_config(config_path.resolve())
    registered = set(graph_specs(config))
    compiled = load_compiled(config_path, graph_ids)
    return registered, compiled, {gid: describe(gid, graph) for gid, graph in compiled.items()}


def load_candidate(config_path: Path, graph_ids: Iterable[str] | None = None) -> tuple[set[str], dict[str, CandidateGraph]]:
    """Registered graph ids, and the described candidate graphs (all, or ``graph_ids``)."""
    registered, _, candidates = load_candidate_graphs(config_path, graph_ids)
    return registered, candidates
