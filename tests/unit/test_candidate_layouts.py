"""The candidate is loaded wholly from the candidate folder, whatever the project layout.

Each fixture project (tests/fixtures/layout_projects/) keeps its state in a module
other than the entry file. A test copies the project, changes that module in the
copy, and checks that the loaded graph follows the copy, also when another copy of
the same package is importable first: on ``sys.path`` (what ``PYTHONPATH`` or an
editable install's .pth does) or already imported (in ``sys.modules``).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from migrations_playbook.graphcode.candidate import CandidateError, contract_of, load_compiled
from migrations_playbook.graphcode.contract import contract_hash

LAYOUTS = Path(__file__).resolve().parents[1] / "fixtures" / "layout_projects"
PACKAGES = ("greeter_state", "shelf_agent", "trip_planner", "recipes_lib", "tour_agent")
"""Top-level names the fixtures provide (unloaded around each test)."""


@dataclass(frozen=True)
class Layout:
    folder: str
    graph_id: str
    state_file: str
    """The module the test changes (never the entry file)."""
    old: str
    new: str
    import_root: str
    """Folder (in the project) that makes the state module importable, as an install would."""
    state_module: str


_ADDED = '    budget: NotRequired[int]\n    """Added in the copy."""\n'

LAYOUT_CASES = {
    "loose-modules": Layout(
        "loose",
        "greeter",
        "greeter_state.py",
        "    greeting: NotRequired[str]\n",
        "    greeting: NotRequired[str]\n" + _ADDED,
        ".",
        "greeter_state",
    ),
    "flat-package-file-spec": Layout(
        "flat_package",
        "shelf",
        "shelf_agent/state.py",
        "    aisle: NotRequired[Aisle]\n",
        "    aisle: NotRequired[Aisle]\n" + _ADDED,
        ".",
        "shelf_agent.state",
    ),
    "flat-package-module-spec": Layout(
        "flat_package",
        "shelf_by_module",
        "shelf_agent/state.py",
        "    aisle: NotRequired[Aisle]\n",
        "    aisle: NotRequired[Aisle]\n" + _ADDED,
        ".",
        "shelf_agent.state",
    ),
    "src-layout": Layout(
        "src_layout",
        "planner",
        "src/trip_planner/state.py",
        "    route: NotRequired[str]\n",
        "    route: NotRequired[str]\n" + _ADDED,
        "src",
        "trip_planner.state",
    ),
    "src-namespace-package": Layout(
        "src_namespace",
        "tour",
        "src/tour_agent/parts/state.py",
        "    stops: NotRequired[list[str]]\n",
        "    stops: NotRequired[list[str]]\n" + _ADDED,
        "src",
        "tour_agent.parts.state",
    ),
    "dependency-path": Layout(
        "dependency_path",
        "cook",
        "libs/recipes/recipes_lib/state.py",
        "    steps: NotRequired[list[str]]\n",
        "    steps: NotRequired[list[str]]\n" + _ADDED,
        "libs/recipes",
        "recipes_lib.state",
    ),
}


def _unload_fixture_packages() -> None:
    for name in [n for n in sys.modules if n.partition(".")[0] in PACKAGES or n.startswith("_playbook_candidate_")]:
        del sys.modules[name]


@pytest.fixture(autouse=True)
def isolated_imports() -> Iterator[None]:
    """Each test starts with no fixture package imported and leaves sys.path as it found it."""
    saved_path, saved_meta_path = list(sys.path), list(sys.meta_path)
    _unload_fixture_packages()
    yield
    sys.path[:], sys.meta_path[:] = saved_path, saved_meta_path
    _unload_fixture_packages()
    importlib.invalidate_caches()


def _copy(layout: Layout, dest: Path) -> Path:
    shutil.copytree(LAYOUTS / layout.folder, dest, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def _changed_copy(layout: Layout, dest: Path) -> Path:
    project = _copy(layout, dest)
    path = project / layout.state_file
    text = path.read_text()
    assert layout.old in text, f"fixture drift: {layout.old!r} not in {layout.state_file}"
    path.write_text(text.replace(layout.old, layout.new))
    return project


def _state_fields(project: Path, graph_id: str) -> set[str]:
    graph = load_compiled(project / "langgraph.json", [graph_id])[graph_id]
    return set(typing.get_type_hints(graph.builder.state_schema))


def _hash(project: Path, graph_id: str) -> str:
    graph = load_compiled(project / "langgraph.json", [graph_id])[graph_id]
    return contract_hash(contract_of(graph_id, graph))


def _make_original_importable(layout: Layout, original: Path, how: str) -> None:
    sys.path.insert(0, str(original / layout.import_root))
    importlib.invalidate_caches()
    if how == "already-imported":
        module = importlib.import_module(layout.state_module)
        assert Path(module.__file__).is_relative_to(original)
        assert "budget" not in typing.get_type_hints(module.State)


@pytest.mark.parametrize("layout", list(LAYOUT_CASES.values()), ids=list(LAYOUT_CASES))
@pytest.mark.parametrize("original", ["not-importable", "on-sys-path", "already-imported"])
def test_change_outside_the_entry_file_is_loaded_from_the_copy(tmp_path: Path, layout: Layout, original: str) -> None:
    if original != "not-importable":
        _make_original_importable(layout, _copy(layout, tmp_path / "original"), original)
    candidate = _changed_copy(layout, tmp_path / "candidate")

    fields = _state_fields(candidate, layout.graph_id)

    assert "budget" in fields
    state_module = sys.modules[layout.state_module]
    assert Path(state_module.__file__).is_relative_to(candidate)


@pytest.mark.parametrize("layout", list(LAYOUT_CASES.values()), ids=list(LAYOUT_CASES))
def test_contract_hash_of_a_changed_copy_differs_from_the_installed_original(tmp_path: Path, layout: Layout) -> None:
    original = _copy(layout, tmp_path / "original")
    before = _hash(original, layout.graph_id)
    _make_original_importable(layout, original, "already-imported")

    after = _hash(_changed_copy(layout, tmp_path / "candidate"), layout.graph_id)

    assert after != before
    assert _hash(original, layout.graph_id) == before, "loading the original again gives its own hash back"


def test_relative_and_absolute_imports_inside_a_package_come_from_the_same_copy(tmp_path: Path) -> None:
    layout = LAYOUT_CASES["flat-package-file-spec"]
    _make_original_importable(layout, _copy(layout, tmp_path / "original"), "already-imported")
    candidate = _changed_copy(layout, tmp_path / "candidate")
    labels = candidate / "shelf_agent" / "labels.py"
    labels.write_text(labels.read_text().replace('"frozen"]', '"frozen", "bakery"]'))

    graph = load_compiled(candidate / "langgraph.json", ["shelf"])["shelf"]

    hints = typing.get_type_hints(graph.builder.state_schema)
    assert "budget" in hints  # .state, a relative import of the entry file
    assert "bakery" in typing.get_args(hints["aisle"])  # shelf_agent.labels, absolute
    entry = sys.modules["shelf_agent.graph"]
    assert Path(entry.__file__) == (candidate / "shelf_agent" / "graph.py").resolve()


@pytest.mark.parametrize(
    "layout", [LAYOUT_CASES["src-layout"], LAYOUT_CASES["dependency-path"]], ids=["src-layout", "dependency-path"]
)
def test_contract_write_follows_the_copy_when_the_original_is_on_pythonpath(tmp_path: Path, layout: Layout) -> None:
    """The reported symptom: with the original importable (PYTHONPATH, as an editable install),
    `contract --write` on a changed copy wrote the original's hash."""
    original = _copy(layout, tmp_path / "original")
    candidate = _changed_copy(layout, tmp_path / "candidate")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(original / layout.import_root), os.environ.get("PYTHONPATH", "")])}

    written = subprocess.run(
        [
            sys.executable,
            "-m",
            "migrations_playbook",
            "contract",
            "--config",
            str(candidate / "langgraph.json"),
            "--write",
            "--contracts-dir",
            str(tmp_path / "locks"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )

    assert written.returncode == 0, written.stderr
    lock = json.loads((tmp_path / "locks" / f"{layout.graph_id}.json").read_text())
    assert "budget" in lock["fields"]


class _Hijacker(importlib.abc.MetaPathFinder):
    """An import hook ahead of sys.path that serves one module from another copy."""

    def __init__(self, name: str, origin: Path) -> None:
        self.name, self.origin = name, origin

    def find_spec(self, fullname: str, path: object, target: object = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.name:
            return None
        return importlib.util.spec_from_file_location(fullname, self.origin)


def test_a_module_served_from_elsewhere_by_an_import_hook_is_an_error_not_a_silent_pass(tmp_path: Path) -> None:
    layout = LAYOUT_CASES["src-layout"]
    original = _copy(layout, tmp_path / "original")
    candidate = _changed_copy(layout, tmp_path / "candidate")
    sys.meta_path.insert(0, _Hijacker("trip_planner.state", original / layout.state_file))

    with pytest.raises(CandidateError, match=r"imported trip_planner\.state from .*original.*not from the candidate folder"):
        load_compiled(candidate / "langgraph.json")


class _EditableNamespaceHook:
    """What setuptools' editable install (its `__editable___*_finder` module) adds for a namespace
    package: a placeholder sys.path entry whose path hook answers with the original's folders."""

    PLACEHOLDER = "__editable__.tour_agent-0.1.finder.__path_hook__"

    def __init__(self, name: str, folder: Path) -> None:
        self.name, self.folder = name, folder

    def __call__(self, entry: str) -> _EditableNamespaceHook:
        if entry != self.PLACEHOLDER:
            raise ImportError(entry)
        return self

    def find_spec(self, fullname: str, target: object = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.name:
            return None
        spec = importlib.machinery.ModuleSpec(fullname, None, is_package=True)
        spec.submodule_search_locations = [str(self.folder), self.PLACEHOLDER]
        return spec


@pytest.mark.parametrize("original", ["on-sys-path", "editable-path-hook"])
def test_a_namespace_package_spanning_the_copy_and_an_editable_original_loads_from_the_copy(
    tmp_path: Path, original: str
) -> None:
    """Issue 25: a src/ project whose package is a namespace (no __init__.py), installed editable,
    was refused (exit 2) when a copy of it was the candidate: the namespace's __path__ lists the
    copy's folder and the original's (and setuptools' placeholder), although every module came from
    the copy."""
    layout = LAYOUT_CASES["src-namespace-package"]
    source = _copy(layout, tmp_path / "original")
    if original == "on-sys-path":
        sys.path.append(str(source / "src"))  # a static .pth of `pip install -e .`
    else:
        hook = _EditableNamespaceHook("tour_agent", source / "src" / "tour_agent")
        sys.path_hooks.insert(0, hook)
        sys.path.append(hook.PLACEHOLDER)
    importlib.invalidate_caches()
    candidate = _changed_copy(layout, tmp_path / "candidate")
    try:
        fields = _state_fields(candidate, layout.graph_id)
    finally:
        if original != "on-sys-path":
            sys.path_hooks.remove(hook)
            sys.path_importer_cache.pop(hook.PLACEHOLDER, None)

    assert "budget" in fields
    namespace = sys.modules["tour_agent"]
    assert any(p.startswith(str(source)) for p in namespace.__path__)  # the original is a portion: the case at hand
    assert Path(sys.modules[layout.state_module].__file__).is_relative_to(candidate)


def test_an_installed_package_is_kept_when_the_candidate_only_has_a_folder_of_that_name(tmp_path: Path) -> None:
    """A folder without __init__.py (notes, assets) named like an installed package does not
    shadow it, so the installed package is not unloaded."""
    layout = LAYOUT_CASES["src-layout"]
    candidate = _changed_copy(layout, tmp_path / "candidate")
    (candidate / "pydantic").mkdir()
    (candidate / "pydantic" / "notes.md").write_text("why we pin pydantic\n")
    import pydantic

    assert "budget" in _state_fields(candidate, layout.graph_id)
    assert sys.modules["pydantic"] is pydantic


def test_loading_the_same_copy_twice_reuses_its_modules(tmp_path: Path) -> None:
    layout = LAYOUT_CASES["src-layout"]
    candidate = _changed_copy(layout, tmp_path / "candidate")
    first = load_compiled(candidate / "langgraph.json")["planner"]
    state_module = sys.modules["trip_planner.state"]

    second = load_compiled(candidate / "langgraph.json")["planner"]

    assert sys.modules["trip_planner.state"] is state_module
    assert second.builder.state_schema is first.builder.state_schema


@pytest.mark.parametrize(
    ("config", "message"),
    [
        pytest.param(
            {"graphs": {"g": "./g.py:graph"}, "dependencies": "."}, "'dependencies' must be a list", id="dependencies-not-a-list"
        ),
        pytest.param({"graphs": {"g": "./g.py:"}}, "is not 'path_or_module:attr'", id="spec-without-attribute"),
        pytest.param({"graphs": {"g": ":graph"}}, "is not 'path_or_module:attr'", id="spec-without-location"),
    ],
)
def test_a_malformed_config_is_a_candidate_error(tmp_path: Path, config: dict, message: str) -> None:
    (tmp_path / "langgraph.json").write_text(json.dumps(config))
    with pytest.raises(CandidateError, match=message):
        load_compiled(tmp_path / "langgraph.json")
