"""Every assistant the live deployment stores, run through its graph on both codes (`playbook shadow`).

An assistant is stored configuration a deploy does not touch: ``config.configurable`` values, a ``context``,
metadata, kept on the server and applied to every run that names the assistant. A candidate that renames a
required context key, rejects a stored value, or reads the setting under another name breaks every run made
through it, on threads old and new. The threads' own drive (`api.py`) only sends the assistant a thread last
ran with; an assistant no thread ran with, or one whose threads were not sampled, is driven here:

* **read** from the live server, paged, as each ``--identity`` (an assistant is often its creator's), with its
  stored config, context and metadata; the graphs' own assistants (``created_by: system``) are the baseline;
* **copied** onto each side as the live server holds it: a copy of the persistence folder already holds it
  (checked); a side that lacks it (a staging URL) gets it created with the same id, config, context and
  metadata;
* **classed and sampled** like threads: a class is (graph, the stored configurable keys, the stored context
  keys); one assistant per class runs, plus a seeded sample (``--sample``), or every one (``--all``);
* **run** on a fresh thread on each side with a representative input (``--turn-input GRAPH=JSON``, else the
  last input of a live thread of that graph), once under the stored assistant and once under the graph's
  default assistant (the graph id), A first, then A2 and B with the same requests.

`judge_assistants`, one rule per code:

* ``SHADOW_ASSISTANT_BROKEN``: the run under the stored assistant goes wrong on the candidate in a way that
  blocks a thread (it fails or is refused, a step fails or is skipped, an output key is dropped...) where the
  deployed code runs it, beyond what two runs of the deployed code already differ in;
* ``SHADOW_ASSISTANT_SETTING_IGNORED``: the stored settings change the run's result on the deployed code (on
  both of its copies) and change nothing on the candidate, whose result under the stored assistant is no
  longer the deployed code's: the candidate no longer reads the setting (read under another name, every
  stored assistant silently falls back to the default). A proof, not a guess: both runs are on each side.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from migrations_playbook.model import Finding
from migrations_playbook.proof.resume import ResumeRule
from migrations_playbook.proof.shadow.compare import BLOCKING, compare_thread, general, noise_paths, observed
from migrations_playbook.proof.shadow.config import Identity
from migrations_playbook.proof.shadow.drive import ThreadFacts
from migrations_playbook.proof.shadow.traces import RunRequest, ThreadTrace
from migrations_playbook.sources.budget import Deadline

SEED = 38
CONCURRENCY = 4
SYSTEM_KEY, SYSTEM_VALUE = "created_by", "system"

WHY = {
    "SHADOW_ASSISTANT_BROKEN": "a run through an assistant the live deployment stores goes wrong on the candidate: "
    "every client (and thread) using that assistant breaks with the deploy",
    "SHADOW_ASSISTANT_SETTING_IGNORED": "the assistant's stored setting changes the run on the deployed code and "
    "changes nothing on the candidate: the candidate no longer reads it (renamed, moved), so every stored assistant "
    "silently falls back to the default",
}
HELP = {
    "SHADOW_ASSISTANT_BROKEN": "Keep the candidate accepting the stored assistants' config and context (read the old "
    "key beside the new one, keep a renamed context field optional with the old name still read), or update the "
    "assistants (`client.assistants.update`) before the deploy; reproduce with `playbook shadow ... --graph G`.",
    "SHADOW_ASSISTANT_SETTING_IGNORED": "Read the stored setting under its old name too (add-then-remove: read both "
    "names, update every stored assistant to the new one, then drop the old name), or update the assistants' stored "
    "config/context before the deploy.",
}


@dataclass(frozen=True)
class StoredAssistant:
    """An assistant as the live server stores it."""

    assistant_id: str
    graph_id: str
    name: str
    config: Mapping[str, Any]
    context: Mapping[str, Any]
    metadata: Mapping[str, Any]
    owner: Identity
    """The first identity that lists it on the live server."""

    @property
    def label(self) -> str:
        named = f" ({self.name})" if self.name and self.name != self.assistant_id else ""
        return f"assistant {self.assistant_id}{named} of graph {self.graph_id}"

    @property
    def klass(self) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
        configurable = self.config.get("configurable") if isinstance(self.config, Mapping) else None
        keys = tuple(sorted(configurable)) if isinstance(configurable, Mapping) else ()
        return (self.graph_id, keys, tuple(sorted(self.context or {})))


def _client(url: str, headers: Mapping[str, str], deadline: Deadline | None) -> Any:
    from langgraph_sdk import get_client

    from migrations_playbook.sources.api.reads import short_keepalive

    return short_keepalive(get_client(url=url, headers=dict(headers) or None, api_key=None), deadline=deadline)


async def live_assistants(
    url: str, identities: Sequence[Identity], graph_ids: Sequence[str], *, deadline: Deadline | None = None
) -> tuple[list[StoredAssistant], list[str]]:
    """Every stored (non-system) assistant of ``graph_ids`` on the live server, as each identity lists them, and
    notes on what could not be listed."""
    from langgraph_sdk.errors import APIStatusError

    from migrations_playbook.sources.api.reads import assistant_pages

    found: dict[str, StoredAssistant] = {}
    notes: list[str] = []
    wanted = set(graph_ids)
    for identity in identities:
        client = _client(url, identity.headers, deadline)
        try:
            async for page in assistant_pages(client):
                for item in page:
                    metadata = item.get("metadata") or {}
                    if item.get("graph_id") not in wanted or metadata.get(SYSTEM_KEY) == SYSTEM_VALUE:
                        continue
                    assistant_id = str(item["assistant_id"])
                    found.setdefault(
                        assistant_id,
                        StoredAssistant(
                            assistant_id=assistant_id,
                            graph_id=str(item["graph_id"]),
                            name=str(item.get("name") or ""),
                            config=dict(item.get("config") or {}),
                            context=_mapping(item.get("context")),
                            metadata=dict(metadata),
                            owner=identity,
                        ),
                    )
        except APIStatusError as exc:
            notes.append(f"assistants: {identity.name} could not list the live assistants: {str(exc)[:200]}")
        finally:
            await client.aclose()
    return sorted(found.values(), key=lambda a: a.assistant_id), notes


def _mapping(value: Any) -> dict[str, Any]:
    return {str(k): v for k, v in value.items()} if isinstance(value, Mapping) else {}


def choose(assistants: Sequence[StoredAssistant], *, sample: int, every: bool) -> list[StoredAssistant]:
    """One assistant per class, plus a seeded sample of ``sample`` more (every one with ``every``)."""
    if every:
        return list(assistants)
    first: dict[Any, StoredAssistant] = {}
    for assistant in assistants:
        first.setdefault(assistant.klass, assistant)
    chosen = list(first.values())
    rest = [a for a in assistants if a not in chosen]
    chosen += random.Random(SEED).sample(rest, min(sample, len(rest)))
    return sorted(chosen, key=lambda a: a.assistant_id)


def inputs_by_graph(facts: Sequence[ThreadFacts], turn_inputs: Mapping[str, Any]) -> dict[str, tuple[Any, str]]:
    """Graph id -> (the input an assistant run gets, where it came from): ``--turn-input``, else the last input of
    a live thread of the graph (the first by thread id)."""
    found: dict[str, tuple[Any, str]] = {g: (v, "--turn-input") for g, v in turn_inputs.items()}
    for item in sorted(facts, key=lambda f: f.thread_id):
        if item.has_input and item.graph_id not in found:
            found[item.graph_id] = (item.last_input, f"the last input of thread {item.thread_id}")
    return found


@dataclass
class AssistantSide:
    """What one side did with the assistants: a trace per stored assistant's run, and one per graph's default."""

    label: str
    stored: dict[str, ThreadTrace] = field(default_factory=dict)
    default: dict[str, ThreadTrace] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


@dataclass
class AssistantsProof:
    """The three sides' assistant runs, and what was and was not driven."""

    a: AssistantSide
    a2: AssistantSide
    b: AssistantSide
    chosen: list[StoredAssistant]
    total: int
    inputs: dict[str, tuple[Any, str]]
    notes: list[str] = field(default_factory=list)
    runnable: int = 0
    """Stored assistants of a graph with an input known (the others are named in the notes, not run)."""


