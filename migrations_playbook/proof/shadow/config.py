"""Each side's whole `langgraph.json`, tried as the threads' owners meet it: every thread read back on every copy.

A staging copy is served with its own side's project and `langgraph.json` in full (`staging/live_copy.py`):
its auth, its http app and middleware, its store, its checkpointer and serde settings (``pickle_fallback``,
``allowed_json_modules``), its env. What a configuration change breaks shows when a client reads a thread
through it, so before anything runs every live thread is read back on each side (`read_back`), as each
identity of ``--identity NAME=HEADER`` (else as the ``--header`` the live server was read with):

* which threads the identity's thread search lists (who can see what: the auth's filters);
* the thread's state, as its owner (the first identity the live server lists it for) reads it: does the
  side read the stored bytes at all (a serde that refuses pickled values answers 500), and read them as the
  deployed code does.

`judge_read_back` sets the candidate's answers against the deployed code's (A), with what two copies of the
deployed code already answer differently (A against A2) not held against it. One rule per finding code:

* ``SHADOW_OWNER_LOCKED_OUT``: an identity that reads a thread on the deployed code's copy cannot on the
  candidate's (its token no longer authenticates, a filter keys on another field, a middleware refuses it);
* ``SHADOW_THREAD_EXPOSED``: an identity the deployed code does not show a thread to reads it on the candidate;
* ``SHADOW_STORED_UNREADABLE``: the candidate's server fails reading a thread's stored state the deployed code
  reads (a serde setting that refuses what is stored, a checkpointer that cannot open it);
* ``SHADOW_STORED_MISREAD``: a stored value reads back as another value on the candidate, with no run in
  between (a serde allow-list that drops a type to null).

The drive (`api.drive_side`) then runs each thread as its owner, so a copy whose auth refuses anonymous
requests is driven as the live clients drive it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from migrations_playbook.errors import UsageError
from migrations_playbook.model import Finding
from migrations_playbook.proof.shadow.compare import flatten
from migrations_playbook.sources.budget import Deadline

CONCURRENCY = 8
"""Threads read at once on one side."""
SEARCH_PAGE = 200
HEADER_IDENTITY = "(--header)"
"""The identity of the live ``--header`` (or of no header), when no ``--identity`` is given."""

WHY = {
    "SHADOW_OWNER_LOCKED_OUT": "a user who reads the thread through the deployed code's langgraph.json (its auth, "
    "middleware and http app) is refused by the candidate's: every client of that user loses the thread",
    "SHADOW_THREAD_EXPOSED": "the candidate's configuration shows the thread to a user the deployed code does not: "
    "another user's conversation leaks",
    "SHADOW_STORED_UNREADABLE": "the candidate's server cannot read what is stored for the thread (its serde or "
    "checkpointer settings refuse the stored bytes): every request on the thread fails",
    "SHADOW_STORED_MISREAD": "the candidate's server reads the stored state as other values with no run in between "
    "(a serde setting decodes the stored bytes differently): the thread resumes on data it never had",
}
HELP = {
    "SHADOW_OWNER_LOCKED_OUT": "Keep the auth accepting the tokens live clients hold and filtering on the metadata the "
    "live threads carry (or migrate that metadata first with `playbook migrate`); reproduce with `playbook shadow ... "
    "--identity NAME='Authorization: Bearer ...'` and read the thread as that user on both copies.",
    "SHADOW_THREAD_EXPOSED": "Keep the auth's filters at least as narrow as the deployed code's: a thread's owner "
    "metadata must still decide who reads it.",
    "SHADOW_STORED_UNREADABLE": "Keep the checkpointer's serde settings able to read what the live threads hold "
    "(`pickle_fallback: true` while pickled values remain, every stored type in the allow-lists), or rewrite the "
    "stored values first (`playbook migrate`).",
    "SHADOW_STORED_MISREAD": "List every type the live threads store in the checkpointer's serde allow-lists "
    "(`allowed_json_modules`, `allowed_msgpack_modules`) before narrowing them.",
}


@dataclass(frozen=True)
class Identity:
    """A user of the live deployment, as its clients authenticate."""

    name: str
    headers: Mapping[str, str]


def parse_identities(texts: Sequence[str], fallback: Mapping[str, str]) -> list[Identity]:
    """``NAME=Header: value`` (``--identity``, repeatable; one name may carry several headers) -> identities, in
    the order first given; with none, the live ``--header`` (``fallback``) as the one identity."""
    found: dict[str, dict[str, str]] = {}
    for text in texts:
        name, sep, header = text.partition("=")
        key, colon, value = header.partition(":")
        if not sep or not name.strip() or not colon or not key.strip():
            raise UsageError(
                f"--identity {text!r}: expected NAME=Header: value, e.g. 'alice=Authorization: Bearer <alice's token>'"
            )
        found.setdefault(name.strip(), {})[key.strip()] = value.strip()
    if not found:
        return [Identity(HEADER_IDENTITY, dict(fallback))]
    return [Identity(name, headers) for name, headers in found.items()]


Outcome = Literal["ok", "refused", "error"]


@dataclass(frozen=True)
class ReadState:
    """One read of a thread's state."""

    outcome: Outcome
    """``ok``; ``refused`` (401, 403, 404: the caller may not see it); ``error`` (any other answer, a dropped
    connection: the server could not read it)."""
    detail: str = ""
    values: Any = None


