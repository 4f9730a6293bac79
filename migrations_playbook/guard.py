"""The runtime guard: refuse a run the running code cannot do right on an existing thread.

The gate protects the teams that run it; a deploy made without it (a hotfix, a
forgotten CI step, a rollback) would still strand threads silently. The guard
applies the gate's per-thread rules (`migrations_playbook.rules`) to the one
thread a run is about to continue, inside the deployment's run-creation handler,
with the *running* code as the candidate and, as the live side, the contract lock
of the code the thread last ran under.

The running code's identity is what the running graphs are: each graph is described
once per process (`describe.contract_of`, off the event loop) and hashed the way
`playbook contract --write` hashes the lock it writes, so code and lock that agree
have one hash. A committed lock that differs (code changed, lock not rewritten: a
hotfix, a skipped CI step) is logged once as stale; the guard judges with, and stamps
runs with, the running code all the same.

Which code a thread last ran under: every run is stamped with the running code's
contract hash (`metadata_for`, key ``playbook_contract``); Agent Server copies run
metadata into the checkpoints the run writes, so the thread's latest checkpoint
metadata names it; a thread the guard admitted is stamped too (thread metadata), so
its next run under the same code needs no read at all (the common case). The lock
of every hash ever written is kept in ``<contracts dir>/history/`` (`contract.write`).

A thread stamped with a hash whose lock is not in that history (what a stale-lock deploy
stamps: the shape of the code that wrote it is unknown) is refused with a 409 saying so
(``LOCK_UNKNOWN``), unless ``PLAYBOOK_GUARD_UNKNOWN=admit``: then it is judged against
the running code alone (refused only for what that finds) and admitted with a logged
warning. The default is ``refuse`` because judging without the old lock cannot see most
breaks (a reordered call, a changed reducer, a moved path) and would admit them. A graph
the deployment keeps no lock of at all, and a thread stamped by nothing (it predates the
guard), are judged against the running code alone, as before.

Set ``PLAYBOOK_GUARD=off`` to turn it off (default on).
"""

from __future__ import annotations

import asyncio
import importlib
import json
import logging
import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from migrations_playbook.graphcode.contract import contract_hash, read_history, strip_lock
from migrations_playbook.model import (
    CONTRACT_STAMP,
    PAUSED_STATUSES,
    STATE_UNREADABLE,
    CandidateGraph,
    Finding,
    LiveGraph,
    TaskFact,
    ThreadSnapshot,
    Topology,
)
from migrations_playbook.rules.evaluate import Evaluator
from migrations_playbook.sources.api import state as live

CONTRACT_KEY = CONTRACT_STAMP
"""Run (and so checkpoint) metadata key: the contract hash of the code that ran it."""
GUARD_ENV = "PLAYBOOK_GUARD"
GUARD_OFF = frozenset({"off", "0", "false", "no"})
UNKNOWN_ENV = "PLAYBOOK_GUARD_UNKNOWN"
"""What to do with a thread whose code's lock is not in the lock history: ``refuse`` (default) or ``admit``."""
LOCK_UNKNOWN = "LOCK_UNKNOWN"
"""The guard's finding for a thread stamped with a contract hash the lock history lacks."""

logger = logging.getLogger(__name__)


def guard_enabled(environ: Mapping[str, str] | None = None) -> bool:
    """On unless ``PLAYBOOK_GUARD`` says off."""
    return (os.environ if environ is None else environ).get(GUARD_ENV, "on").strip().lower() not in GUARD_OFF


def unknown_policy(environ: Mapping[str, str] | None = None) -> str:
    """``admit`` only when ``PLAYBOOK_GUARD_UNKNOWN`` says so; anything else is ``refuse`` (read per check)."""
    value = (os.environ if environ is None else environ).get(UNKNOWN_ENV, "refuse").strip().lower()
    return "admit" if value == "admit" else "refuse"


