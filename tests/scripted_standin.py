"""A scripted model for the OpenAI stand-in: what it answers is written in the conversation.

The offline model (graphs/common/offline.py) decides for this repo's graphs; a public project's
prompts and tools are its own, so tests/public_templates.py drives those projects with `ScriptedModel`
behind `tests.openai_standin.OpenAIStandIn` instead: no key, no network, the same answer to the same
request every time. The script is a few directives in the newest user message of the request:

* ``call:TOOL`` (in order): the n-th model call since that message calls the n-th listed tool the
  request offers (tools it does not offer are skipped); past the list, the model answers in text,
  or, when the request forces a tool (``tool_choice`` ``required``/``any``), calls the last listed
  one it offers (else the request's last tool);
* ``set:FIELD=VALUE``: a structured answer (a forced tool, a ``json_schema`` response format) or a
  tool call gives ``FIELD`` that value (``true``/``false``, a number, else the text); the last one
  wins. Other fields get the first of their enum, ``false``, ``1``, one item, or a text that repeats
  the directives (so a research brief written by the model carries them to the model call it feeds).

Everything else is a short text answer naming the conversation's length. The answers depend on the
request only, so the shadow's model relay (A records, A2 and B replay) meets the same answers from
the stand-in when a request is not replayed (a prompt that holds the time of day).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

DIRECTIVE = re.compile(r"\b(call|set):([A-Za-z0-9_-]+)(?:=([^\s,;]+))?")
FORCED = frozenset({"required", "any"})


@dataclass(frozen=True)
class ScriptedDecision:
    text: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)


def _text(message: BaseMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") if isinstance(part, Mapping) else str(part) for part in content)


def _coerce(value: str, schema: Mapping[str, Any]) -> Any:
    kind = schema.get("type")
    if kind == "boolean" or value in ("true", "false"):
        return value == "true"
    if kind in ("integer", "number"):
        return int(value) if kind == "integer" else float(value)
    return value


class ScriptedModel:
    """`decide` as `tests.openai_standin.Decider` asks it: the directives of the newest user message."""

    def decide(
        self, messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]] = (), tool_choice: str | None = None
    ) -> ScriptedDecision:
        last = max((i for i, m in enumerate(messages) if isinstance(m, HumanMessage)), default=-1)
        script = _text(messages[last]) if last >= 0 else ""
        directives = DIRECTIVE.findall(script)
        sets = {name: value for kind, name, value in directives if kind == "set"}
        tag = " ".join(f"{k}:{n}" + (f"={v}" if v else "") for k, n, v in directives) or "stand-in"
        offered = {t["function"]["name"]: t for t in tools}
        listed = [n for kind, n, _ in directives if kind == "call" and n in offered]
        done = sum(1 for m in messages[last + 1 :] if isinstance(m, AIMessage) and m.tool_calls)
        if tool_choice in offered:
            chosen: str | None = tool_choice
        elif done < len(listed):
            chosen = listed[done]
        elif tool_choice in FORCED and offered:
            chosen = listed[-1] if listed else list(offered)[-1]
        else:
            chosen = None
        if chosen is None:
            return ScriptedDecision(text=f"Stand-in answer after {len(messages)} message(s): {tag}.")
        parameters = offered[chosen]["function"].get("parameters") or {}
        args = _value("", parameters, parameters.get("$defs") or {}, sets, tag)
        digest = hashlib.sha1(json.dumps([chosen, args, len(messages), script], sort_keys=True).encode()).hexdigest()[:24]
        return ScriptedDecision(tool_calls=[{"name": chosen, "args": args, "id": f"call_{digest}", "type": "tool_call"}])


def _value(name: str, schema: Mapping[str, Any], defs: Mapping[str, Any], sets: Mapping[str, str], tag: str) -> Any:
    ref = schema.get("$ref")
    if isinstance(ref, str):
        schema = defs.get(ref.rsplit("/", 1)[-1], {})
    options = schema.get("anyOf") or schema.get("oneOf")
    if options:
        schema = next((o for o in options if o.get("type") != "null"), options[0])
        return _value(name, schema, defs, sets, tag)
    if name in sets:
        return _coerce(sets[name], schema)
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "object" or "properties" in schema:
        properties = schema.get("properties") or {}
        keep = set(schema.get("required") or ()) | (set(properties) & set(sets))
        return {key: _value(key, sub, defs, sets, tag) for key, sub in properties.items() if key in keep}
    if kind == "array":
        return [_value(name, schema.get("items") or {"type": "string"}, defs, sets, tag)]
    if kind == "boolean":
        return False
    if kind in ("integer", "number"):
        return 1
    return f"{name or 'value'}: {tag}"