async def hold_assistant(client: Any, assistant: StoredAssistant) -> str | None:
    """Make sure the side holds ``assistant`` as the live server does: None when it does (or now does), else why
    it does not."""
    from langgraph_sdk.errors import APIStatusError, NotFoundError

    try:
        held = await client.assistants.get(assistant.assistant_id)
    except NotFoundError:
        held = None
    except APIStatusError as exc:
        return f"it cannot be read: {str(exc)[:200]}"
    if held is None:
        try:
            await client.assistants.create(
                assistant.graph_id,
                config=dict(assistant.config),
                context=dict(assistant.context),
                metadata=dict(assistant.metadata),
                assistant_id=assistant.assistant_id,
                if_exists="do_nothing",
                name=assistant.name or None,
            )
        except APIStatusError as exc:
            return f"it could not be created as the live server holds it: {str(exc)[:200]}"
        return None
    if dict(held.get("context") or {}) != dict(assistant.context) or dict(held.get("config") or {}) != dict(assistant.config):
        return "it holds another config or context than the live server (the server rewrote it at start)"
    return None


async def _fresh_run(
    url: str, headers: Mapping[str, str], graph_id: str, assistant_id: str, value: Any, key: str, deadline: Deadline | None
) -> ThreadTrace:
    """One run of ``assistant_id`` with input ``value`` on a new thread of the side at ``url``."""
    from langgraph_sdk.errors import APIStatusError

    from migrations_playbook.proof.shadow.api import _drive_thread

    client = _client(url, headers, deadline)
    try:
        made = await client.threads.create(graph_id=graph_id)
    except APIStatusError as exc:
        return ThreadTrace(thread_id=key, graph_id=graph_id, unreadable=f"a new thread could not be made: {str(exc)[:200]}")
    finally:
        await client.aclose()
    request = RunRequest(kind="turn", assistant_id=assistant_id, input=value, why=f"assistant {assistant_id}")
    facts = ThreadFacts(thread_id=key, graph_id=graph_id, status="idle", state={}, assistant_id=assistant_id)
    return await _drive_thread(
        url,
        headers,
        facts,
        leader=False,
        rule=ResumeRule(),
        turn_inputs={},
        given=[request],
        deadline=deadline,
        key=key,
        on=str(made["thread_id"]),
    )


