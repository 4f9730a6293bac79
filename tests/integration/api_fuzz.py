"""Schema-driven fuzzing of a running `langgraph dev` (issue 26, "the method"): the engine.

`tests/integration/test_api_fuzz_server.py` drives it against real servers, in token mode
(alice, bob, an operator, anonymous callers and Studio's header) and in dev mode.

What it sends: every route and method the server's ``/openapi.json`` lists, with cases
schemathesis draws from the operation's schema, valid ones (positive) and invalid ones
(negative: wrong types, missing fields), then perturbed: a path or body id is swapped for
a real one (the caller's own, or another user's), an integer for a huge or negative one.
Plus methods the route does not serve, and deep and oddly typed bodies on every route with a
body (`tests/integration/api_fuzz_odd.py`). The served spec describes the API's own routes
with empty operations (a custom app's spec wins the merge in langgraph-api); those take
their definitions from the spec langgraph-api ships, which is what the routes implement
(`tests/integration/api_fuzz_spec.py`).

What it checks, after every request:

* no 5xx (`KNOWN_5XX` lists the ones already reported, each with its issue item; a 501 is
  accepted on the routes the runtime does not implement, `NOT_IMPLEMENTED`);
* no thread left busy with no run (wedged);
* a refusal (a 4xx, or a 2xx that answers an error, ``{"detail": ...}``: itself a finding)
  changed nothing: every thread (record, values, state, history, runs), assistant and store
  item of every user, and how many threads and assistants each user has, read back as its
  owner, is what it was before;
* a refusal of a request that carries another user's id does not say it exists;
* no response to one user carries another user's data: a foreign thread, run,
  checkpoint, assistant or store key id, or a marker only that user's data holds, that
  the request itself did not send.

A failure names the operation, the caller, the seed and a curl command that repeats it.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import httpx
import requests
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode

from tests.integration import hypothesis_setup  # noqa: F401  (before hypothesis draws anything)
from tests.integration.api_fuzz_spec import negatable

ODD_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE")

STREAM_SECONDS = 1.0
"""How long a response body is read (SSE routes stay open)."""

VERIFY_EVERY = 25
"""Refusals checked with one snapshot (a difference is then narrowed down request by request)."""

NO_NEGATIVE_CASES = frozenset(
    {"GET /threads/{thread_id}/stream", "GET /threads/{thread_id}/runs/{run_id}/stream", "POST /visible/{graph_id}/stream"}
)
"""Operations schemathesis finds no invalid data for (it tries for seconds before saying so)."""

HUGE_NUMBERS = (-1, -(2**63), 0, 2**31, 2**63, 10**30, -(10**30))

KNOWN_5XX: dict[tuple[str, str, int], str] = {
    ("DELETE", "/threads/{thread_id}/runs/{run_id}", 500): (
        "issue 26 item 1: deleting a run answers 500 (adelete_for_runs missing); being fixed"
    ),
}
"""5xx answers already reported: counted and printed, not failed (``FUZZ_STRICT=1`` fails them too).
The ones the fuzzer found first are refused with a 4xx now (`server/request_limits.py`,
`server/payload_middleware.py`) and enforced: an out-of-range integer, a store search
without ``namespace_prefix``, a ``values`` thread filter, ``/ui`` without a bundle, an
update_state naming no subgraph."""

NOT_IMPLEMENTED: dict[tuple[str, str], str] = {
    ("GET", "/threads/{thread_id}/storage"): (
        "langgraph-api reports checkpoint storage only for its built-in checkpointer; with this deployment's "
        "custom one it answers 501 Not Implemented, before reading the thread (so it tells nobody whether a "
        "thread exists). 501 is the right HTTP answer for a route the server does not implement: a 404 would "
        "read as 'no such thread' and a client could not tell the two apart"
    ),
}
"""Routes the runtime does not implement: their 501 (and only a 501) is accepted, in strict mode too."""

RUN_ROUTES = frozenset(
    {
        "/threads/{thread_id}/runs",
        "/threads/{thread_id}/runs/stream",
        "/threads/{thread_id}/runs/wait",
        "/runs",
        "/runs/stream",
        "/runs/wait",
        "/runs/batch",
    }
)

WEDGED = (
    "a thread is left busy with no run pending or running: every later run on it is a 409 'already running' "
    "(a run with after_seconds too large for a timedelta did this; it is refused with a 422 now)"
)


def known_5xx(method: str, template: str, status: int, kwargs: dict[str, Any]) -> str | None:
    """Why a 5xx is already reported, or None."""
    return KNOWN_5XX.get((method, template, status)) or KNOWN_5XX.get(("*", template, status))


def not_implemented(method: str, template: str, status: int) -> str | None:
    """Why a 501 on this route is the right answer, or None."""
    return NOT_IMPLEMENTED.get((method, template)) if status == 501 else None


# -- callers, seeded data, snapshots ---------------------------------------------------


@dataclass(frozen=True)
class Caller:
    name: str
    headers: dict[str, str]
    owner: str | None
    """Whose data the caller's requests act on (None: nobody's, e.g. anonymous)."""
    reads_all_threads: bool = False


@dataclass
class Owned:
    """What one user owns, as seeded: ids (looked for in others' responses) and markers."""

    owner: str
    caller: Caller
    marker: str
    threads: dict[str, str] = field(default_factory=dict)  # role -> thread id
    runs: list[str] = field(default_factory=list)
    checkpoints: list[str] = field(default_factory=list)
    assistants: list[str] = field(default_factory=list)
    store_keys: list[str] = field(default_factory=list)

    def thread_secrets(self) -> set[str]:
        """What reveals the user's threads (an operator may read these)."""
        return {self.marker, *self.threads.values(), *self.runs, *self.checkpoints}

    def private_secrets(self) -> set[str]:
        """What nobody else may read: their assistants and store items."""
        return {f"{self.marker}-asst", f"{self.marker}-store", *self.assistants, *self.store_keys}


def _user(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


class World:
    """One server, its callers, what they own, and the before/after reads."""

    def __init__(self, url: str, callers: list[Caller], owners: list[str]) -> None:
        self.url = url
        self.callers = {c.name: c for c in callers}
        self.http = httpx.Client(base_url=url, timeout=60)
        self.pool = ThreadPoolExecutor(8)
        self.owned: dict[str, Owned] = {}
        self.owner_callers = [self.callers[o] for o in owners]
        self.wedged: set[str] = set()
        """Threads left marked busy with no run (see WEDGED)."""
        self.snapshot_callers = [c for c in callers if c.owner is not None]

    def close(self) -> None:
        self.pool.shutdown()
        self.http.close()

    def call(self, caller: Caller, method: str, path: str, **kwargs: Any) -> Any:
        response = self.http.request(method, path, headers=caller.headers, **kwargs)
        response.raise_for_status()
        return response.json() if response.content else None

    # seeding

    def seed_owner(self, caller: Caller, *, ticket: bool = True) -> Owned:
        assert caller.owner is not None
        marker = f"MARK{uuid.uuid4().hex[:12]}"
        owned = Owned(owner=caller.owner, caller=caller, marker=marker)
        chat = self.call(caller, "POST", "/threads", json={"metadata": {"marker": marker}})["thread_id"]
        owned.threads["chat"] = chat
        jobs = [(chat, "recycling_guide", f"{marker} 캔은 어떻게 버려?")]
        if ticket:
            owned.threads["ticket"] = self.call(caller, "POST", "/threads", json={"metadata": {"marker": marker}})["thread_id"]
            jobs.append((owned.threads["ticket"], "ticket_triage", f"{marker} please refund the double charge"))
        for thread_id, graph, text in jobs:
            self.call(caller, "POST", f"/threads/{thread_id}/runs/wait", json={"assistant_id": graph, "input": _user(text)})
            owned.runs += [r["run_id"] for r in self.call(caller, "GET", f"/threads/{thread_id}/runs")]
            owned.checkpoints += [
                c["checkpoint"]["checkpoint_id"] for c in self.call(caller, "POST", f"/threads/{thread_id}/history", json={})
            ]
        assistant = self.call(
            caller, "POST", "/assistants", json={"graph_id": "recycling_guide", "name": f"{marker}-asst", "metadata": {}}
        )
        owned.assistants.append(assistant["assistant_id"])
        key = f"{marker}-key"
        self.call(caller, "PUT", "/store/items", json={"namespace": ["notes"], "key": key, "value": {"v": f"{marker}-store"}})
        owned.store_keys.append(key)
        self.owned[caller.owner] = owned
        return owned

    # snapshots

    def _reads(self, caller: Caller) -> list[tuple[str, str, str, dict[str, Any] | None]]:
        reads: list[tuple[str, str, str, dict[str, Any] | None]] = [
            ("threads", "POST", "/threads/search", {"limit": 1000}),
            ("threads.count", "POST", "/threads/count", {}),
            ("assistants", "POST", "/assistants/search", {"limit": 1000}),
            ("assistants.count", "POST", "/assistants/count", {}),
            ("store", "POST", "/store/items/search", {"namespace_prefix": [], "limit": 1000}),
        ]
        owned = self.owned.get(caller.owner or "")
        for role, thread_id in (owned.threads if owned else {}).items():
            reads += [
                (f"{role}.history", "POST", f"/threads/{thread_id}/history", {"limit": 1000}),
                (f"{role}.runs", "GET", f"/threads/{thread_id}/runs?limit=1000", None),
            ]
        return reads

    def snapshot(self) -> dict[str, Any]:
        """Everything of every owner, read as that owner (in parallel)."""
        jobs = [(caller, read) for caller in self.snapshot_callers for read in self._reads(caller)]

        def one(job: tuple[Caller, tuple[str, str, str, dict[str, Any] | None]]) -> tuple[str, Any]:
            caller, (name, method, path, body) = job
            response = self.http.request(method, path, headers=caller.headers, json=body)
            return f"{caller.name}:{name}", (response.status_code, response.json() if response.content else None)

        return dict(self.pool.map(one, jobs))

    def busy(self) -> bool:
        """Whether a run is going on any thread. A thread marked busy with no run pending or
        running is wedged (`wedged`), not busy: waiting would never end."""
        for caller in self.snapshot_callers:
            found = self.http.post("/threads/search", headers=caller.headers, json={"status": "busy", "limit": 20})
            for thread in found.json() if found.status_code == 200 else []:
                runs = self.http.get(f"/threads/{thread['thread_id']}/runs", headers=caller.headers)
                if runs.status_code == 200 and any(r["status"] in ("pending", "running") for r in runs.json()):
                    return True
                self.wedged.add(thread["thread_id"])
        return False

    def still_wedged(self) -> bool:
        """Whether a thread seen busy with no run still is, after a while (not a run just finishing)."""
        time.sleep(1)
        self.wedged.clear()
        self.busy()
        return bool(self.wedged)

    def settle(self, *, runs: bool = True, timeout: float = 60) -> dict[str, Any]:
        """A snapshot once nothing runs and two reads agree (runs a request started finish;
        a stateless run's temporary thread goes). ``runs=False``: no run can be going, one read."""
        if not runs:
            return self.snapshot()
        deadline = time.monotonic() + timeout
        previous = None
        while time.monotonic() < deadline:
            if self.busy():
                time.sleep(0.2)
                continue
            current = self.snapshot()
            if current == previous:
                return current
            previous = current
            time.sleep(0.3)
        raise AssertionError("the server did not settle: a run started by a fuzz request is still going")

    def restore(self) -> None:
        """Seed again what an accepted request removed (a deleted seeded thread or assistant)."""
        for owner, owned in list(self.owned.items()):
            caller = owned.caller
            gone = [
                t for t in owned.threads.values() if self.http.get(f"/threads/{t}", headers=caller.headers).status_code == 404
            ]
            gone += [a for a in owned.assistants if self.http.get(f"/assistants/{a}", headers=caller.headers).status_code == 404]
            if gone:
                self.seed_owner(caller, ticket="ticket" in owned.threads)
                self.owned[owner].runs += owned.runs  # the old ids stay secrets
                self.owned[owner].checkpoints += owned.checkpoints


# -- cases -----------------------------------------------------------------------------


@dataclass
class Finding:
    kind: str
    operation: str
    caller: str
    status: int | None
    detail: str
    curl: str

    def __str__(self) -> str:
        return f"[{self.kind}] {self.operation} as {self.caller} -> {self.status}: {self.detail}\n    {self.curl}"


@dataclass
class Tally:
    sent: int = 0
    by_status: dict[int, int] = field(default_factory=dict)
    known: dict[str, int] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    verified: int = 0
    """4xx answers checked against a snapshot."""


def _id_pools(world: World) -> dict[str, list[str]]:
    pools: dict[str, list[str]] = {
        "thread_id": [str(uuid.uuid4())],
        "run_id": [str(uuid.uuid4())],
        "checkpoint_id": [str(uuid.uuid4())],
        "assistant_id": ["ticket_triage", "recycling_guide", "fan_room", "campus_supervisor"],
        "graph_id": ["recycling_guide", "fan_room", "ticket_triage"],
    }
    for owned in world.owned.values():
        pools["thread_id"] += list(owned.threads.values())
        pools["run_id"] += owned.runs[-2:]
        pools["checkpoint_id"] += owned.checkpoints[:1] + owned.checkpoints[-1:]
        pools["assistant_id"] += owned.assistants
    return pools


def _perturb(case: Any, draw: Callable[..., Any], pools: dict[str, list[str]]) -> None:
    """Swap generated ids for real ones and integers for huge or negative ones, some of the time."""
    for name in list(case.path_parameters or {}):
        if name in pools and draw(st.booleans()):
            case.path_parameters = {**case.path_parameters, name: draw(st.sampled_from(pools[name]))}
    if isinstance(case.body, dict):
        body = dict(case.body)
        for name in list(body):
            if name in pools and draw(st.booleans()):
                body[name] = draw(st.sampled_from(pools[name]))
            elif isinstance(body[name], int) and not isinstance(body[name], bool) and draw(st.booleans()):
                body[name] = draw(st.sampled_from(HUGE_NUMBERS))
        case.body = body
    if isinstance(case.query, dict) and case.query:
        query = dict(case.query)
        for name, value in query.items():
            if isinstance(value, int) and not isinstance(value, bool) and draw(st.booleans()):
                query[name] = draw(st.sampled_from(HUGE_NUMBERS))
        case.query = query


def _read_body(response: requests.Response) -> bytes:
    deadline = time.monotonic() + STREAM_SECONDS
    chunks: list[bytes] = []
    try:
        for chunk in response.iter_content(chunk_size=None):
            chunks.append(chunk)
            if time.monotonic() > deadline or sum(map(len, chunks)) > 2_000_000:
                break
    except requests.RequestException:
        pass  # a stream cut by the read timeout: what came is what is checked
    finally:
        response.close()
    return b"".join(chunks)


def _request_text(kwargs: dict[str, Any]) -> str:
    return json.dumps({k: kwargs.get(k) for k in ("url", "params", "json", "data")}, default=str, ensure_ascii=False) + str(
        kwargs.get("url")
    )


def _starts_runs(template: str) -> bool:
    """Whether an accepted request on this route can leave a run going."""
    return any(part in template for part in ("/runs", "/visible/", "/a2a/", "/mcp", "/commands"))


def error_answer(status: int, body: bytes) -> str | None:
    """The error a 2xx answers with, or None: ``{"detail": ...}`` is how the server refuses, and
    ``POST /threads`` with supersteps it could not write answered 201 with one (the thread made)."""
    if not 200 <= status < 300:
        return None
    try:
        answer = json.loads(body)
    except ValueError:
        return None
    return str(answer["detail"]) if isinstance(answer, dict) and set(answer) == {"detail"} else None


EXISTS = ("already exists", "exists already")
"""Words of an answer that confirm a resource exists (the server's own 409 for a taken id)."""


def _changed(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    return sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))


@dataclass
class Pending:
    """A refused request not yet checked against a snapshot."""

    finding: Finding
    caller: Caller
    kwargs: dict[str, Any]


def foreign_secrets(world: World, caller: Caller) -> set[str]:
    """What ``caller`` must never be answered with."""
    secrets: set[str] = set()
    for owned in world.owned.values():
        if owned.owner == caller.owner:
            continue
        if not caller.reads_all_threads:
            secrets |= owned.thread_secrets()
        secrets |= owned.private_secrets()
    return secrets


class Fuzzer:
    """Sends cases and checks them; one per server."""

    def __init__(self, world: World, operations: list[Any], *, seed_value: int, examples: int, strict: bool) -> None:
        self.world = world
        self.operations = operations
        self.seed = seed_value
        self.examples = examples
        self.strict = strict
        self.session = requests.Session()
        self.tally = Tally()
        self.pending: list[Pending] = []
        self.baseline = world.settle()

    def send(self, caller: Caller, kwargs: dict[str, Any]) -> tuple[int, bytes]:
        kwargs = dict(kwargs)
        kwargs["headers"] = {**(kwargs.get("headers") or {}), **caller.headers}
        response = self.session.request(**kwargs, stream=True, timeout=(5, STREAM_SECONDS + 2), allow_redirects=False)
        return response.status_code, _read_body(response)

    def check(
        self, label: str, template: str, caller: Caller, kwargs: dict[str, Any], status: int, body: bytes, curl: str
    ) -> None:
        tally = self.tally
        tally.sent += 1
        tally.by_status[status] = tally.by_status.get(status, 0) + 1
        method = label.split(" ", 1)[0]
        if accepted := not_implemented(method, template, status):
            what = f"{method} {template} {status} (accepted): {accepted}"
            tally.known[what] = tally.known.get(what, 0) + 1
        elif status >= 500:
            known = known_5xx(method, template, status, kwargs)
            if known and not self.strict:
                what = f"{method} {template} {status}: {known}"
                tally.known[what] = tally.known.get(what, 0) + 1
            else:
                tally.findings.append(Finding("5xx", label, caller.name, status, body[:300].decode(errors="replace"), curl))
        text = body.decode(errors="replace")
        sent = _request_text(kwargs)
        secrets = foreign_secrets(self.world, caller)
        leaked = sorted(s for s in secrets if s in text and s not in sent)
        if leaked:
            tally.findings.append(Finding("leak", label, caller.name, status, f"answered with {leaked}: {text[:300]}", curl))
        if 400 <= status < 500 and any(word in text for word in EXISTS) and any(s in sent for s in secrets):
            tally.findings.append(
                Finding("exists", label, caller.name, status, f"confirms another user's id exists: {text[:300]}", curl)
            )
        if (error := error_answer(status, body)) is not None:
            tally.findings.append(Finding("error-as-success", label, caller.name, status, error[:300], curl))
        if 400 <= status < 500 or error is not None:
            self.pending.append(Pending(Finding("refusal-changed", label, caller.name, status, "", curl), caller, kwargs))
            if len(self.pending) >= VERIFY_EVERY:
                self.verify()
        elif method != "GET" or status >= 500:
            # It may have changed things: a new baseline, and the refusals before it are sent
            # again on it, so that what they change is not mistaken for what this one did.
            self.world.restore()
            self.baseline = self.world.settle(runs=_starts_runs(template))
            self.verify(replay=True)

    def refused_again(self, pending: Pending) -> bool:
        """Send a refused request again; whether it is refused again (a 4xx, or a 2xx answering an error)."""
        status, body = self.send(pending.caller, pending.kwargs)
        return 400 <= status < 500 or error_answer(status, body) is not None

    def verify(self, *, replay: bool = False) -> None:
        """The refusals since the last check changed nothing: one snapshot for all of them;
        when it differs, each is sent again alone to find which one."""
        pending, self.pending = self.pending, []
        if replay:
            pending = [p for p in pending if self.refused_again(p)]
        if not pending:
            return
        after = self.world.snapshot()
        self.tally.verified += len(pending)
        if after == self.baseline:
            return
        group = [f"{p.finding.operation} as {p.caller.name} -> {p.finding.status}" for p in pending]
        self.baseline = self.world.settle(runs=True)
        culprits = []
        for p in pending:
            if not self.refused_again(p):
                continue
            again = self.world.snapshot()
            if again != self.baseline:
                p.finding.detail = f"a refused request changed {_changed(self.baseline, again)}"
                culprits.append(p.finding)
                self.baseline = self.world.settle(runs=True)
        if not culprits:
            first = pending[0].finding
            first.detail = f"one of these refused requests changed {_changed(self.baseline, after)} (not one alone): {group}"
            culprits.append(first)
        self.tally.findings += culprits

    def run_operation(self, operation: Any, mode: GenerationMode, callers: list[Caller], index: int) -> None:
        pools = _id_pools(self.world)
        label = operation.label

        @settings(
            max_examples=self.examples,
            database=None,
            deadline=None,
            phases=[Phase.explicit, Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        @seed(self.seed + index)
        @given(case=operation.as_strategy(generation_mode=mode), data=st.data())
        def one(case: Any, data: Any) -> None:
            caller = data.draw(st.sampled_from(callers), label="caller")
            _perturb(case, data.draw, pools)
            kwargs = case.as_transport_kwargs(base_url=self.world.url)
            try:
                status, body = self.send(caller, kwargs)
            except requests.RequestException as exc:
                self.tally.findings.append(Finding("no-answer", label, caller.name, None, repr(exc), case.as_curl_command()))
                return
            headers = " ".join(f"-H '{k}: {v}'" for k, v in caller.headers.items())
            self.check(label, operation.path, caller, kwargs, status, body, f"{case.as_curl_command()} {headers}")

        started = time.monotonic()
        try:
            one()
        except Unsatisfiable:
            self.tally.skipped.append(f"{label} {mode.value}: no {mode.value} case can be drawn")
        self.tally.seconds[f"{label} {mode.value}"] = time.monotonic() - started

    def run(self, callers: list[Caller], *, include: Callable[[Any], bool] = lambda op: True) -> Tally:
        for index, operation in enumerate(self.operations):
            if not include(operation):
                self.tally.skipped.append(f"{operation.label}: excluded")
                continue
            self.run_operation(operation, GenerationMode.POSITIVE, callers, index)
            if negatable(operation) and operation.label not in NO_NEGATIVE_CASES:
                self.run_operation(operation, GenerationMode.NEGATIVE, callers, 1000 + index)
        self.verify()
        if self.world.wedged and self.world.still_wedged():
            self.tally.findings.append(
                Finding("wedged", "any", "-", None, f"{sorted(self.world.wedged)}: {WEDGED}", "(see the requests above)")
            )
        return self.tally

    def odd_methods(self, served: dict[str, Any], callers: list[Caller], *, include: Callable[[str], bool]) -> Tally:
        """Every served path with methods it does not serve, and a body that is not JSON."""
        for n, (path, ops) in enumerate(sorted(served["paths"].items())):
            if not include(path):
                continue
            served_methods = {m.upper() for m in ops}
            concrete = "/".join(str(uuid.uuid4()) if part.startswith("{") else part for part in path.split("/"))
            for m, method in enumerate(x for x in ODD_METHODS if x not in served_methods):
                caller = callers[(n + m) % len(callers)]
                kwargs = {"method": method, "url": f"{self.world.url}{concrete}", "data": b"\xff{not json", "headers": {}}
                try:
                    status, body = self.send(caller, kwargs)
                except requests.RequestException as exc:
                    self.tally.findings.append(Finding("no-answer", f"{method} {path}", caller.name, None, repr(exc), ""))
                    continue
                curl = f"curl -X {method} '{self.world.url}{concrete}' --data-binary $'\\xff{{not json'"
                self.check(f"{method} {path}", path, caller, kwargs, status, body, curl)
        self.verify()
        return self.tally


def summary(name: str, tally: Tally, seed_value: int, seconds: float) -> str:
    lines = [
        f"{name}: {tally.sent} requests in {seconds:.1f}s, seed {seed_value} (FUZZ_SEED={seed_value} reruns it), "
        f"statuses {dict(sorted(tally.by_status.items()))}, {tally.verified} refusals checked against a snapshot",
    ]
    slowest = sorted(tally.seconds.items(), key=lambda kv: -kv[1])[:12]
    lines.append("  slowest: " + ", ".join(f"{k} {v:.1f}s" for k, v in slowest))
    lines += [f"  skipped: {s}" for s in tally.skipped]
    lines += [f"  known ({count}x): {what}" for what, count in tally.known.items()]
    lines += [f"  FINDING {finding}" for finding in tally.findings]
    return "\n".join(lines)


def iter_paths(served: dict[str, Any]) -> Iterator[str]:
    yield from served["paths"]
