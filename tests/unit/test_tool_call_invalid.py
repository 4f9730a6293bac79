"""TOOL_CALL_INVALID on hand-built snapshots of small in-process graphs with a ToolNode (no server).

The live graph: plan -> tools (a ToolNode) -> END, compiled with interrupt_before=["tools"], so a
thread stops with plan's tool call pending. Each candidate changes the tools; the thread is shaped as
`get_state(subgraphs=True)` reports it through the Agent Server API (messages as JSON dicts) or as a
checkpointer source reads it (LangChain message objects). The same class runs on a real
`langgraph dev` with truth tests (tests/fixtures/gate_projects/class_variants.py, `tool-*`).
"""

from __future__ import annotations

from typing import Annotated, Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langchain_core.tools import BaseTool, InjectedToolCallId, tool
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import InjectedState, ToolNode
from langgraph.types import interrupt
from pydantic import BaseModel, ConfigDict
from typing_extensions import TypedDict

from migrations_playbook.graphcode.contract import lock_document
from migrations_playbook.graphcode.describe import contract_of, describe
from migrations_playbook.model import LiveGraph, TaskFact, ThreadSnapshot
from migrations_playbook.rules.evaluate import Evaluator
from migrations_playbook.rules.tool_call_invalid import pending_calls


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


@tool
def lookup_order(order_id: str) -> str:
    """Look up an order."""
    return f"order {order_id}"


@tool
def find_order(order_id: str) -> str:
    """Look up an order (renamed)."""
    return f"order {order_id}"


@tool("lookup_order")
def lookup_order_alias(order_id: str) -> str:
    """Old name of find_order, kept until paused threads drain."""
    return f"order {order_id}"


@tool("lookup_order")
def lookup_order_ref(order_ref: str) -> str:
    """Look up an order (argument renamed)."""
    return f"order {order_ref}"


@tool("lookup_order")
def lookup_order_int(order_id: int) -> str:
    """Look up an order (argument narrowed to int)."""
    return f"order {order_id}"


@tool("lookup_order")
def lookup_order_optional(order_id: str, verbose: bool = False) -> str:
    """Look up an order (an optional argument added)."""
    return f"order {order_id}"


@tool("lookup_order")
def lookup_order_injected(
    order_id: str, tool_call_id: Annotated[str, InjectedToolCallId], state: Annotated[dict, InjectedState]
) -> str:
    """Look up an order (injected arguments: ToolNode fills them in)."""
    return f"order {order_id}"


class LenientArgs(BaseModel):
    model_config = ConfigDict(extra="ignore")
    order_ref: str = "?"


@tool("lookup_order", args_schema=LenientArgs)
def lookup_order_lenient(order_ref: str = "?") -> str:
    """Look up an order (a schema that ignores unknown arguments)."""
    return f"order {order_ref}"


@tool
def cancel_order(order_id: str) -> str:
    """Cancel an order."""
    return f"cancelled {order_id}"


CALL = {"name": "lookup_order", "args": {"order_id": "O-7"}, "id": "call-1", "type": "tool_call"}


def plan(state: State) -> dict:
    return {"messages": [AIMessage("", tool_calls=[CALL])]}


def _graph(tools: list[BaseTool], *, approve: bool = False) -> Any:
    builder = StateGraph(State)
    builder.add_node("plan", plan)
    builder.add_node("tools", ToolNode(tools))
    builder.add_edge(START, "plan")
    if approve:

        def approval(state: State) -> dict:
            interrupt({"kind": "approve_tools"})
            return {}

        builder.add_node("approval", approval)
        builder.add_edge("plan", "approval")
        builder.add_edge("approval", "tools")
    else:
        builder.add_edge("plan", "tools")
    builder.add_edge("tools", END)
    return builder.compile() if approve else builder.compile(interrupt_before=["tools"])


def _gate(live_graph: Any, candidate_graph: Any, threads: list[ThreadSnapshot]) -> list[dict]:
    live = LiveGraph(
        graph_id="g",
        topology=describe("g", live_graph).topology,
        lock=lock_document(contract_of("g", live_graph)),
    )
    evaluator = Evaluator(live={"g": live}, candidates={"g": describe("g", candidate_graph)}, registered={"g"})
    for thread in threads:
        evaluator.add(thread)
    return [f.to_json() for f in evaluator.findings()]


def _api_messages(call: dict = CALL) -> list[dict]:
    """The thread's messages as the Agent Server API returns them."""
    return [
        {"type": "human", "content": "where is O-7", "id": "m-1"},
        {"type": "ai", "content": "", "id": "m-2", "tool_calls": [call], "invalid_tool_calls": []},
    ]


