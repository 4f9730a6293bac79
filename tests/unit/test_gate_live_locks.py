"""The gate refuses live locks that are the candidate's own (``--live-contract`` rewritten after the edit):
with them it would compare the candidate with itself and pass. Judged against what the running
deployment says it runs (its served contract), so the locks of the code threads last ran, given after
a rollout (the server then serves the candidate's), stay accepted."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from migrations_playbook.commands.gate import _refuse_candidate_locks
from migrations_playbook.errors import UsageError
from migrations_playbook.graphcode.contract import contract_hash, lock_document
from migrations_playbook.model import LiveGraph

LIVE = {"graph_id": "g", "nodes": ["triage"]}
CANDIDATE = {"graph_id": "g", "nodes": ["assess"]}
OLDER = {"graph_id": "g", "nodes": ["intake"]}


class ServedSource:
    """A source that says which code the deployment runs (as `ApiSource.contract_served` does)."""

    def __init__(self, served: dict[str, str] | None, stamps: set[str] | None = None) -> None:
        self.served = served
        self.stamps = stamps or set()

    async def contract_served(self) -> dict[str, str] | None:
        return self.served

    async def contract_stamps(self, graph_ids: list[str]) -> dict[str, set[str]]:
        """The runtime guard's stamps on the live threads (as `ApiSource.contract_stamps` reads them)."""
        return {g: set(self.stamps) for g in graph_ids}


def _refuse(given: dict[str, Any], served: dict[str, Any] | None, stamped: list[dict[str, Any]] | None = None) -> None:
    live = {"g": LiveGraph(graph_id="g", topology=None, lock=lock_document(given))}
    stamps = {contract_hash(s) for s in stamped or []}
    source: Any = ServedSource({"g": contract_hash(served)} if served is not None else None, stamps)
    asyncio.run(_refuse_candidate_locks(source, live, ["g"], lambda graph_id: contract_hash(CANDIDATE)))


def test_without_a_served_contract_the_stamps_refuse_the_candidates_own_locks() -> None:
    with pytest.raises(UsageError, match=r"is the candidate's own, but the live threads were last run by sha256:"):
        _refuse(CANDIDATE, None, stamped=[LIVE])
    _refuse(CANDIDATE, None, stamped=[LIVE, CANDIDATE])  # some threads already ran the candidate: its locks are live
    _refuse(LIVE, None, stamped=[LIVE])


def test_locks_that_are_the_candidates_own_are_refused_when_the_server_runs_other_code() -> None:
    with pytest.raises(UsageError, match=r"is the candidate's own, but the live deployment runs sha256:"):
        _refuse(CANDIDATE, LIVE)


@pytest.mark.parametrize(
    ("given", "served"),
    [
        pytest.param(LIVE, LIVE, id="the-deployed-commits-locks"),
        pytest.param(OLDER, CANDIDATE, id="after-the-rollout-the-old-codes-locks"),
        pytest.param(CANDIDATE, None, id="a-server-that-serves-no-contract"),
        pytest.param(CANDIDATE, CANDIDATE, id="the-candidate-is-what-runs"),
    ],
)
def test_other_live_locks_are_accepted(given: dict[str, Any], served: dict[str, Any] | None) -> None:
    _refuse(given, served)
