"""TOOL_CALL_INVALID: a tool call pending in a thread's messages that the candidate's ToolNode cannot run.

A thread paused before its tools ran (``interrupt_before=["tools"]``, an approval node ahead of the
ToolNode, an error in the tools step) holds the model's tool calls in its last AIMessage. On resume,
the candidate's ToolNode looks each call's name up in its tools and validates the stored arguments
with the tool's ``args_schema``. An unknown name or rejected arguments do not fail the run: ToolNode
answers with an error ToolMessage, the run succeeds, and the call the user waited for is lost.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from migrations_playbook.model import TOOL_CALL_INVALID, CandidateGraph, NodeSpec, ThreadSnapshot
from migrations_playbook.rules.base import (
    API_THREADS,
    CANDIDATE,
    STORE,
    GraphEvidence,
    Hit,
    Rule,
    candidate_level,
    namespaces,
    pending_nodes,
)

_AI_TYPES = frozenset({"ai", "AIMessage", "AIMessageChunk", "assistant"})
_TOOL_TYPES = frozenset({"tool", "ToolMessage", "ToolMessageChunk"})


@dataclass(frozen=True)
class PendingCall:
    name: str
    args: Any
    id: str | None


def _message(message: Any) -> tuple[str, Any]:
    """(kind, message) of a stored message: an Agent Server JSON dict (``{"type": "ai", ...}``), a
    LangChain serialized constructor (``{"lc": 1, "id": [..., "AIMessage"], "kwargs": {...}}``) or a
    LangChain message object; kind is ``ai``, ``tool`` or something else."""
    if isinstance(message, dict):
        if message.get("lc") and isinstance(message.get("id"), list) and isinstance(message.get("kwargs"), dict):
            kind = str(message["id"][-1]) if message["id"] else ""
            message = message["kwargs"]
        else:
            kind = str(message.get("type") or message.get("role") or "")
    else:
        kind = str(getattr(message, "type", "") or type(message).__name__)
    if kind in _AI_TYPES:
        return "ai", message
    if kind in _TOOL_TYPES:
        return "tool", message
    return kind, message


def _get(message: Any, key: str) -> Any:
    return message.get(key) if isinstance(message, dict) else getattr(message, key, None)


def pending_calls(messages: Any) -> list[PendingCall]:
    """The tool calls of the last AIMessage (the one ToolNode runs) that no later ToolMessage answers."""
    if not isinstance(messages, list | tuple):
        return []
    answered: set[str] = set()
    for message in reversed(messages):
        kind, body = _message(message)
        if kind == "tool":
            answered.add(str(_get(body, "tool_call_id")))
        elif kind == "ai":
            calls = []
            for call in _get(body, "tool_calls") or ():
                name = _get(call, "name")
                call_id = _get(call, "id")
                if not isinstance(name, str) or (call_id is not None and str(call_id) in answered):
                    continue
                calls.append(PendingCall(name=name, args=_get(call, "args"), id=None if call_id is None else str(call_id)))
            return calls
    return []


def _successors(level: CandidateGraph, spec: NodeSpec) -> set[str]:
    """Nodes of the same (sub)graph that ``spec`` leads to: drawn edges, goto/Send targets, router returns."""
    found = {t for s, t, _ in level.topology.edges if s == spec.name and ":" not in t}
    return found | set(spec.targets) | set(spec.router_returns)


class ToolCallInvalid(Rule):
    code = TOOL_CALL_INVALID
    severity = "block"
    evidence = (API_THREADS, STORE, CANDIDATE)
    why = (
        "a thread paused before its tools ran holds the model's tool calls in its last AIMessage; on resume the "
        "candidate's ToolNode looks each call up by tool name and validates the stored arguments with the tool's "
        "args_schema. An unknown tool or rejected arguments become an error ToolMessage: the run succeeds, the call is lost"
    )
    help = (
        "keep the old tool registered under its old name (an alias: `@tool('old_name')` on a wrapper that calls the "
        "new one, or the old function kept in the ToolNode's list) and keep accepting the old arguments (new ones "
        "optional, with a default; a renamed one accepted under both names) until the threads with pending calls drain, "
        "then remove the alias"
    )

    def check(self, thread: ThreadSnapshot, graph: GraphEvidence) -> Iterable[Hit]:
        candidate = graph.candidate
        if candidate is None or not thread.pending:
            return
        values = dict(namespaces(thread))
        for prefix in sorted({path.rpartition(":")[0] for path in thread.pending}):
            level = candidate_level(candidate, prefix)
            state = values.get(prefix)
            if level is None or state is None:
                continue
            for name in sorted(pending_nodes(thread, prefix)):
                spec = level.nodes.get(name)
                if spec is None:
                    continue  # NODE_MISSING says it
                path = f"{prefix}:{name}" if prefix else name
                yield from self._check_node(thread, level, spec, state, path)

    def _runners(self, level: CandidateGraph, spec: NodeSpec) -> tuple[list[NodeSpec], bool]:
        """The ToolNodes that will run the pending calls, and whether it is ``spec`` itself. A node
        that is not a ToolNode hands the stored messages on unchanged only when its code provably
        does not write them (its returns are literal dicts without the messages key)."""
        if spec.tools is not None:
            return [spec], True
        if spec.writes is None:
            return [], False
        ahead = [level.nodes[n] for n in sorted(_successors(level, spec)) if n in level.nodes]
        return [n for n in ahead if n.tools is not None and n.messages_key not in spec.writes], False

    def _check_node(
        self, thread: ThreadSnapshot, level: CandidateGraph, spec: NodeSpec, state: dict[str, Any], path: str
    ) -> Iterator[Hit]:
        runners, itself = self._runners(level, spec)
        by_key: dict[str, list[NodeSpec]] = {}
        for runner in runners:
            by_key.setdefault(runner.messages_key, []).append(runner)
        for key, nodes in sorted(by_key.items()):
            for call in self._calls(thread, path, state.get(key), itself):
                yield from self._judge(call, nodes, path, key, itself)

    @staticmethod
    def _calls(thread: ThreadSnapshot, path: str, messages: Any, itself: bool) -> list[PendingCall]:
        """The calls to judge: a pending Send's own tool call where the store shows it, else the last
        AIMessage's unanswered calls."""
        if itself:
            pushed = [t for t in thread.tasks if t.path == path and t.push and not t.finished]
            payloads = [t.send_payload for t in pushed]
            if pushed and all(isinstance(p, dict) and isinstance(p.get("tool_call"), dict) for p in payloads):
                return [
                    PendingCall(name=str(c.get("name")), args=c.get("args"), id=c.get("id"))
                    for c in (p["tool_call"] for p in payloads)
                ]
        return pending_calls(messages)

    @staticmethod
    def _judge(call: PendingCall, nodes: list[NodeSpec], path: str, key: str, itself: bool) -> Iterator[Hit]:
        where = "" if itself else f" (it then enters {', '.join(repr(n.name) for n in nodes)})"
        having = [n for n in nodes if call.name in (n.tools or {})]
        if not having:
            known = sorted({t for n in nodes for t in n.tools or {}})
            yield Hit(
                f"threads will run {path!r}{where} with a pending call to tool {call.name!r} (in {key!r}), but the "
                f"candidate's ToolNode has no tool {call.name!r} (it has {', '.join(map(repr, known)) or 'none'}): "
                "ToolNode answers with an error ToolMessage and the call is lost",
                node=path,
                key=f"name|{call.name}",
            )
            return
        errors = [(n.tools or {})[call.name].validate(call.args) for n in having]
        if any(e is None for e in errors):
            tools = [(n.tools or {})[call.name] for n, e in zip(having, errors, strict=True) if e is None]
            stored = set(call.args) if isinstance(call.args, dict) else set()
            dropped = sorted(stored - {a for t in tools for a in t.args}) if not any(t.keeps_extra for t in tools) else []
            if dropped:
                yield Hit(
                    f"threads will run {path!r}{where} with a pending call to tool {call.name!r} that passes "
                    f"{', '.join(map(repr, dropped))}, which the candidate's tool no longer takes: LangChain drops "
                    "it silently and the tool runs without it (on its defaults)",
                    node=path,
                    key=f"dropped|{call.name}|{','.join(dropped)}",
                    severity="warn",
                    help=(
                        f"keep accepting {', '.join(map(repr, dropped))} (an alias argument the tool maps to the new "
                        "name) until the threads with pending calls drain"
                    ),
                )
            return
        yield Hit(
            f"threads will run {path!r}{where} with a pending call to tool {call.name!r} whose stored arguments the "
            f"candidate's tool rejects ({errors[0]}): ToolNode answers with an error ToolMessage and the call is lost",
            node=path,
            key=f"args|{call.name}",
        )