async def drive_assistants_side(
    label: str,
    url: str,
    chosen: Sequence[StoredAssistant],
    inputs: Mapping[str, tuple[Any, str]],
    fallback: Identity,
    *,
    deadline: Deadline | None = None,
) -> AssistantSide:
    """Hold and run every chosen assistant (and each graph's default) on the side at ``url``."""
    side = AssistantSide(label=label)
    gate = asyncio.Semaphore(CONCURRENCY)

    async def stored(assistant: StoredAssistant) -> None:
        async with gate:
            client = _client(url, assistant.owner.headers, deadline)
            try:
                why = await hold_assistant(client, assistant)
            finally:
                await client.aclose()
            if why is not None:
                side.notes.append(f"{assistant.label}: {why}")
            value = inputs[assistant.graph_id][0]
            side.stored[assistant.assistant_id] = await _fresh_run(
                url, assistant.owner.headers, assistant.graph_id, assistant.assistant_id, value, assistant.assistant_id, deadline
            )

    async def default(graph_id: str, owner: Identity) -> None:
        async with gate:
            side.default[graph_id] = await _fresh_run(
                url, owner.headers, graph_id, graph_id, inputs[graph_id][0], f"{graph_id} (default)", deadline
            )

    owners: dict[str, Identity] = {}
    for assistant in chosen:
        owners.setdefault(assistant.graph_id, assistant.owner)
    await asyncio.gather(*(stored(a) for a in chosen), *(default(g, owners.get(g, fallback)) for g in sorted(owners)))
    return side


async def prove_assistants(
    live_url: str,
    identities: Sequence[Identity],
    graph_ids: Sequence[str],
    facts: Sequence[ThreadFacts],
    turn_inputs: Mapping[str, Any],
    urls: tuple[str, str | None, str],
    *,
    sample: int,
    every: bool,
    deadline: Deadline | None = None,
) -> AssistantsProof:
    """Read the live assistants, choose them by class, and run them on A, then on A2 and B (``urls``: A, B (None
    when the candidate's server is down), A2)."""
    assistants, notes = await live_assistants(live_url, identities, graph_ids, deadline=deadline)
    inputs = inputs_by_graph(facts, turn_inputs)
    runnable = [a for a in assistants if a.graph_id in inputs]
    for graph_id in sorted({a.graph_id for a in assistants if a.graph_id not in inputs}):
        count = sum(1 for a in assistants if a.graph_id == graph_id)
        notes.append(
            f"assistants: {count} stored assistant(s) of graph {graph_id} not driven: no input is known for the graph "
            f"(no live thread of it with an input was run; pass --turn-input {graph_id}=JSON)"
        )
    chosen = choose(runnable, sample=sample, every=every)
    url_a, url_b, url_a2 = urls
    fallback = identities[0]
    a = await drive_assistants_side("A (deployed code)", url_a, chosen, inputs, fallback, deadline=deadline)
    followers = [drive_assistants_side("A2 (deployed code again)", url_a2, chosen, inputs, fallback, deadline=deadline)]
    if url_b is not None:
        followers.append(drive_assistants_side("B (candidate)", url_b, chosen, inputs, fallback, deadline=deadline))
    done = await asyncio.gather(*followers)
    a2 = done[0]
    b = done[1] if url_b is not None else AssistantSide(label="B (candidate)", notes=["the candidate's server is down"])
    return AssistantsProof(
        a=a, a2=a2, b=b, chosen=chosen, total=len(assistants), inputs=inputs, notes=notes, runnable=len(runnable)
    )


