"""A ToolNode's tools as a pending tool call meets them: names, and arguments validated as LangChain does.

`tool_node` reads a compiled node's runnable; nothing here runs a tool. The rule that uses it is
`migrations_playbook.rules.tool_call_invalid`.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

from migrations_playbook.model import ToolSpec


def _short(value: Any, limit: int = 60) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _schema_fields(schema: Any) -> dict[str, bool]:
    """A pydantic (v2 or v1) model's fields -> required; empty for anything else."""
    fields = getattr(schema, "model_fields", None)
    if isinstance(fields, dict):
        return {name: bool(f.is_required()) for name, f in fields.items()}
    fields = getattr(schema, "__fields__", None)
    if isinstance(fields, dict):
        return {name: bool(getattr(f, "required", False)) for name, f in fields.items()}
    return {}


def _tool_spec(name: str, tool: Any) -> ToolSpec:
    """What a tool call must carry for ``tool``: its ``args_schema`` validated as the tool's own invoke
    validates it (``model_validate``, so pydantic's lax mode and the schema's ``extra`` setting apply),
    errors about injected arguments (state, store, tool call id, runtime: ToolNode fills them in
    before the call) left out."""
    schema = getattr(tool, "args_schema", None)
    if not isinstance(schema, type):
        return ToolSpec(name=name)  # a JSON-schema dict (LangChain does not validate it) or none
    try:
        visible = set(_schema_fields(tool.tool_call_schema))
    except Exception:  # noqa: BLE001 - a schema LangChain cannot subset: judge every field
        visible = set(_schema_fields(schema))
    fields = _schema_fields(schema)
    injected = set(fields) - visible
    parse = getattr(schema, "model_validate", None) or getattr(schema, "parse_obj", None)

    def validate(args: Any) -> str | None:
        if parse is None:
            return None
        if not isinstance(args, dict):
            return f"arguments: not an object (got {_short(args)})"
        try:
            parse(args)
        except Exception as exc:  # noqa: BLE001 - pydantic v1/v2 ValidationError, or a validator's error
            errors = getattr(exc, "errors", None)
            if not callable(errors):
                return f"{type(exc).__name__}: {exc}"
            with contextlib.suppress(Exception):
                kept = [e for e in errors() if not (e.get("loc") and str(e["loc"][0]) in injected)]
                if not kept:
                    return None
                first = kept[0]
                where = ".".join(str(p) for p in first.get("loc", ())) or "arguments"
                got = f" (got {_short(first['input'])})" if "input" in first and first.get("type") != "missing" else ""
                more = f" (and {len(kept) - 1} more)" if len(kept) > 1 else ""
                return f"{where}: {first.get('msg')}{got}{more}"
            return f"{type(exc).__name__}: {exc}"
        return None

    config = getattr(schema, "model_config", None)
    extra = config.get("extra") if isinstance(config, dict) else getattr(getattr(schema, "Config", None), "extra", None)
    return ToolSpec(
        name=name,
        args={k: v for k, v in fields.items() if k not in injected},
        keeps_extra=str(getattr(extra, "value", extra)) == "allow",
        validate=validate,
    )


def tool_node(runnable: Any) -> tuple[dict[str, ToolSpec] | None, str]:
    """A ToolNode's tools by name and the channel it reads tool calls from; (None, "messages") for any
    other node. Recognised by what ToolNode exposes (`tools_by_name`), so subclasses and LangChain's
    agent tool nodes count too."""
    tools = getattr(runnable, "tools_by_name", None)
    if not isinstance(tools, dict):
        return None, "messages"
    key = getattr(runnable, "_messages_key", None) or getattr(runnable, "messages_key", None) or "messages"
    return {str(n): _tool_spec(str(n), t) for n, t in tools.items()}, str(key)
