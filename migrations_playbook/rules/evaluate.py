"""Evaluate: run the rules (`migrations_playbook.rules`) over thread snapshots and assistants.

`Evaluator` is fed one `ThreadSnapshot` at a time (so a scan of many threads
keeps only the aggregated findings in memory) and aggregates the rules' hits
into findings per (code, graph, node, field, key), keeping the first thread ids
and a count. It does no I/O: the sources (`sources/api/reads.py`) gather the evidence.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from migrations_playbook.model import (
    CONTEXT_INVALID,
    CandidateGraph,
    Finding,
    GraphSummary,
    LiveGraph,
    ThreadSnapshot,
)
from migrations_playbook.rules import ASSISTANT_RULES, GATEKEEPERS, RULES, GraphEvidence, Hit, Rule
from migrations_playbook.rules.node_missing import shallowest_missing as _shallowest_missing  # noqa: F401 - re-export
from migrations_playbook.rules.path_changed import reachable  # noqa: F401 - re-export for callers and tests


class Evaluator:
    """Aggregates findings over a stream of thread snapshots (and a graph's assistants)."""

    def __init__(
        self,
        *,
        live: Mapping[str, LiveGraph],
        candidates: Mapping[str, CandidateGraph],
        registered: set[str],
        strict: bool = False,
        accepted: Mapping[tuple[str, str, str | None], str] | None = None,
    ) -> None:
        self.live = live
        self.candidates = candidates
        self.registered = registered
        self.strict = strict
        self.accepted = dict(accepted or {})
        """(code, graph id, field or None) -> the record that accepts that finding for the candidate
        (`contract.accepted_findings`): reported as a warning naming the record, not a block."""
        self.summaries: dict[str, GraphSummary] = {}
        self._findings: dict[tuple[str, str, str | None, str | None, str], Finding] = {}
        self._evidence: dict[str, GraphEvidence] = {}
        self._bad_assistants: dict[str, dict[str, list[Finding]]] = {}
        """graph id -> assistant id -> the CONTEXT_INVALID findings naming it."""

    # -- bookkeeping -------------------------------------------------------------

    def _record(self, rule: Rule, graph_id: str, hit: Hit) -> Finding:
        index = (rule.code, graph_id, hit.node, hit.field, hit.key)
        if index not in self._findings:
            self._findings[index] = Finding(
                code=rule.code,
                severity=hit.severity or rule.severity,
                graph_id=graph_id,
                message=hit.message,
                node=hit.node,
                field=hit.field,
                help=hit.help or rule.help,
                why=rule.why,
            )
        return self._findings[index]

    def summary(self, graph_id: str) -> GraphSummary:
        if graph_id not in self.summaries:
            self.summaries[graph_id] = GraphSummary(in_candidate=graph_id in self.registered)
        return self.summaries[graph_id]

    def evidence(self, graph_id: str) -> GraphEvidence:
        if graph_id not in self._evidence:
            self._evidence[graph_id] = GraphEvidence(
                graph_id=graph_id,
                registered=graph_id in self.registered,
                candidate=self.candidates.get(graph_id),
                live=self.live.get(graph_id),
                strict=self.strict,
            )
        return self._evidence[graph_id]

    # -- per assistant -------------------------------------------------------------

    def add_assistant(self, graph_id: str, assistant: dict[str, Any]) -> None:
        """Check one stored assistant of ``graph_id`` (call before its threads are added)."""
        graph = self.evidence(graph_id)
        if not graph.registered or graph.candidate is None:
            return
        for rule in ASSISTANT_RULES:
            for hit in rule.check_assistant(assistant, graph):
                finding = self._record(rule, graph_id, hit)
                finding.add_assistant(assistant["assistant_id"])
                self._bad_assistants.setdefault(graph_id, {}).setdefault(assistant["assistant_id"], []).append(finding)

    # -- per thread ----------------------------------------------------------------

    def add(self, thread: ThreadSnapshot) -> None:
        self.summary(thread.graph_id).count(thread)
        graph = self.evidence(thread.graph_id)
        for rule in GATEKEEPERS:
            hits = list(rule.check(thread, graph))
            for hit in hits:
                self._record(rule, thread.graph_id, hit).add_thread(thread.thread_id)
            if hits:
                return
        if graph.candidate is None:
            return
        touched: dict[int, Finding] = {}
        for finding in self._bad_assistants.get(thread.graph_id, {}).get(thread.assistant_id or "", []):
            if finding.code == CONTEXT_INVALID:
                touched[id(finding)] = finding
        for rule in RULES:
            for hit in rule.check(thread, graph):
                finding = self._record(rule, thread.graph_id, hit)
                touched[id(finding)] = finding
        for finding in touched.values():  # a thread counts once per finding, however many hits it gave
            finding.add_thread(thread.thread_id)

    # -- a scan split by thread id range ------------------------------------------------

    def partial(self) -> tuple[dict[str, GraphSummary], list[tuple[tuple[Any, ...], Finding]]]:
        """What this evaluator aggregated (picklable), for `merge` into another one."""
        return self.summaries, list(self._findings.items())

    def merge(self, partial: tuple[dict[str, GraphSummary], list[tuple[tuple[Any, ...], Finding]]]) -> None:
        """Add the `partial` of an evaluator fed the threads that come after this one's, with the
        result of one evaluator fed them all: counts added, first thread ids kept in order, each
        finding worded as its first hit."""
        summaries, findings = partial
        for graph_id, theirs in summaries.items():
            self.summary(graph_id).merge(theirs)
        for index, their_finding in findings:
            my_finding = self._findings.get(index)
            if my_finding is None:
                self._findings[index] = their_finding
                continue
            my_finding.thread_ids.extend(their_finding.thread_ids[: max(0, my_finding.MAX_IDS - len(my_finding.thread_ids))])
            my_finding.thread_count += their_finding.thread_count
            for assistant_id in their_finding.assistant_ids:
                my_finding.add_assistant(assistant_id)

    # -- result ----------------------------------------------------------------------

    def findings(self) -> list[Finding]:
        order = {"block": 0, "warn": 1}
        for finding in self._findings.values():
            record = self.accepted.get((finding.code, finding.graph_id, finding.field)) or self.accepted.get(
                (finding.code, finding.graph_id, None)
            )
            if record is not None and finding.severity == "block":
                finding.severity = "warn"
                finding.message = f"accepted by record {record} (proved there by `playbook shadow`): {finding.message}"
        return sorted(
            self._findings.values(),
            key=lambda f: (order[f.severity], f.graph_id, f.code, f.node or "", f.field or ""),
        )
