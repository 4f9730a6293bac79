"""`GET /playbook/contract`: the deployment's own contract locks, for the gate.

The Agent Server API cannot tell a channel's reducer, so `playbook gate` asks the
live deployment for the locks of the code it runs (`live.CONTRACT_ROUTE`).
`playbook contract --check` in CI guarantees the committed locks match the code
that is deployed with them. Mounted by the deployment's http app
(`server/webapp.py`).
"""

from __future__ import annotations

from pathlib import Path

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from migrations_playbook.graphcode.contract import read_locks

CONTRACTS = Path(__file__).resolve().parent / "contracts"


def contract(request: Request) -> JSONResponse:
    """Sync on purpose: Starlette runs it in a thread, so reading files does not
    block the server's event loop (Agent Server refuses blocking calls there)."""
    return JSONResponse({"graphs": read_locks(CONTRACTS)})


routes = [Route("/playbook/contract", contract, methods=["GET"])]