@dataclass
class ReadBack:
    """What one side answered reading the threads back."""

    label: str
    visible: dict[str, set[str]] = field(default_factory=dict)
    """Identity -> the threads (of those searched: every live thread) its thread search lists."""
    states: dict[str, ReadState] = field(default_factory=dict)
    """Thread id -> its state as its owner read it (the threads the proof runs: classed and sampled)."""
    searched: set[str] = field(default_factory=set)
    """Every live thread: whose listing each identity's search is compared on."""
    notes: list[str] = field(default_factory=list)


def _client(url: str, headers: Mapping[str, str], deadline: Deadline | None) -> Any:
    from langgraph_sdk import get_client

    from migrations_playbook.sources.api.reads import short_keepalive

    return short_keepalive(get_client(url=url, headers=dict(headers) or None, api_key=None), deadline=deadline)


async def visible_threads(url: str, identity: Identity, known: set[str], deadline: Deadline | None) -> set[str] | str:
    """The threads of ``known`` the identity's thread search lists on the server at ``url``, or why none could be
    listed (the server refused the search itself: an identity it does not authenticate sees nothing)."""
    from langgraph_sdk.errors import APIStatusError

    from migrations_playbook.sources.api.paging import PageProgress, offset_pages, server_of
    from migrations_playbook.sources.api.reads import STABLE_ORDER

    client = _client(url, identity.headers, deadline)

    async def fetch(offset: int) -> list[Mapping[str, Any]]:
        found = await client.threads.search(limit=SEARCH_PAGE, offset=offset, select=["thread_id"], **STABLE_ORDER)
        return [t for t in found if isinstance(t, Mapping)]

    seen: set[str] = set()
    try:
        progress = PageProgress(server_of(client), "POST /threads/search", "threads")
        async for page in offset_pages(fetch, size=SEARCH_PAGE, key=lambda t: str(t.get("thread_id")), progress=progress):
            seen.update(str(t.get("thread_id")) for t in page)
    except APIStatusError as exc:
        return f"{exc.status_code}: {str(exc)[:200]}"
    finally:
        await client.aclose()
    return seen & known


async def read_state(client: Any, thread_id: str) -> ReadState:
    """``thread_id``'s state through ``client``, classed."""
    import httpx
    from langgraph_sdk.errors import APIStatusError

    try:
        state = await client.threads.get_state(thread_id, subgraphs=True)
    except APIStatusError as exc:
        outcome: Outcome = "refused" if exc.status_code in (401, 403, 404) else "error"
        return ReadState(outcome, f"{exc.status_code}: {str(exc)[:300]}")
    except httpx.TransportError as exc:  # an unhandled error while building the state drops the connection
        return ReadState("error", f"{type(exc).__name__}: the server dropped the connection reading the state")
    values = state.get("values") if isinstance(state, Mapping) else None
    return ReadState("ok", values=values)


def owners_of(visible: Mapping[str, set[str] | str], identities: Sequence[Identity]) -> dict[str, Identity]:
    """Thread id -> the identity that reads it as its owner: the first (in the order given) whose search on the
    live server lists it."""
    owners: dict[str, Identity] = {}
    for identity in identities:
        seen = visible.get(identity.name)
        if isinstance(seen, set):
            for thread_id in seen:
                owners.setdefault(thread_id, identity)
    return owners


async def live_visibility(
    url: str, identities: Sequence[Identity], known: set[str], deadline: Deadline | None
) -> dict[str, set[str] | str]:
    """Identity name -> the threads of ``known`` it lists on the live server (or why it lists none)."""
    found = await asyncio.gather(*(visible_threads(url, i, known, deadline) for i in identities))
    return {identity.name: seen for identity, seen in zip(identities, found, strict=True)}


async def read_back(
    label: str,
    url: str,
    identities: Sequence[Identity],
    owners: Mapping[str, Identity],
    known: set[str],
    *,
    states_of: set[str] | None = None,
    deadline: Deadline | None = None,
) -> ReadBack:
    """The threads of ``known`` read back on the side at ``url``: each identity's search (every thread of
    ``known``: paged, so cheap at any count), and the state of each thread of ``states_of`` (default: all of
    ``known``) as its owner (``owners``; a thread no identity lists on the live server is read as the first
    identity). The states read are the threads the proof runs (one per class plus a sample): a read per thread and
    side at 10,000 threads would cost more than the whole proof, and threads of one class store the same shapes."""
    side = ReadBack(label=label, searched=set(known))
    for identity, seen in zip(
        identities, await asyncio.gather(*(visible_threads(url, i, known, deadline) for i in identities)), strict=True
    ):
        if isinstance(seen, str):
            side.notes.append(f"{identity.name}'s thread search was refused: {seen}")
            seen = set()
        side.visible[identity.name] = seen
    gate = asyncio.Semaphore(CONCURRENCY)
    clients = {i.name: _client(url, i.headers, deadline) for i in identities}
    try:

        async def one(thread_id: str) -> None:
            owner = owners.get(thread_id, identities[0])
            async with gate:
                side.states[thread_id] = await read_state(clients[owner.name], thread_id)

        await asyncio.gather(*(one(t) for t in sorted(known if states_of is None else states_of & known)))
    finally:
        for client in clients.values():
            await client.aclose()
    return side