@dataclass(frozen=True)
class Refusal:
    """Why a run on a thread is refused (HTTP 409)."""

    thread_id: str
    findings: tuple[Finding, ...]
    lock_note: str = ""

    @property
    def message(self) -> str:
        first = self.findings[0]
        where = ", ".join(
            part
            for part in (f"node {first.node!r}" if first.node else "", f"field {first.field!r}" if first.field else "")
            if part
        )
        more = (
            f" (and {len(self.findings) - 1} more: {', '.join(f.code for f in self.findings[1:])})"
            if len(self.findings) > 1
            else ""
        )
        return (
            f"thread {self.thread_id} cannot be continued correctly by the running code: {first.code}"
            f"{' at ' + where if where else ''}: {first.message}{more}. Fix: {first.help or 'see playbook'}; "
            "repair the thread with `playbook migrate --plan <plan>` (a dry run first), or deploy the "
            f"add-then-remove sequence instead. Nothing on the thread changed.{self.lock_note}"
        )


class Guard:
    """Per-deployment guard: the running graphs (loaded lazily) and the lock history."""

    def __init__(
        self, graphs: Mapping[str, Callable[[], Any] | str], contracts_dir: Path, records_dir: Path | None = None
    ) -> None:
        """``graphs``: graph id -> its compiled graph's import spec (``pkg.module:attr``) or a
        zero-argument callable returning it; ``contracts_dir``: the deployment's locks; ``records_dir``:
        its migration records (default: ``records/`` beside the locks), whose ``accepts`` entries for the
        running code the guard honours as the gate does (`contract.accepted_findings`)."""
        self._specs = dict(graphs)
        self.contracts_dir = Path(contracts_dir)
        self.records_dir = Path(records_dir) if records_dir is not None else self.contracts_dir.parent / "records"
        self._accepted: dict[tuple[str, str], dict[tuple[str, str, str | None], str]] = {}
        self._described: dict[str, CandidateGraph] = {}
        self._locks: dict[tuple[str, str], dict[str, Any] | None] = {}
        self._compiled: dict[str, Any] = {}
        self._identities: dict[str, str] = {}
        # Loading and describing run in worker threads; one at a time, so each graph is
        # loaded and described once per process however many runs arrive together.
        self._loading = threading.RLock()

    @property
    def current(self) -> dict[str, str]:
        """graph id -> the running code's contract hash (blocking: describes each graph once)."""
        return {graph_id: self._identify(graph_id) for graph_id in self._specs}

    async def current_hashes(self) -> dict[str, str]:
        """`current`, off the event loop."""
        if any(graph_id not in self._identities for graph_id in self._specs):
            await asyncio.to_thread(lambda: self.current)
        return dict(self._identities)

    async def identity(self, graph_id: str) -> str | None:
        """The running code's contract hash for ``graph_id`` (None for a graph it does not serve)."""
        if graph_id not in self._specs:
            return None
        if graph_id not in self._identities:
            await asyncio.to_thread(self._identify, graph_id)
        return self._identities[graph_id]

    async def metadata_for(self, graph_id: str) -> dict[str, str]:
        """What to stamp on a run of ``graph_id``: the running code's real identity."""
        digest = await self.identity(graph_id)
        return {CONTRACT_KEY: digest} if digest else {}

    def committed(self, graph_id: str) -> str | None:
        """The hash of the committed lock ``<contracts_dir>/<graph_id>.json`` (blocking), or None."""
        path = self.contracts_dir / f"{graph_id}.json"
        return contract_hash(strip_lock(json.loads(path.read_text()))) if path.is_file() else None

    def _graph(self, graph_id: str) -> Any:
        with self._loading:
            if graph_id not in self._compiled:
                spec = self._specs[graph_id]
                if isinstance(spec, str):
                    module, _, attr = spec.partition(":")
                    self._compiled[graph_id] = getattr(importlib.import_module(module), attr)
                else:
                    self._compiled[graph_id] = spec()
            return self._compiled[graph_id]

    def _identify(self, graph_id: str) -> str:
        """Blocking; once per process per graph. The hash is `contract.write`'s: of `contract_of`."""
        from migrations_playbook.graphcode.describe import contract_of

        with self._loading:
            if graph_id in self._identities:
                return self._identities[graph_id]
            digest = contract_hash(contract_of(graph_id, self._graph(graph_id)))
            committed = self.committed(graph_id)
            if committed is not None and committed != digest:
                logger.warning(
                    "the committed lock of graph %r is stale: it says %s, the running code is %s "
                    "(the code changed, the lock was not rewritten); the guard judges with the running "
                    "code and stamps its runs %s. Run `playbook contract --write` on this code and commit "
                    "the locks (and their history/)",
                    graph_id,
                    committed,
                    digest,
                    digest,
                )
            self._identities[graph_id] = digest
            return digest

    def _keeps_locks(self, graph_id: str) -> bool:
        """Whether the deployment keeps any lock of ``graph_id`` (blocking)."""
        history = self.contracts_dir / "history" / graph_id
        return (self.contracts_dir / f"{graph_id}.json").is_file() or (history.is_dir() and any(history.glob("*.json")))

    @classmethod
    def from_config(cls, config_path: Path, contracts_dir: Path) -> Guard:
        """A guard for the graphs of a langgraph.json (file or module specs), loaded on first use."""
        from migrations_playbook.graphcode.candidate import graph_specs, load_compiled, read_config

        config_path = Path(config_path).resolve()
        specs = graph_specs(read_config(config_path))

        def loader(graph_id: str) -> Callable[[], Any]:
            return lambda: load_compiled(config_path, [graph_id])[graph_id]

        return cls({graph_id: loader(graph_id) for graph_id in specs}, contracts_dir)

    def _describe(self, graph_id: str) -> CandidateGraph:
        from migrations_playbook.graphcode.describe import describe

        return describe(graph_id, self._graph(graph_id))

    async def admit(self, value: dict[str, Any]) -> None:
        """For any project's ``@auth.on.threads.create_run`` handler: refuse (409) a run the
        running code cannot do right on its thread, else stamp the run (stamped always, checked
        unless ``PLAYBOOK_GUARD=off``). ``value`` is the handler's value (``thread_id``,
        ``assistant_id``, ``metadata``)."""
        from langgraph_sdk import Auth, get_client
        from langgraph_sdk.errors import NotFoundError

        client = get_client()  # in-process: reads as the caller
        try:
            try:
                assistant = await client.assistants.get(str(value.get("assistant_id")))
            except NotFoundError:
                return  # the server answers 404 itself
            graph_id = assistant["graph_id"]
            thread = None
            if value.get("thread_id"):
                try:
                    thread = dict(await client.threads.get(str(value["thread_id"])))
                except NotFoundError:
                    thread = None
            refusal = await self.check(client, graph_id=graph_id, thread=thread, stamp=True) if guard_enabled() else None
            if refusal is not None:
                raise Auth.exceptions.HTTPException(status_code=409, detail=refusal.message)
            value.setdefault("metadata", {}).update(await self.metadata_for(graph_id))
        finally:
            await client.aclose()

    async def candidate(self, graph_id: str) -> CandidateGraph:
        if graph_id not in self._described:
            # Reading source and drawing the graph are blocking: off the event loop, once.
            self._described[graph_id] = await asyncio.to_thread(self._describe, graph_id)
        return self._described[graph_id]

    async def lock(self, graph_id: str, digest: str) -> dict[str, Any] | None:
        key = (graph_id, digest)
        if key not in self._locks:
            self._locks[key] = await asyncio.to_thread(read_history, self.contracts_dir, graph_id, digest)
        return self._locks[key]

    async def check(
        self,
        client: Any,
        *,
        graph_id: str,
        thread: Mapping[str, Any] | None,
        state: Mapping[str, Any] | None = None,
        stamp: bool = False,
    ) -> Refusal | None:
        """The refusal for a run on ``thread`` (as `threads.get` returns it), or None when the
        running code can continue it. ``client`` reads the thread's state when ``state`` is not
        given (the in-process client of the run-creation handler). With ``stamp``, a thread the
        running code may continue gets the running code's hash in its metadata, so its next run
        costs no read at all (the run handler stamps; `playbook inflight` only reads)."""
        if thread is None or graph_id not in self._specs:
            return None
        current = await self.identity(graph_id)
        if current is not None and (thread.get("metadata") or {}).get(CONTRACT_KEY) == current:
            return None  # admitted under this very code before: nothing to read
        status = str(thread.get("status") or "idle")
        if not thread.get("values") and status not in PAUSED_STATUSES and not thread.get("interrupts"):
            return None  # nothing stored yet: any code can start it
        refusal = await self._judge(client, graph_id=graph_id, thread=thread, state=state, current=current)
        if refusal is None and stamp and current is not None:
            await client.threads.update(str(thread["thread_id"]), metadata={CONTRACT_KEY: current})
        return refusal

    async def stamp(self, client: Any, *, graph_id: str, thread: Mapping[str, Any] | None) -> None:
        """Write the running code's hash on a thread `check` admitted (without ``stamp``), once
        every other check of the run has passed too: its next run then costs no read. A refused
        run leaves the thread exactly as it was, so the stamp comes last."""
        if thread is None or graph_id not in self._specs:
            return
        current = await self.identity(graph_id)
        if current is None or (thread.get("metadata") or {}).get(CONTRACT_KEY) == current:
            return
        status = str(thread.get("status") or "idle")
        if not thread.get("values") and status not in PAUSED_STATUSES and not thread.get("interrupts"):
            return  # nothing stored yet: `check` read nothing, and its first run stores the stamp's reason
        await client.threads.update(str(thread["thread_id"]), metadata={CONTRACT_KEY: current})

    async def _judge(
        self,
        client: Any,
        *,
        graph_id: str,
        thread: Mapping[str, Any],
        state: Mapping[str, Any] | None,
        current: str | None,
    ) -> Refusal | None:
        thread_id = str(thread["thread_id"])
        status = str(thread.get("status") or "idle")
        unreadable = None
        if state is None:
            try:
                state = await client.threads.get_state(thread_id, subgraphs=True)
            except httpx.HTTPStatusError as exc:  # langgraph-sdk's APIStatusError is one
                # The running code cannot even build this thread's state (a pydantic state whose
                # new requirement the stored values miss): judge the stored values themselves.
                unreadable = f"{exc.response.status_code}: {getattr(exc, 'message', None) or exc.response.text[:300]}"
                state = {"values": thread.get("values") or {}, "metadata": {}, "tasks": [], "next": []}
        # The code that wrote the latest checkpoint; a checkpoint written outside a run
        # (update_state) carries no run metadata: then the code the thread was last admitted
        # under (its metadata), then its last run's.
        stamped = (state.get("metadata") or {}).get(CONTRACT_KEY) or (thread.get("metadata") or {}).get(CONTRACT_KEY)
        if stamped is None:
            runs = await client.runs.list(thread_id, limit=1)
            stamped = ((runs[0].get("metadata") or {}) if runs else {}).get(CONTRACT_KEY)
        if stamped is not None and stamped == current:
            return None  # last ran under this very code
        lock = await self.lock(graph_id, stamped) if stamped else None
        # Stamped, yet its lock is not in a history that keeps this graph's locks: code that
        # ran with a stale lock (or whose lock was lost). Its shape is unknown.
        unknown = stamped is not None and lock is None and await asyncio.to_thread(self._keeps_locks, graph_id)
        candidate = await self.candidate(graph_id)
        tasks, namespaces = live.task_facts(state)
        # This server derives `next` and tasks with the running code: a step it no longer has
        # (a renamed node) is simply absent. The thread's own record of its interrupts holds
        # what paused it; one raised in a node the running code lacks is a lost step (matched
        # by node: a repaired thread paused in the same node has a new task id, and is not).
        lost = live.lost_nodes(live.lost_steps(thread, state, lock=lock, nodes=candidate.topology.nodes))
        tasks += [TaskFact(path=name, interrupted=True) for name in lost]
        state_values = state.get("values")
        snapshot = ThreadSnapshot(
            thread_id=thread_id,
            graph_id=graph_id,
            status=status,
            values=state_values if isinstance(state_values, dict) else {},
            pending=(*live.pending_paths(state), *lost),
            tasks=tuple(tasks),
            namespaces=namespaces,
            next=tuple(state.get("next") or ()),
            assistant_id=(thread.get("metadata") or {}).get("assistant_id"),
            ran=None,  # this server's history is derived with the running code too: use the lock's shape
        )
        live_graph = LiveGraph(
            graph_id=graph_id,
            topology=Topology.from_lock(lock) if lock else None,
            reducers={n: f["reducer"] for n, f in (lock.get("fields") or {}).items()} if lock else None,
            lock=lock,
        )
        accepted = await asyncio.to_thread(self.accepted, graph_id, await self.identity(graph_id))
        evaluator = Evaluator(
            live={graph_id: live_graph}, candidates={graph_id: candidate}, registered=set(self._specs), accepted=accepted
        )
        evaluator.add(snapshot)
        blocks = tuple(f for f in evaluator.findings() if f.severity == "block")
        if not blocks and unreadable:
            blocks = (
                Finding(
                    code=STATE_UNREADABLE,
                    severity="block",
                    graph_id=graph_id,
                    message=f"the running code cannot read this thread's state ({unreadable})",
                    help="repair the stored values (`playbook migrate`) or keep the schema accepting them",
                ),
            )
        if unknown and unknown_policy() == "refuse":
            blocks = (*blocks, self._unknown_finding(graph_id, str(stamped)))
        if not blocks:
            if unknown:
                logger.warning(
                    "thread %s of graph %r last ran code %s, whose lock is not in the lock history (%s): "
                    "admitted, judged against the running code alone (%s=admit)",
                    thread_id,
                    graph_id,
                    stamped,
                    self.contracts_dir / "history" / graph_id,
                    UNKNOWN_ENV,
                )
            return None
        note = ""
        if lock is None:
            note = (
                f" (the lock of the code this thread last ran, {stamped or 'unstamped: it predates the guard'}, "
                "is not in the lock history; it was judged against the running code alone)"
            )
        return Refusal(thread_id=thread_id, findings=blocks, lock_note=note)

    def accepted(self, graph_id: str, identity: str | None) -> dict[tuple[str, str, str | None], str]:
        """The findings the deployment's records accept for the running code of ``graph_id`` (blocking; cached)."""
        key = (graph_id, identity or "")
        if key not in self._accepted:
            from migrations_playbook.graphcode.contract import accepted_findings

            self._accepted[key] = accepted_findings(self.records_dir, {graph_id: identity or ""}) if identity else {}
        return self._accepted[key]

    def _unknown_finding(self, graph_id: str, stamped: str) -> Finding:
        return Finding(
            code=LOCK_UNKNOWN,
            severity="block",
            graph_id=graph_id,
            message=(
                f"it last ran under code {stamped}, whose lock is not in the lock history "
                f"({self.contracts_dir / 'history' / graph_id}): that code was deployed without its lock "
                "being written (a stale lock) or its lock was lost, so what it left on the thread cannot be checked"
            ),
            help=(
                "put that code's lock in the history (check out the code that ran it and run "
                "`playbook contract --write`, which keeps every lock it writes in history/), or set "
                f"{UNKNOWN_ENV}=admit to judge such threads against the running code alone"
            ),
        )
