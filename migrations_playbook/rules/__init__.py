"""The gate's rules: one module per finding code (see migrations_playbook/docs/gate.md, "Finding codes").

`RULES` is the order findings are evaluated in; `ASSISTANT_RULES` run over the
stored assistants of each graph. A new class of breakage is one new module here,
one fixture and one truth test.
"""

from __future__ import annotations

from migrations_playbook.rules.base import AssistantRule, GraphEvidence, Hit, Rule
from migrations_playbook.rules.breakpoint_stuck import BreakpointStuck
from migrations_playbook.rules.call_order_changed import CallOrderChanged
from migrations_playbook.rules.call_order_unverified import CallOrderUnverified
from migrations_playbook.rules.command_target_missing import CommandTargetMissing
from migrations_playbook.rules.context_invalid import ContextInvalid
from migrations_playbook.rules.defer_changed import DeferChanged
from migrations_playbook.rules.field_dropped import FieldDropped
from migrations_playbook.rules.field_required_missing import FieldRequiredMissing
from migrations_playbook.rules.field_type_mismatch import FieldTypeMismatch
from migrations_playbook.rules.graph_removed import GraphRemoved
from migrations_playbook.rules.node_missing import NodeMissing
from migrations_playbook.rules.output_key_dropped import OutputKeyDropped
from migrations_playbook.rules.output_type_changed import OutputTypeChanged
from migrations_playbook.rules.path_changed import PathChanged
from migrations_playbook.rules.pending_write_orphaned import PendingWriteOrphaned
from migrations_playbook.rules.reducer_changed import ReducerChanged
from migrations_playbook.rules.reducer_unverified import ReducerUnverified
from migrations_playbook.rules.send_payload_invalid import SendPayloadInvalid
from migrations_playbook.rules.send_payload_unverified import SendPayloadUnverified
from migrations_playbook.rules.state_invalid import StateInvalid
from migrations_playbook.rules.state_unchecked import StateUnchecked
from migrations_playbook.rules.state_unreadable import StateUnreadable
from migrations_playbook.rules.tool_call_invalid import ToolCallInvalid

RULES: tuple[Rule, ...] = (
    NodeMissing(),
    CommandTargetMissing(),
    ToolCallInvalid(),
    CallOrderChanged(),
    CallOrderUnverified(),
    PendingWriteOrphaned(),
    SendPayloadInvalid(),
    SendPayloadUnverified(),
    BreakpointStuck(),
    DeferChanged(),
    PathChanged(),
    FieldRequiredMissing(),
    FieldTypeMismatch(),
    StateInvalid(),
    FieldDropped(),
    OutputKeyDropped(),
    OutputTypeChanged(),
    ReducerChanged(),
    ReducerUnverified(),
    StateUnchecked(),
)
"""Rules over threads of a graph the candidate registers."""

GATEKEEPERS: tuple[Rule, ...] = (GraphRemoved(), StateUnreadable())
"""Rules that, when they hit, make every other check on the thread meaningless."""

ASSISTANT_RULES: tuple[AssistantRule, ...] = (ContextInvalid(),)

ALL_RULES: tuple[Rule, ...] = (*GATEKEEPERS, *RULES, *ASSISTANT_RULES)

__all__ = ["ALL_RULES", "ASSISTANT_RULES", "GATEKEEPERS", "RULES", "GraphEvidence", "Hit", "Rule"]
