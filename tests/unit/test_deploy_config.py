"""The deployment builds for the standalone Agent Server (deploy/).

`langgraph dockerfile` runs here as a subprocess (it needs no Docker engine);
`langgraph build` and `docker compose up` need one and are not run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO_ROOT

CONFIG = json.loads((REPO_ROOT / "langgraph.json").read_text())
COMPOSE = yaml.safe_load((REPO_ROOT / "deploy" / "docker-compose.yml").read_text())


@pytest.fixture(scope="module")
def dockerfile(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    out = tmp_path_factory.mktemp("dockerfile") / "Dockerfile"
    cli = Path(sys.executable).with_name("langgraph")
    done = subprocess.run(
        [str(cli), "dockerfile", "-c", str(REPO_ROOT / "langgraph.json"), str(out)],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=out.parent,
    )
    assert done.returncode == 0, done.stderr
    return out.read_text().splitlines()


def _env(lines: list[str], name: str) -> str:
    (line,) = [line for line in lines if line.startswith(f"ENV {name}=")]
    return line.split("=", 1)[1].strip("'")


def test_dockerfile_builds_on_the_python_agent_server_image(dockerfile: list[str]) -> None:
    assert dockerfile[0] == f"FROM langchain/langgraph-api:{CONFIG['python_version']}"
    assert f"ADD . /deps/{REPO_ROOT.name}" in dockerfile  # the folder the project was cloned into
    assert any("pip install" in line and "-c /api/constraints.txt -e ." in line for line in dockerfile)


@pytest.mark.parametrize(
    ("variable", "key"),
    [
        pytest.param("LANGSERVE_GRAPHS", "graphs", id="graphs"),
        pytest.param("LANGGRAPH_AUTH", "auth", id="auth"),
        pytest.param("LANGGRAPH_HTTP", "http", id="http-app"),
    ],
)
def test_dockerfile_bakes_in_what_langgraph_json_declares(dockerfile: list[str], variable: str, key: str) -> None:
    assert json.loads(_env(dockerfile, variable)) == CONFIG[key]


def test_auth_is_the_deployment_auth_object() -> None:
    assert CONFIG["auth"] == {"path": "server.auth:auth"}


def test_compose_runs_the_api_on_postgres_and_redis() -> None:
    services = COMPOSE["services"]
    assert set(services) == {"langgraph-api", "langgraph-postgres", "langgraph-redis"}
    api = services["langgraph-api"]
    assert set(api["depends_on"]) == {"langgraph-postgres", "langgraph-redis"}
    env = api["environment"]
    assert env["REDIS_URI"] == "redis://langgraph-redis:6379"
    assert env["DATABASE_URI"].startswith("postgres://postgres:${POSTGRES_PASSWORD}@langgraph-postgres:5432/")
    assert {"LANGSMITH_API_KEY", "LANGGRAPH_CLOUD_LICENSE_KEY"} <= set(env)
    assert api["ports"] == ["${PORT:-8123}:8000"]


@pytest.mark.parametrize("variable", ["AUTH_TOKENS", "CODE_VERSION", "POSTGRES_PASSWORD", "IMAGE"])
def test_compose_refuses_to_start_without_the_production_settings(variable: str) -> None:
    text = (REPO_ROOT / "deploy" / "docker-compose.yml").read_text()
    assert f"${{{variable}:?" in text


def test_every_compose_setting_of_this_deployment_has_an_example() -> None:
    example = (REPO_ROOT / "deploy" / "env.example").read_text()
    named = {line.split("=", 1)[0] for line in example.splitlines() if "=" in line and not line.startswith("#")}
    for variable in ("AUTH_TOKENS", "AUTH_OPERATORS", "CODE_VERSION", "MAX_MESSAGE_CHARS", "LANGSMITH_API_KEY"):
        assert variable in named


def test_checkpointer_ttl_parses_with_the_servers_own_parser() -> None:
    raw = COMPOSE["services"]["langgraph-api"]["environment"]["LANGGRAPH_CHECKPOINTER"]
    code = (
        "import json, sys; from langgraph_api.config._parse import parse_checkpointer; "
        "print(json.dumps(parse_checkpointer(sys.argv[1])))"
    )
    env = {**os.environ, "REDIS_URI": "redis://unused", "DATABASE_URI": "postgres://unused"}
    done = subprocess.run([sys.executable, "-c", code, raw], check=False, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    parsed = json.loads(done.stdout)
    # It replaces langgraph.json's dev-only entry (server/persistence/): PostgreSQL, not a SQLite file.
    assert parsed["backend"] == "default" and not parsed.get("path")
    ttl = parsed["ttl"]
    assert ttl["strategy"] == "delete", "keep_latest would prune the DeltaChannel snapshots"
    assert ttl["default_ttl"] == 30 * 24 * 60
