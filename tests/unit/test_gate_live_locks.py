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

    def __init__(self, served: dict[str, str] | None) -> None:
        self.served = served

    async def contract_served(self) -> dict[str, str] | None:
        return self.served


def _refuse(given: dict[str, Any], served: dict[str, Any] | None) -> None:
    live = {"g": LiveGraph(graph_id="g", topology=None, lock=lock_document(given))}
    source: Any = ServedSource({"g": contract_hash(served)} if served is not None else None)
    asyncio.run(_refuse_candidate_locks(source, live, ["g"], lambda graph_id: contract_hash(CANDIDATE)))


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