# -- the rules ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReadDiff:
    code: str
    thread_id: str
    identity: str
    detail: str


def _locked_out(thread_id: str, name: str, a: ReadBack, b: ReadBack, owner: str) -> str | None:
    listed_a, listed_b = thread_id in a.visible.get(name, set()), thread_id in b.visible.get(name, set())
    if listed_a and not listed_b:
        return "its thread search no longer lists the thread"
    if name == owner and a.states.get(thread_id, _MISSING).outcome == "ok":
        read_b = b.states.get(thread_id, _MISSING)
        if read_b.outcome == "refused":
            return f"reading its state is refused ({read_b.detail[:160]})"
    return None


_MISSING = ReadState("refused", "not read")


def _misread(a: Any, b: Any) -> list[str]:
    """Value paths both sides hold that read back as other values."""
    flat_a, flat_b = flatten(a), flatten(b)
    return sorted(p for p in set(flat_a) & set(flat_b) if flat_a[p] != flat_b[p])


def read_diffs(a: ReadBack, a2: ReadBack, b: ReadBack, owners: Mapping[str, str], identities: Sequence[str]) -> list[ReadDiff]:
    """How the candidate's side (``b``) answers the reads otherwise than the deployed code's (``a``), leaving out
    what a second copy of the deployed code (``a2``) already answers otherwise."""
    diffs: list[ReadDiff] = []
    for thread_id in sorted(a.searched | set(a.states)):
        owner = owners.get(thread_id, identities[0] if identities else HEADER_IDENTITY)
        for name in identities:
            why = _locked_out(thread_id, name, a, b, owner)
            if why is not None and _locked_out(thread_id, name, a, a2, owner) is None:
                diffs.append(ReadDiff("SHADOW_OWNER_LOCKED_OUT", thread_id, name, why))
            exposed = thread_id in b.visible.get(name, set()) and thread_id not in a.visible.get(name, set())
            if exposed and thread_id not in a2.visible.get(name, set()):
                diffs.append(ReadDiff("SHADOW_THREAD_EXPOSED", thread_id, name, "its thread search lists the thread"))
        read_a, read_a2, read_b = (side.states.get(thread_id, _MISSING) for side in (a, a2, b))
        if thread_id not in a.states or read_a.outcome != "ok":
            continue
        if read_b.outcome == "error" and read_a2.outcome == "ok":
            why = f"reading its state fails: {read_b.detail[:200]}"
            diffs.append(ReadDiff("SHADOW_STORED_UNREADABLE", thread_id, owner, why))
        elif read_b.outcome == "ok" and read_a2.outcome == "ok":
            noise = set(_misread(read_a.values, read_a2.values))
            changed = [p for p in _misread(read_a.values, read_b.values) if p not in noise]
            if changed:
                diffs.append(
                    ReadDiff(
                        "SHADOW_STORED_MISREAD",
                        thread_id,
                        owner,
                        "its stored state reads back as other values at " + ", ".join(changed[:5]),
                    )
                )
    return diffs


def judge_read_back(
    a: ReadBack,
    a2: ReadBack,
    b: ReadBack,
    owners: Mapping[str, str],
    identities: Sequence[str],
    graph_of: Mapping[str, str],
) -> tuple[list[Finding], list[str]]:
    """The findings of the read-back (one per code, graph and identity, naming the threads) and its notes."""
    findings: dict[tuple[str, str, str], Finding] = {}
    for diff in read_diffs(a, a2, b, owners, identities):
        graph_id = graph_of.get(diff.thread_id, "(unknown)")
        key = (diff.code, graph_id, diff.identity)
        if key not in findings:
            findings[key] = Finding(
                code=diff.code,
                severity="block",
                graph_id=graph_id,
                field=None,
                message=f"thread {diff.thread_id}, read as {diff.identity} on the candidate's copy: {diff.detail}",
                why=WHY[diff.code],
                help=HELP[diff.code],
            )
        findings[key].add_thread(diff.thread_id)
    readable = sum(1 for s in a.states.values() if s.outcome == "ok")
    notes = [
        f"langgraph.json: every copy served with its side's whole configuration (auth, http app, store, checkpointer "
        f"and serde settings, env); {len(a.searched)} thread(s) listed on each by the thread search of "
        + (", ".join(identities) if identities else HEADER_IDENTITY)
        + f", the stored state of {len(a.states)} (the threads run) read back as their owners"
        + f" ({readable} readable on the deployed code's copy)"
    ]
    for side in (a, a2, b):
        notes += [f"{side.label} read-back: {n}" for n in side.notes]
    return list(findings.values()), notes
