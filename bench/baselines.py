"""The chat graphs with ``messages`` as a plain ``add_messages`` channel (bench only).

`bench.checkpoint_growth` serves them next to the real graphs (ids
``<graph>__add_messages``, module path ``bench.baselines:<graph>``) to show what
the `DeltaChannel` in graphs/common/history.py saves. Each variant is rebuilt
from the package's own node functions and edges, so only the channel differs.
"""

from __future__ import annotations

import importlib
from typing import Annotated, get_type_hints

from langchain_core.messages import AnyMessage
from langgraph.graph import StateGraph
from langgraph.graph.message import add_messages
from langgraph.graph.state import CompiledStateGraph
from typing_extensions import TypedDict

SUFFIX = "__add_messages"
CHAT_GRAPHS = ("fan_room", "recycling_guide")


def _with_plain_messages(schema: type) -> type:
    hints = get_type_hints(schema, include_extras=True)
    if "messages" in hints:
        hints["messages"] = Annotated[list[AnyMessage], add_messages]
    return TypedDict(schema.__name__, hints)  # type: ignore[operator]  # functional form


def plain_history_variant(package: str) -> CompiledStateGraph:
    """``graphs.<package>``'s graph with ``messages`` as a plain ``add_messages`` channel."""
    source = importlib.import_module(f"graphs.{package}.graph").builder
    nodes = importlib.import_module(f"graphs.{package}.nodes")
    state = _with_plain_messages(source.state_schema)
    builder = StateGraph(
        state,
        context_schema=source.context_schema,
        input_schema=_with_plain_messages(source.input_schema),
        output_schema=_with_plain_messages(source.output_schema),
    )
    for name in source.nodes:
        builder.add_node(name, getattr(nodes, name), input_schema=state)
    for start, end in source.edges:
        builder.add_edge(start, end)
    return builder.compile(name=f"{package}{SUFFIX}")


def served() -> dict[str, str]:
    """graph id -> module path of every variant, for a bench langgraph.json."""
    return {f"{graph}{SUFFIX}": f"bench.baselines:{graph}" for graph in CHAT_GRAPHS}


fan_room = plain_history_variant("fan_room")
recycling_guide = plain_history_variant("recycling_guide")
