"""The long-term store read as the graphs' runs read it, on each side, after the runs (`playbook shadow`).

`store_items.judge_store` compares what the store holds; a run also *searches* it (``store.search(namespace,
query=...)``), ranked by the store's index as langgraph.json configures it (``store.index``: the embedding
function, its dims, the fields embedded; ``store.ttl``). A candidate whose configuration drops or changes the
index keeps every item and answers every search otherwise: unranked, another order, or an error. So after the
runs, each side answers the same searches (`store_searches`): for every namespace the deployed code's copy
holds (up to `MAX_NAMESPACES`), a query made of each of its first items' text (up to `QUERIES_PER_NAMESPACE`),
as each identity that lists the namespace. Hits are compared by content, not key (keys a run generates differ
between sides), among the items both sides hold, with what two copies of the deployed code answer otherwise
masked.

* ``SHADOW_STORE_UNSEARCHABLE`` (block): a search the deployed code answers ranked answers unranked on the
  candidate, fails there, or ranks the items both sides hold in another order.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from migrations_playbook.model import Finding
from migrations_playbook.proof.shadow.compare import flatten
from migrations_playbook.proof.shadow.config import Identity
from migrations_playbook.sources.budget import Deadline

MAX_NAMESPACES = 20
QUERIES_PER_NAMESPACE = 2
HITS = 5
LIST_PAGE = 200
QUERY_CHARS = 200

WHY = (
    "the candidate's store configuration (langgraph.json `store.index`: embedding, dims, fields; `store.ttl`) answers "
    "the searches the graphs' runs make otherwise: stored memories are no longer found, or found in another order"
)
HELP = (
    "Keep `store.index` as the stored items were indexed with (the same embedding and dims), or re-index the items "
    "(put each again under the new configuration) before the deploy; reproduce with `playbook shadow ... --all`."
)


@dataclass(frozen=True)
class Search:
    identity: str
    namespace: tuple[str, ...]
    query: str


@dataclass(frozen=True)
class Answer:
    """A search's answer: the hits' contents in order, whether they were ranked (scored), or the error."""

    hits: tuple[str, ...] = ()
    ranked: bool = False
    error: str | None = None


@dataclass
class StoreReads:
    label: str
    answers: dict[Search, Answer] = field(default_factory=dict)


def _content(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _text(value: Any) -> str:
    """A query made of an item's text: its string leaves, in order."""
    return " ".join(str(v) for v in flatten(value).values() if isinstance(v, str))[:QUERY_CHARS]


def _client(url: str, headers: Mapping[str, str], deadline: Deadline | None) -> Any:
    from langgraph_sdk import get_client

    from migrations_playbook.sources.api.reads import short_keepalive

    return short_keepalive(get_client(url=url, headers=dict(headers) or None, api_key=None), deadline=deadline)


async def plan_searches(url: str, identities: Sequence[Identity], *, deadline: Deadline | None = None) -> list[Search]:
    """The searches to make (decided on the deployed code's copy, side A): per identity, per namespace it lists."""
    from langgraph_sdk.errors import APIStatusError

    searches: list[Search] = []
    for identity in identities:
        client = _client(url, identity.headers, deadline)
        try:
            page = await client.store.search_items((), limit=LIST_PAGE)
        except APIStatusError:
            continue
        finally:
            await client.aclose()
        by_namespace: dict[tuple[str, ...], list[str]] = {}
        for item in page.get("items") or [] if isinstance(page, Mapping) else []:
            text = _text(item.get("value"))
            if text:
                by_namespace.setdefault(tuple(item.get("namespace") or ()), []).append(text)
        for namespace in sorted(by_namespace)[:MAX_NAMESPACES]:
            for query in by_namespace[namespace][:QUERIES_PER_NAMESPACE]:
                searches.append(Search(identity.name, namespace, query))
    return searches


async def store_searches(
    label: str, url: str, searches: Sequence[Search], identities: Sequence[Identity], *, deadline: Deadline | None = None
) -> StoreReads:
    """``searches`` answered by the side at ``url``."""
    import httpx
    from langgraph_sdk.errors import APIStatusError

    reads = StoreReads(label=label)
    headers = {i.name: i.headers for i in identities}
    for search in searches:
        client = _client(url, headers.get(search.identity, {}), deadline)
        try:
            found = await client.store.search_items(search.namespace, query=search.query, limit=HITS)
            items = [i for i in (found.get("items") or []) if isinstance(i, Mapping)]
            reads.answers[search] = Answer(
                hits=tuple(_content(i.get("value")) for i in items), ranked=any(i.get("score") is not None for i in items)
            )
        except (APIStatusError, httpx.TransportError) as exc:
            reads.answers[search] = Answer(error=f"{type(exc).__name__}: {str(exc)[:200]}")
        finally:
            await client.aclose()
    return reads


def _worse(a: Answer, b: Answer, common: set[str]) -> str | None:
    """How ``b`` answers a search worse than ``a``, if it does."""
    if a.error is not None:
        return None
    if b.error is not None:
        return f"the search fails: {b.error}"
    if a.ranked and not b.ranked:
        return "the search comes back unranked (no index ranks the items)"
    order_a = [h for h in a.hits if h in common]
    order_b = [h for h in b.hits if h in common]
    if order_a != order_b:
        return "the items both copies hold come back in another order (or not at all)"
    return None


def judge_searches(
    a: StoreReads, a2: StoreReads, b: StoreReads, a_items: Mapping[str, Any] | None, b_items: Mapping[str, Any] | None
) -> tuple[list[Finding], list[str]]:
    """The store searches' finding (one, naming the namespaces) and notes."""
    if not a.answers:
        return [], ["store searches: none made (the deployed code's copy holds no store item with text)"]
    common = {_content(v) for v in (a_items or {}).values()} & {_content(v) for v in (b_items or {}).values()}
    bad: list[str] = []
    for search, answer in a.answers.items():
        why = _worse(answer, b.answers.get(search, Answer(error="not asked")), common)
        if why is not None and _worse(answer, a2.answers.get(search, Answer(error="not asked")), common) is None:
            bad.append(f"{'/'.join(search.namespace)} (as {search.identity}, query {search.query[:40]!r}): {why}")
    notes = [
        f"store searches: {len(a.answers)} search(es) the graphs' runs may make (a query per stored item's text, "
        "per namespace) answered on each copy after the runs"
    ]
    if not bad:
        return [], notes
    finding = Finding(
        code="SHADOW_STORE_UNSEARCHABLE",
        severity="block",
        graph_id="(store)",
        field=bad[0].split(" ", 1)[0],
        message=f"{len(bad)} store search(es) answered otherwise on the candidate: " + "; ".join(bad[:3]),
        why=WHY,
        help=HELP,
    )
    return [finding], notes