# -- the rules ------------------------------------------------------------------------------


def _view(trace: ThreadTrace, noise: set[str]) -> dict[str, Any]:
    """What a run showed, with what varies between runs masked (what the setting's effect is judged on)."""
    seen = {p: v for p, v in observed(trace).items() if general(p) not in noise}
    seen["<failed>"] = [bool(r.failed) for r in trace.runs]
    return seen


def _ran(trace: ThreadTrace | None) -> bool:
    return trace is not None and not trace.unreadable and bool(trace.runs) and not any(r.failed for r in trace.runs)


def judge_assistants(proof: AssistantsProof) -> tuple[list[Finding], list[str]]:
    """The assistants' findings (one per code and graph, naming the assistants) and notes."""
    findings: dict[tuple[str, str], Finding] = {}

    def add(code: str, assistant: StoredAssistant, detail: str, node: str | None = None, path: str | None = None) -> None:
        key = (code, assistant.graph_id)
        if key not in findings:
            findings[key] = Finding(
                code=code,
                severity="block",
                graph_id=assistant.graph_id,
                node=node,
                field=path,
                message=f"{assistant.label}, run on a fresh thread: {detail}",
                why=WHY[code],
                help=HELP[code],
            )
        findings[key].add_assistant(assistant.assistant_id)

    notes = list(proof.notes)
    driven, refused = 0, []
    for assistant in proof.chosen:
        aid, gid = assistant.assistant_id, assistant.graph_id
        ta, ta2, tb = proof.a.stored.get(aid), proof.a2.stored.get(aid), proof.b.stored.get(aid)
        da, da2, db = proof.a.default.get(gid), proof.a2.default.get(gid), proof.b.default.get(gid)
        if not _ran(ta) or ta is None:
            why = (ta.unreadable or next((r.failed for r in ta.runs if r.failed), None)) if ta is not None else None
            refused.append(f"{aid} ({(why or 'not run')[:120]})")
            continue
        driven += 1
        if tb is None:
            continue
        noise: set[str] = set()
        if ta2 is not None:
            noise |= noise_paths(ta, ta2)
        if da is not None and da2 is not None:
            noise |= noise_paths(da, da2)
        unstable = {d.key for d in compare_thread(ta, ta2, noise)} if ta2 is not None else set()
        broken = [d for d in compare_thread(ta, tb, noise) if d.code in BLOCKING and d.key not in unstable]
        for diff in broken[:1]:
            add("SHADOW_ASSISTANT_BROKEN", assistant, f"{diff.code}: {diff.detail}", diff.node, diff.field)
        if broken or not (_ran(da) and _ran(da2) and _ran(db) and _ran(ta2) and _ran(tb)):
            continue
        assert da is not None and da2 is not None and db is not None and ta2 is not None
        effect_a = _view(ta, noise) != _view(da, noise)
        effect_a2 = _view(ta2, noise) != _view(da2, noise)
        effect_b = _view(tb, noise) != _view(db, noise)
        same_as_deployed = _view(tb, noise) == _view(ta, noise)
        if effect_a and effect_a2 and not effect_b and not same_as_deployed:
            settings = sorted({*(assistant.klass[1]), *(assistant.klass[2])})
            add(
                "SHADOW_ASSISTANT_SETTING_IGNORED",
                assistant,
                "its stored settings (" + ", ".join(settings) + ") change the run on the deployed code; on the "
                "candidate the run is the same as under the graph's default assistant",
            )
    classes = len({a.klass for a in proof.chosen})
    if not proof.total:
        return [], [*notes, "assistants: the live deployment stores none beside the graphs' own"]
    notes.append(
        f"assistants: {proof.total} stored assistant(s) on the live deployment; {driven} run on both codes on fresh "
        f"threads ({classes} class(es): graph, configurable keys, context keys), each beside its graph's default "
        "assistant; " + "; ".join(f"{g}: input from {src}" for g, (_, src) in sorted(proof.inputs.items()))
    )
    if refused:
        notes.append(
            f"assistants: {len(refused)} the deployed code itself does not run, so not held against the candidate: "
            + ", ".join(refused[:5])
        )
    skipped = proof.runnable - len(proof.chosen)
    if skipped > 0:
        notes.append(f"assistants: {skipped} not run (their classes are represented; --all runs every one)")
    for side in (proof.a, proof.a2, proof.b):
        notes += [f"{side.label}: {n}" for n in side.notes]
    return list(findings.values()), notes