def _at_tools(messages: Any = None, thread_id: str = "t-tools") -> ThreadSnapshot:
    return ThreadSnapshot(
        thread_id=thread_id,
        graph_id="g",
        status="interrupted",
        values={"messages": _api_messages() if messages is None else messages},
        pending=("tools",),
        tasks=(TaskFact(path="tools"),),
        next=("tools",),
    )


def _tool_findings(findings: list[dict]) -> list[tuple]:
    return [(f["code"], f["severity"], f["node"], tuple(f["thread_ids"])) for f in findings if f["code"] == "TOOL_CALL_INVALID"]


def _findings(candidate_tools: list[BaseTool], thread: ThreadSnapshot | None = None) -> list[dict]:
    return _gate(_graph([lookup_order]), _graph(candidate_tools), [thread or _at_tools()])


BLOCKED = [("TOOL_CALL_INVALID", "block", "tools", ("t-tools",))]


def test_renamed_tool_blocks() -> None:
    findings = _findings([find_order])
    assert _tool_findings(findings) == BLOCKED
    [finding] = [f for f in findings if f["code"] == "TOOL_CALL_INVALID"]
    assert "no tool 'lookup_order'" in finding["message"] and "'find_order'" in finding["message"]
    assert "alias" in finding["help"] and "error ToolMessage" in finding["why"]


def test_renamed_argument_blocks() -> None:
    findings = _findings([lookup_order_ref])
    assert _tool_findings(findings) == BLOCKED
    [finding] = [f for f in findings if f["code"] == "TOOL_CALL_INVALID"]
    assert "order_ref: Field required" in finding["message"], finding["message"]


def test_narrowed_argument_type_blocks() -> None:
    findings = _findings([lookup_order_int])
    assert _tool_findings(findings) == BLOCKED
    [finding] = [f for f in findings if f["code"] == "TOOL_CALL_INVALID"]
    assert 'order_id: Input should be a valid integer, unable to parse string as an integer (got "O-7")' in finding["message"]


class StrictArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    order_ref: str = "?"


@tool("lookup_order", args_schema=StrictArgs)
def lookup_order_strict(order_ref: str = "?") -> str:
    """Look up an order (a schema that forbids unknown arguments)."""
    return f"order {order_ref}"


def test_unknown_argument_blocks_where_the_schema_forbids_extras() -> None:
    findings = _findings([lookup_order_strict])
    assert _tool_findings(findings) == BLOCKED
    assert "order_id: Extra inputs are not permitted" in next(f["message"] for f in findings if f["code"] == "TOOL_CALL_INVALID")


def test_an_unknown_argument_is_dropped_where_the_schema_ignores_extras() -> None:
    """A `@tool` function's schema ignores unknown arguments (langchain-core 1.8: LangChain passes only the
    schema's fields): the call runs on the new argument's default. Not an error ToolMessage, so no block,
    but the stored value is lost: a warning."""

    @tool("lookup_order")
    def renamed_optional(order_ref: str = "?") -> str:
        """Look up an order."""
        return order_ref

    for tools in ([renamed_optional], [lookup_order_lenient]):
        findings = [f for f in _findings(tools) if f["code"] == "TOOL_CALL_INVALID"]
        assert [(f["severity"], f["node"]) for f in findings] == [("warn", "tools")], findings
        assert "'order_id'" in findings[0]["message"] and "drops it silently" in findings[0]["message"]


def test_safe_changes_pass() -> None:
    for tools in ([lookup_order, cancel_order], [lookup_order_optional], [find_order, lookup_order_alias], [lookup_order]):
        findings = _findings(tools)
        assert _tool_findings(findings) == [], [t.name for t in tools]
        assert [f for f in findings if f["severity"] == "block"] == [], findings


def test_injected_arguments_are_not_required_of_the_stored_call() -> None:
    assert _tool_findings(_findings([lookup_order_injected])) == []


def test_messages_as_langchain_objects_from_a_checkpointer() -> None:
    messages = [HumanMessage("where is O-7", id="m-1"), AIMessage("", id="m-2", tool_calls=[CALL])]
    assert _tool_findings(_findings([find_order], _at_tools(messages))) == BLOCKED
    assert _tool_findings(_findings([lookup_order_ref], _at_tools(messages))) == BLOCKED
    assert _tool_findings(_findings([lookup_order_optional], _at_tools(messages))) == []


def test_messages_as_serialized_langchain_constructors() -> None:
    messages = [
        {
            "lc": 1,
            "type": "constructor",
            "id": ["langchain", "schema", "messages", "AIMessage"],
            "kwargs": {"content": "", "tool_calls": [CALL]},
        }
    ]
    assert _tool_findings(_findings([find_order], _at_tools(messages))) == BLOCKED


