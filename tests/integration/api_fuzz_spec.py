"""The operations the API fuzz sends (`tests/integration/api_fuzz.py`): the server's routes, each
with the definition that describes it.

The served ``/openapi.json`` describes the API's own routes with empty operations (a custom app's
spec wins the merge in langgraph-api); those take their definitions from the spec langgraph-api
ships, which is what the routes implement, and the custom app's route takes `VISIBLE_BODY`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import langgraph_api  # type: ignore[import-untyped]
import schemathesis

from tests.integration import hypothesis_setup  # noqa: F401  (before hypothesis draws anything)

BUNDLED_SPEC = Path(langgraph_api.__file__).resolve().parent.parent / "openapi.json"

HTTP_METHODS = ("get", "post", "put", "patch", "delete")

VISIBLE_BODY = {
    "type": "object",
    "properties": {
        "message": {"type": "string"},
        "thread_id": {"type": "string"},
        "context": {"type": "object"},
    },
}
"""`POST /visible/{graph_id}/stream`'s body (server/webapp.py), which the served spec leaves out."""


def served_spec(url: str, headers: dict[str, str]) -> dict[str, Any]:
    response = httpx.get(f"{url}/openapi.json", headers=headers, timeout=30)
    response.raise_for_status()
    spec: dict[str, Any] = response.json()
    return spec


def empty_operations(served: dict[str, Any]) -> list[str]:
    """``METHOD path`` of every served operation that describes nothing."""
    return [
        f"{method.upper()} {path}"
        for path, ops in served["paths"].items()
        for method, op in ops.items()
        if method in HTTP_METHODS and not op
    ]


def fuzz_spec(served: dict[str, Any]) -> dict[str, Any]:
    """The served routes and methods, each with the definition that describes it: the served
    one when it has one, else the one langgraph-api ships, else path parameters as strings."""
    bundled = json.loads(BUNDLED_SPEC.read_text())
    spec = {key: value for key, value in bundled.items() if key != "paths"}
    spec["paths"] = {}
    for path, ops in served["paths"].items():
        for method, op in ops.items():
            if method not in HTTP_METHODS:
                continue
            definition = op or bundled["paths"].get(path, {}).get(method) or {}
            definition = dict(definition)
            definition.setdefault("responses", {"default": {"description": "any"}})
            names = [p.get("name") for p in definition.get("parameters", []) if isinstance(p, dict)]
            for name in _template_names(path):
                if name not in names:
                    definition["parameters"] = [
                        *definition.get("parameters", []),
                        {"name": name, "in": "path", "required": True, "schema": {"type": "string"}},
                    ]
            if path.startswith("/visible/") and "requestBody" not in definition:
                definition["requestBody"] = {"content": {"application/json": {"schema": VISIBLE_BODY}}}
            spec["paths"].setdefault(path, {})[method] = definition
    return spec


def _template_names(path: str) -> list[str]:
    return [part[1:-1] for part in path.split("/") if part.startswith("{") and part.endswith("}")]


def load_operations(served: dict[str, Any]) -> list[Any]:
    schema = schemathesis.openapi.from_dict(fuzz_spec(served), config=schemathesis.Config())
    return [result.ok() for result in schema.get_all_operations() if hasattr(result, "ok")]


def negatable(operation: Any) -> bool:
    """Whether schemathesis can draw invalid data for it (a body or a non-path parameter)."""
    definition = operation.definition.raw
    params = [p for p in definition.get("parameters", []) if isinstance(p, dict) and p.get("in") != "path"]
    return bool(definition.get("requestBody")) or bool(params) or "$ref" in json.dumps(definition.get("parameters", []))
