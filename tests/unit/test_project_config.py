"""Every graph in langgraph.json imports, compiles and is documented; the config validates."""

from __future__ import annotations

import importlib
import itertools
import json
import subprocess
import sys
from pathlib import Path
from typing import get_type_hints

import pytest
from langgraph.graph.state import CompiledStateGraph

from tests.conftest import REPO_ROOT

CONFIG = json.loads((REPO_ROOT / "langgraph.json").read_text())
GRAPH_IDS = sorted(CONFIG["graphs"])


def _load(spec: str):
    module_name, attr = spec.split(":")
    return getattr(importlib.import_module(module_name), attr)


@pytest.mark.parametrize("graph_id", GRAPH_IDS)
def test_registered_graph_imports_and_compiles(graph_id: str) -> None:
    graph = _load(CONFIG["graphs"][graph_id])
    assert isinstance(graph, CompiledStateGraph)
    assert graph.get_graph().nodes


@pytest.mark.parametrize("graph_id", GRAPH_IDS)
def test_every_state_field_is_documented(graph_id: str) -> None:
    """Attribute docstrings on every state field (who writes it, since which flow_version)."""
    import ast
    import inspect

    graph = _load(CONFIG["graphs"][graph_id])
    schema = graph.builder.state_schema
    source = inspect.getsource(schema)
    body = ast.parse(source).body[0].body
    documented = set()
    for node, after in itertools.pairwise(body):
        if isinstance(node, ast.AnnAssign) and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant):
            documented.add(node.target.id)
    missing = set(get_type_hints(schema)) - documented
    assert not missing, f"{graph_id}: undocumented state fields {sorted(missing)}"


@pytest.mark.parametrize("graph_id", GRAPH_IDS)
def test_graph_declares_flow_version_as_not_required(graph_id: str) -> None:
    graph = _load(CONFIG["graphs"][graph_id])
    schema = graph.builder.state_schema
    assert "flow_version" in schema.__annotations__
    assert "flow_version" in schema.__optional_keys__


def test_langgraph_validate_accepts_the_config() -> None:
    cli = Path(sys.executable).with_name("langgraph")
    result = subprocess.run(
        [str(cli), "validate", "--config", str(REPO_ROOT / "langgraph.json")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "is valid" in result.stdout


def test_the_image_installs_the_playbook_distribution_before_the_deployment(tmp_path: Path) -> None:
    """`langgraph build` (LangSmith Deployments, the standalone server) installs the gate's own
    distribution from migrations_playbook/ (the deployment's package no longer ships it), and
    langgraph.json does not list that folder as a dependency (`langgraph dev` would put the
    folder itself on sys.path, where its http.py shadows the standard library's)."""
    assert CONFIG["dependencies"] == ["."]
    cli = Path(sys.executable).with_name("langgraph")
    result = subprocess.run(
        [str(cli), "dockerfile", "--config", str(REPO_ROOT / "langgraph.json"), str(tmp_path / "Dockerfile")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO_ROOT,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    dockerfile = (tmp_path / "Dockerfile").read_text()
    install = dockerfile.index("pip install --no-cache-dir -c /api/constraints.txt /opt/langgraph-playbook")
    assert dockerfile.index("ADD ./migrations_playbook /opt/langgraph-playbook") < install < dockerfile.index("/deps/")
    assert (REPO_ROOT / "migrations_playbook" / "pyproject.toml").exists()


def test_no_private_langgraph_imports() -> None:
    offenders = [
        str(path.relative_to(REPO_ROOT))
        for folder in ("graphs", "migrations_playbook", "bench")
        for path in (REPO_ROOT / folder).rglob("*.py")
        if "langgraph._internal" in path.read_text()
    ]
    assert offenders == []


def test_importing_graphs_builds_no_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """No model or client at import time: importing with a broken model spec must not fail."""
    monkeypatch.setenv("MODEL", "openai:gpt-4o-mini")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    code = "; ".join(f"import {spec.split(':')[0]}" for spec in CONFIG["graphs"].values())
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
