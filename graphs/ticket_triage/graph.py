r"""Wiring of the ticket-triage graph (registered as `ticket_triage`).

START -> intake -> triage -(flow_version >= 2)-> policy_check -> respond -> END
                          \-(v1 / no stamp)-----------------> respond
"""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph

from graphs.common.context import ModelContext
from graphs.common.dual import both
from graphs.ticket_triage.nodes import arespond, atriage, intake, policy_check, respond, route_after_triage, triage
from graphs.ticket_triage.state import TicketInput, TicketState

GRAPH_ID = "ticket_triage"

builder = StateGraph(TicketState, context_schema=ModelContext, input_schema=TicketInput)
"""Uncompiled builder: tests compile it with their own checkpointer."""
builder.add_node("intake", intake)
builder.add_node("triage", both(triage, atriage))
builder.add_node("policy_check", policy_check)
builder.add_node("respond", both(respond, arespond))
builder.add_edge(START, "intake")
builder.add_edge("intake", "triage")
builder.add_conditional_edges("triage", route_after_triage, ["policy_check", "respond"])
builder.add_edge("policy_check", "respond")
builder.add_edge("respond", END)

graph = builder.compile(name=GRAPH_ID)