def test_answered_calls_and_plain_replies_are_not_pending() -> None:
    answered = [*_api_messages(), {"type": "tool", "content": "order O-7", "tool_call_id": "call-1", "id": "m-3"}]
    assert pending_calls(answered) == []
    assert pending_calls([{"type": "ai", "content": "done", "tool_calls": []}]) == []
    assert [c.name for c in pending_calls(_api_messages())] == ["lookup_order"]
    # Only the last AIMessage is what ToolNode runs.
    earlier = [*_api_messages(), {"type": "tool", "tool_call_id": "call-1"}, {"type": "ai", "content": "ok"}]
    assert pending_calls(earlier) == []
    assert _tool_findings(_findings([find_order], _at_tools(answered))) == []


def test_idle_threads_are_not_checked() -> None:
    idle = ThreadSnapshot(thread_id="t-idle", graph_id="g", status="idle", values={"messages": _api_messages()})
    assert _tool_findings(_findings([find_order], idle)) == []


def test_a_node_paused_ahead_of_the_tool_node_is_checked_against_it() -> None:
    """Paused at an approval interrupt that hands the messages on unchanged: the next step runs the calls."""
    thread = ThreadSnapshot(
        thread_id="t-approval",
        graph_id="g",
        status="interrupted",
        values={"messages": _api_messages()},
        pending=("approval",),
        tasks=(TaskFact(path="approval", interrupted=True, interrupt_values=({"kind": "approve_tools"},)),),
        next=("approval",),
    )
    findings = _gate(_graph([lookup_order], approve=True), _graph([find_order], approve=True), [thread])
    assert _tool_findings(findings) == [("TOOL_CALL_INVALID", "block", "approval", ("t-approval",))]
    assert "it then enters 'tools'" in next(f["message"] for f in findings if f["code"] == "TOOL_CALL_INVALID")
    assert _tool_findings(_gate(_graph([lookup_order], approve=True), _graph([lookup_order], approve=True), [thread])) == []


def _agent_parent(tools: list[BaseTool]) -> Any:
    parent = StateGraph(State)
    parent.add_node("agent", _graph(tools))
    parent.add_edge(START, "agent")
    parent.add_edge("agent", END)
    return parent.compile()


def test_a_tool_node_inside_a_subgraph() -> None:
    thread = ThreadSnapshot(
        thread_id="t-sub",
        graph_id="g",
        status="interrupted",
        values={"messages": [{"type": "human", "content": "where is O-7"}]},
        pending=("agent", "agent:tools"),
        tasks=(TaskFact(path="agent"), TaskFact(path="agent:tools")),
        namespaces={"agent": {"messages": _api_messages()}},
        next=("agent",),
    )
    findings = _gate(_agent_parent([lookup_order]), _agent_parent([find_order]), [thread])
    assert _tool_findings(findings) == [("TOOL_CALL_INVALID", "block", "agent:tools", ("t-sub",))]
    assert _tool_findings(_gate(_agent_parent([lookup_order]), _agent_parent([lookup_order_optional]), [thread])) == []


def _send_payload(call: dict) -> dict:
    """A `Send("tools", ToolCallWithContext)` payload (create_react_agent v2), as a checkpointer stores it."""
    return {"__type": "tool_call_with_context", "tool_call": call, "state": {}}


def test_a_pending_send_is_judged_by_its_own_tool_call_where_the_store_shows_it() -> None:
    second = {"name": "cancel_order", "args": {"order_id": "O-7"}, "id": "call-2", "type": "tool_call"}
    thread = ThreadSnapshot(
        thread_id="t-send",
        graph_id="g",
        status="interrupted",
        values={"messages": [*_api_messages()[:1], {"type": "ai", "content": "", "tool_calls": [CALL, second]}]},
        pending=("tools",),
        tasks=(
            TaskFact(path="tools", push=True, finished=True),
            TaskFact(path="tools", push=True, send_payload=_send_payload(second)),
        ),
        next=("tools",),
    )
    # lookup_order's call finished already; only cancel_order's is still to run, and the candidate has it.
    assert _tool_findings(_findings([cancel_order], thread)) == []
    assert _tool_findings(_findings([lookup_order], thread)) == [("TOOL_CALL_INVALID", "block", "tools", ("t-send",))]


def test_the_tools_are_not_in_the_contract_lock() -> None:
    """The committed locks stay as they are: what a ToolNode's tools are is read from the candidate."""
    lock = contract_of("g", _graph([lookup_order]))
    assert set(lock["node_details"]["tools"]) == {"calls", "reads", "targets", "defer", "input_fields"}
    described = describe("g", _graph([lookup_order_injected]))
    assert described.nodes["tools"].tools is not None and described.nodes["plan"].tools is None
    assert described.nodes["tools"].tools["lookup_order"].args == {"order_id": True}
